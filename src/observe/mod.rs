//! Observability in one room: what the server counts, how long requests take, the access log,
//! and how all of it is shown (`Server.stats`, Prometheus's text, the metrics listener).
//!
//! The floor: above plain data (`config`, `http_date`, `clock`) and proto, below `io`. Nothing
//! here imports `io`, `wsgi`, `server` or `static_files`: what it needs from them comes in as
//! values (a client address, a [`table::Readings`]). Inside, no cycle: `timings`, `h3_counters` ← `counters`
//! ← `table` ← `prometheus`; `timings` ← `entry` ← `gunicorn_format`, `uwsgi_format` ← `log_line` ← `access_log`; `request_end` joins the
//! counters and the log for a finished request.
//!
//! - `timings`: how a request ended and where its time went (plain values).
//! - `counters`: the atomics every request and the loop add to; the duration histograms
//!   (`h3_counters`: HTTP/3's own, inside them).
//! - `table`: every number declared once, rendering `stats()`; `prometheus` renders the same
//!   table as text, with `process` (the `process_*` series) and the build info.
//! - `log_line`: one access log line in each format (`gunicorn_format`: gunicorn's
//!   `%(atom)s` templates; `uwsgi_format`: uWSGI's lines); `access_log`: the writer.
//! - `log_when`: which requests get a line (`--access-log-when`).
//! - `request_end`: a finished request counted and logged, once.
//! - `statsd`: gunicorn's statsd metrics of a request, written beside the access log's line.
//! - `metrics_http`: the `--metrics-bind` listener's answers (proto's parser and encoder).
//! - `allowance`: the CPU the process may use (cgroup quota, affinity) and its throttling.

pub mod access_log;
pub mod allowance;
pub mod counters;
pub mod entry;
pub mod gunicorn_format;
pub mod h3_counters;
pub mod log_line;
pub mod log_when;
pub mod metrics_http;
pub mod process;
pub mod prometheus;
pub mod request_end;
pub mod statsd;
pub mod table;
pub mod timings;
pub mod uwsgi_format;
