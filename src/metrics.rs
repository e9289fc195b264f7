//! Metrics: the per-request counters and histograms every finished request updates
//! ([`RequestMetrics::record`], always on: a few relaxed atomic adds), and the
//! `--metrics-bind` listener, a thread of its own that answers `GET /metrics` in Prometheus's
//! text format (0.0.4) and `GET /debug/requests` (every app call in flight, its age and the
//! Python stack of its thread). It is never the app's port, and it never touches the event
//! loop: a scrape costs the loop nothing.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::access_log::{End, Timings};

/// Histogram bucket bounds, in microseconds (1 ms … 10 s, then +Inf).
pub const BUCKETS_US: [u64; 13] = [
    1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000,
    5_000_000, 10_000_000,
];

/// A Prometheus histogram of durations: cumulative buckets are computed when rendered.
#[derive(Default)]
pub struct Histogram {
    buckets: [AtomicU64; BUCKETS_US.len()],
    count: AtomicU64,
    sum_us: AtomicU64,
}

impl Histogram {
    pub fn observe(&self, d: Duration) {
        let us = d.as_micros().min(u128::from(u64::MAX)) as u64;
        if let Some(i) = BUCKETS_US.iter().position(|&b| us <= b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_us.fetch_add(us, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, help: &str, labels: &str) {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} histogram\n"));
        let mut cumulative = 0;
        for (i, b) in BUCKETS_US.iter().enumerate() {
            cumulative += self.buckets[i].load(Ordering::Relaxed);
            out.push_str(&format!(
                "{name}_bucket{{{labels}le=\"{}\"}} {cumulative}\n",
                *b as f64 / 1e6
            ));
        }
        let count = self.count.load(Ordering::Relaxed);
        out.push_str(&format!("{name}_bucket{{{labels}le=\"+Inf\"}} {count}\n"));
        let sum = self.sum_us.load(Ordering::Relaxed) as f64 / 1e6;
        let bare = labels.trim_end_matches(',');
        out.push_str(&format!(
            "{name}_sum{{{bare}}} {sum}\n{name}_count{{{bare}}} {count}\n"
        ));
    }
}

// The clocks moved to `crate::clock`; kept here for this module's own users.
pub use crate::clock::{now_ns, since};

/// Bytes read from clients (heads and bodies), by the loop and by `wsgi.input`. One per
/// process (as the release bell): a process runs one server.
pub static BYTES_IN: AtomicU64 = AtomicU64::new(0);

/// The statuses the event loop answers itself (static files, the health path) are counted
/// by these; the last slot: others.
pub const LOOP_STATUSES: [u16; 5] = [200, 206, 304, 404, 503];

/// The statuses a refused request can get, for `protocol_refusals` (the last slot: others).
pub const REFUSAL_STATUSES: [u16; 7] = [400, 408, 413, 414, 431, 501, 505];

/// What every finished request (app or loop answered) adds to.
#[derive(Default)]
pub struct RequestMetrics {
    /// By status class: 1xx … 5xx.
    pub by_class: [AtomicU64; 5],
    pub bytes_out: AtomicU64,
    /// By how it ended: ok, client gone, timeout, error.
    pub ends: [AtomicU64; 4],
    pub total: Histogram,
    pub app: Histogram,
    pub send: Histogram,
    /// Requests the loop refused itself, by status (`REFUSAL_STATUSES`, then others).
    pub refusals: [AtomicU64; REFUSAL_STATUSES.len() + 1],
    /// Connections open now.
    pub open_connections: AtomicU64,
    /// Of those, waiting between requests (counted at each sweep of the loop, ≤ 1 s old).
    pub idle_connections: AtomicU64,
    /// Answers the event loop gave itself, by status (`LOOP_STATUSES`, then others).
    pub loop_answers: [AtomicU64; LOOP_STATUSES.len() + 1],
}

impl RequestMetrics {
    /// An answer the loop gave itself (a static file, the health path).
    pub fn loop_answer(&self, status: u16) {
        let i = LOOP_STATUSES
            .iter()
            .position(|&s| s == status)
            .unwrap_or(LOOP_STATUSES.len());
        self.loop_answers[i].fetch_add(1, Ordering::Relaxed);
    }

    /// A request refused by the loop with `status` (a protocol error, a 408).
    pub fn refused(&self, status: u16) {
        let i = REFUSAL_STATUSES
            .iter()
            .position(|&s| s == status)
            .unwrap_or(REFUSAL_STATUSES.len());
        self.refusals[i].fetch_add(1, Ordering::Relaxed);
    }

    pub fn record(&self, status: u16, body_bytes: u64, t: &Timings, end: End, app: bool) {
        let class = usize::from(status / 100).clamp(1, 5) - 1;
        self.by_class[class].fetch_add(1, Ordering::Relaxed);
        self.bytes_out.fetch_add(body_bytes, Ordering::Relaxed);
        let e = match end {
            End::Ok => 0,
            End::ClientGone => 1,
            End::Timeout => 2,
            End::Error => 3,
        };
        self.ends[e].fetch_add(1, Ordering::Relaxed);
        self.total.observe(t.total);
        if app {
            self.app.observe(t.app);
        }
        self.send.observe(t.send);
    }

    /// The request series, with `labels` (e.g. `worker="0",`) on each.
    pub fn render(&self, out: &mut String, labels: &str) {
        let bare = labels.trim_end_matches(',');
        let sep = if bare.is_empty() { "" } else { "," };
        out.push_str(
            "# HELP sluicegate_requests_total Requests answered, by status class.\n\
             # TYPE sluicegate_requests_total counter\n",
        );
        for (i, c) in self.by_class.iter().enumerate() {
            out.push_str(&format!(
                "sluicegate_requests_total{{{bare}{sep}class=\"{}xx\"}} {}\n",
                i + 1,
                c.load(Ordering::Relaxed)
            ));
        }
        out.push_str(
            "# HELP sluicegate_request_ends_total Requests by how they ended.\n\
             # TYPE sluicegate_request_ends_total counter\n",
        );
        for (i, name) in ["ok", "client_gone", "timeout", "error"].iter().enumerate() {
            out.push_str(&format!(
                "sluicegate_request_ends_total{{{bare}{sep}end=\"{name}\"}} {}\n",
                self.ends[i].load(Ordering::Relaxed)
            ));
        }
        out.push_str(
            "# HELP sluicegate_refused_requests_total Requests the server refused itself, by \
             status (malformed or smuggling-prone heads 400, too slow 408, limits 413/414/431).\n\
             # TYPE sluicegate_refused_requests_total counter\n",
        );
        for (i, c) in self.refusals.iter().enumerate() {
            let status = REFUSAL_STATUSES
                .get(i)
                .map_or("other".to_string(), |s| s.to_string());
            out.push_str(&format!(
                "sluicegate_refused_requests_total{{{bare}{sep}status=\"{status}\"}} {}\n",
                c.load(Ordering::Relaxed)
            ));
        }
        out.push_str(
            "# HELP sluicegate_loop_answers_total Answers the event loop gave without the app \
             (static files, the health path), by status.\n\
             # TYPE sluicegate_loop_answers_total counter\n",
        );
        for (i, c) in self.loop_answers.iter().enumerate() {
            let status = LOOP_STATUSES
                .get(i)
                .map_or("other".to_string(), |s| s.to_string());
            out.push_str(&format!(
                "sluicegate_loop_answers_total{{{bare}{sep}status=\"{status}\"}} {}\n",
                c.load(Ordering::Relaxed)
            ));
        }
        counter(
            out,
            "sluicegate_request_bytes_total",
            "Bytes read from clients (heads and bodies).",
            bare,
            BYTES_IN.load(Ordering::Relaxed),
        );
        gauge(
            out,
            "sluicegate_connections_open",
            "Client connections open now.",
            bare,
            self.open_connections.load(Ordering::Relaxed),
        );
        gauge(
            out,
            "sluicegate_connections_idle",
            "Client connections waiting between requests (as of the loop's last sweep).",
            bare,
            self.idle_connections.load(Ordering::Relaxed),
        );
        counter(
            out,
            "sluicegate_response_body_bytes_total",
            "Response body bytes sent.",
            bare,
            self.bytes_out.load(Ordering::Relaxed),
        );
        self.total.render(
            out,
            "sluicegate_request_duration_seconds",
            "Parsed to last byte taken by the kernel.",
            labels,
        );
        self.app.render(
            out,
            "sluicegate_app_duration_seconds",
            "App called to its iterable closed.",
            labels,
        );
        self.send.render(
            out,
            "sluicegate_send_duration_seconds",
            "First byte ready to last byte taken by the kernel.",
            labels,
        );
    }
}

/// One counter or gauge line with its HELP and TYPE.
pub fn series(out: &mut String, kind: &str, name: &str, help: &str, labels: &str, v: u64) {
    out.push_str(&format!(
        "# HELP {name} {help}\n# TYPE {name} {kind}\n{name}{{{labels}}} {v}\n"
    ));
}

pub fn counter(out: &mut String, name: &str, help: &str, labels: &str, v: u64) {
    series(out, "counter", name, help, labels, v);
}

pub fn gauge(out: &mut String, name: &str, help: &str, labels: &str, v: u64) {
    series(out, "gauge", name, help, labels, v);
}

/// A bound metrics listener (TCP or unix).
pub enum MetricsListener {
    Tcp(std::net::TcpListener),
    Unix(std::os::unix::net::UnixListener, std::path::PathBuf),
}

impl MetricsListener {
    /// `HOST:PORT` or `unix:PATH`.
    pub fn bind(addr: &str) -> std::io::Result<MetricsListener> {
        let l = match addr.strip_prefix("unix:") {
            Some(path) => {
                let _ = std::fs::remove_file(path);
                MetricsListener::Unix(
                    std::os::unix::net::UnixListener::bind(path)?,
                    std::path::PathBuf::from(path),
                )
            }
            None => MetricsListener::Tcp(std::net::TcpListener::bind(addr)?),
        };
        match &l {
            MetricsListener::Tcp(t) => t.set_nonblocking(true)?,
            MetricsListener::Unix(u, _) => u.set_nonblocking(true)?,
        }
        Ok(l)
    }
}

impl Drop for MetricsListener {
    fn drop(&mut self) {
        if let MetricsListener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The listener's thread: one request per connection, `render(path)` gives the body (None:
/// 404). Polls `stop` every 200 ms.
pub fn serve(
    listener: MetricsListener,
    stop: Arc<AtomicBool>,
    render: impl Fn(&str) -> Option<(&'static str, String)>,
) {
    while !stop.load(Ordering::Relaxed) {
        let conn: Option<Box<dyn ReadWrite>> = match &listener {
            MetricsListener::Tcp(t) => t.accept().ok().map(|(s, _)| Box::new(s) as _),
            MetricsListener::Unix(u, _) => u.accept().ok().map(|(s, _)| Box::new(s) as _),
        };
        let Some(mut conn) = conn else {
            std::thread::sleep(Duration::from_millis(200));
            continue;
        };
        let _ = conn.set_blocking_with_timeout(Duration::from_secs(2));
        let mut buf = [0u8; 4096];
        let mut got = 0;
        while got < buf.len() && !buf[..got].windows(4).any(|w| w == b"\r\n\r\n") {
            match conn.read(&mut buf[got..]) {
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
        }
        let line = buf[..got].split(|&b| b == b'\r').next().unwrap_or(b"");
        let mut parts = line.split(|&b| b == b' ');
        let (method, target) = (parts.next().unwrap_or(b""), parts.next().unwrap_or(b""));
        let path = std::str::from_utf8(target)
            .unwrap_or("")
            .split('?')
            .next()
            .unwrap_or("");
        let (status, ctype, body) = if method != b"GET" {
            (
                "405 Method Not Allowed",
                "text/plain",
                "GET only\n".to_string(),
            )
        } else {
            match render(path) {
                Some((ctype, body)) => ("200 OK", ctype, body),
                None => (
                    "404 Not Found",
                    "text/plain",
                    "/metrics or /debug/requests\n".into(),
                ),
            }
        };
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let _ = conn.write_all(head.as_bytes());
        let _ = conn.write_all(body.as_bytes());
    }
}

/// A stream the metrics thread can read and write with a timeout.
trait ReadWrite: Read + Write {
    fn set_blocking_with_timeout(&mut self, t: Duration) -> std::io::Result<()>;
}

impl ReadWrite for std::net::TcpStream {
    fn set_blocking_with_timeout(&mut self, t: Duration) -> std::io::Result<()> {
        self.set_nonblocking(false)?;
        self.set_read_timeout(Some(t))?;
        self.set_write_timeout(Some(t))
    }
}

impl ReadWrite for std::os::unix::net::UnixStream {
    fn set_blocking_with_timeout(&mut self, t: Duration) -> std::io::Result<()> {
        self.set_nonblocking(false)?;
        self.set_read_timeout(Some(t))?;
        self.set_write_timeout(Some(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_renders_cumulative_buckets() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(500));
        h.observe(Duration::from_millis(30));
        h.observe(Duration::from_secs(60));
        let mut out = String::new();
        h.render(&mut out, "x_seconds", "help", "w=\"1\",");
        assert!(out.contains("x_seconds_bucket{w=\"1\",le=\"0.001\"} 1\n"));
        assert!(out.contains("x_seconds_bucket{w=\"1\",le=\"0.05\"} 2\n"));
        assert!(out.contains("x_seconds_bucket{w=\"1\",le=\"10\"} 2\n"));
        assert!(out.contains("x_seconds_bucket{w=\"1\",le=\"+Inf\"} 3\n"));
        assert!(out.contains("x_seconds_count{w=\"1\"} 3\n"));
    }
}
