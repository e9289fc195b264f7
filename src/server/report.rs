//! What the server tells about itself beyond `stats()`: the Prometheus text of `/metrics`, the
//! in-flight requests of `/debug/requests`, and the `--timeout` watcher's log lines, each with
//! the Python stack of the thread that runs the stuck call.

use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::prelude::*;

use super::drive::Shared;
use crate::io::error_answer::{error_answer, GATEWAY_TIMEOUT};
use crate::wsgi::deadline::Deadlines;

/// The `--timeout` watcher's thread: answers calls past the deadline (`wsgi::deadline`), then
/// logs each once with the Python stack of the thread running it.
pub(super) fn watch_deadlines(shared: &Shared, deadlines: &Deadlines) {
    let bridge = &shared.bridge;
    deadlines.watch(
        || error_answer(GATEWAY_TIMEOUT, bridge.server_header),
        |expired| {
            Python::attach(|py| {
                for e in expired {
                    let what = if e.answered {
                        "answered 504 Gateway Timeout"
                    } else {
                        "the response had begun: connection closed"
                    };
                    bridge.log_error(
                        py,
                        &format!(
                            "{} still in the app after {:.1}s (--timeout): {what}; the call keeps \
                             its thread until it returns. Where it is:\n{}",
                            e.label,
                            e.age.as_secs_f64(),
                            python_stack(py, e.thread)
                        ),
                    );
                }
            })
        },
    );
}

/// `GET /metrics`: the same counters `stats()` reads, in Prometheus's text format. With worker
/// processes each worker has its own listener and says which it is (`worker` label).
pub(super) fn render_metrics(s: &Shared) -> String {
    use crate::metrics::{counter, gauge};
    let cfg = &s.bridge.config;
    let labels = if cfg.balance_fd >= 0 {
        format!("worker=\"{}\",", cfg.balance_slot)
    } else {
        String::new()
    };
    let bare = labels.trim_end_matches(',');
    let c = s.bridge.counters();
    let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let mut out = String::with_capacity(8192);
    c.by_request.render(&mut out, &labels);
    render_tls(&mut out, c, &labels);
    counter(
        &mut out,
        "sluicegate_connections_accepted_total",
        "Connections accepted.",
        bare,
        l(&c.accepted),
    );
    counter(
        &mut out,
        "sluicegate_accept_refused_total",
        "Accept attempts refused for lack of file descriptors.",
        bare,
        l(&c.fd_exhausted),
    );
    counter(
        &mut out,
        "sluicegate_protocol_errors_total",
        "Requests refused by the HTTP parser (400, 413, 414, 431, 501, 505).",
        bare,
        l(&c.protocol_errors),
    );
    counter(
        &mut out,
        "sluicegate_timeouts_total",
        "Connections timed out by the loop (408, idle, write).",
        bare,
        l(&c.timeouts),
    );
    counter(
        &mut out,
        "sluicegate_forwarded_malformed_total",
        "Forwarding headers from trusted peers ignored as malformed.",
        bare,
        l(&c.forwarded_malformed),
    );
    counter(
        &mut out,
        "sluicegate_proxy_refused_total",
        "Connections closed for a bad or untrusted PROXY header.",
        bare,
        l(&c.proxy_refused),
    );
    counter(
        &mut out,
        "sluicegate_shutdown_cut_total",
        "Requests cut by a stop.",
        bare,
        l(&c.cut),
    );
    let (expired, stuck, in_flight) = match &s.bridge.deadlines {
        Some(d) => (
            d.expired_total(),
            d.stuck() as u64,
            d.in_flight().len() as u64,
        ),
        None => (0, 0, 0),
    };
    counter(
        &mut out,
        "sluicegate_app_timeouts_total",
        "App calls that passed --timeout.",
        bare,
        expired,
    );
    gauge(
        &mut out,
        "sluicegate_stuck_calls",
        "App calls past --timeout still running.",
        bare,
        stuck,
    );
    gauge(
        &mut out,
        "sluicegate_app_calls_in_flight",
        "App calls running now.",
        bare,
        in_flight,
    );
    counter(
        &mut out,
        "sluicegate_inline_calls_total",
        "App calls run inline on the loop's thread.",
        bare,
        s.sched.inline_calls.load(Ordering::Relaxed),
    );
    counter(
        &mut out,
        "sluicegate_pool_calls_total",
        "App calls run on a pool thread.",
        bare,
        s.sched.dispatched_calls.load(Ordering::Relaxed),
    );
    counter(
        &mut out,
        "sluicegate_takeovers_total",
        "Loop hand-overs by the watchdog (mode switches).",
        bare,
        s.sched.takeovers.load(Ordering::Relaxed),
    );
    if let Some(p) = s.pool.lock().unwrap().as_ref() {
        gauge(
            &mut out,
            "sluicegate_pool_threads",
            "App threads alive.",
            bare,
            p.threads() as u64,
        );
        gauge(
            &mut out,
            "sluicegate_pool_busy_threads",
            "App threads running a call.",
            bare,
            p.busy() as u64,
        );
        let (_, _, queued, _) = p.admission();
        gauge(
            &mut out,
            "sluicegate_admission_queue",
            "Calls waiting for admission.",
            bare,
            queued as u64,
        );
    }
    if let Some(log) = &s.ctx().settings.access_log {
        counter(
            &mut out,
            "sluicegate_access_log_dropped_total",
            "Access log lines dropped (the writer fell behind).",
            bare,
            log.dropped.load(Ordering::Relaxed),
        );
    }
    out
}

/// `GET /debug/requests`: every app call in flight, oldest first, with its age and the Python
/// stack of the thread running it.
pub(super) fn render_in_flight(s: &Shared) -> String {
    let Some(d) = &s.bridge.deadlines else {
        return String::new();
    };
    let mut calls = d.in_flight();
    calls.sort_by_key(|c| std::cmp::Reverse(c.2));
    Python::attach(|py| {
        let mut out = format!("{} app call(s) in flight\n", calls.len());
        for (label, thread, age, stuck) in calls {
            out.push_str(&format!(
                "\n{label}  age {:.3}s{}  thread {thread}\n{}",
                age.as_secs_f64(),
                if stuck { "  (past --timeout)" } else { "" },
                python_stack(py, thread)
            ));
        }
        out
    })
}

/// The Python stack of the thread `ident` (`threading.get_ident()`), formatted as a traceback.
pub(super) fn python_stack(py: Python<'_>, ident: u64) -> String {
    let stack = || -> PyResult<String> {
        let frames = py.import("sys")?.call_method0("_current_frames")?;
        let frame = frames.get_item(ident)?;
        let lines = py
            .import("traceback")?
            .call_method1("format_stack", (frame,))?;
        let joined: String = pyo3::types::PyString::new(py, "")
            .call_method1("join", (lines,))?
            .extract()?;
        Ok(joined)
    };
    stack()
        .unwrap_or_else(|_| "  (no Python frame: the thread is outside the interpreter)\n".into())
}

/// The TLS series (only with TLS listeners): seconds until the earliest certificate served
/// expires (negative once it has), and failed TLS connections by reason.
fn render_tls(out: &mut String, c: &crate::io::event_loop::Counters, labels: &str) {
    use std::fmt::Write as _;
    let not_after = c.tls_not_after.load(Ordering::Relaxed);
    if not_after == 0 {
        return;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let bare = labels.trim_end_matches(',');
    let _ = write!(
        out,
        "# HELP sluicegate_tls_certificate_expiry_seconds Seconds until the earliest TLS \
         certificate served expires (negative: expired).\n\
         # TYPE sluicegate_tls_certificate_expiry_seconds gauge\n\
         sluicegate_tls_certificate_expiry_seconds{{{bare}}} {}\n\
         # HELP sluicegate_tls_failures_total TLS connections that failed (handshake or \
         record), by reason.\n# TYPE sluicegate_tls_failures_total counter\n",
        not_after - now
    );
    for (reason, n) in crate::io::tls::session::FAILURE_REASONS
        .iter()
        .zip(&c.tls_failures)
    {
        let _ = writeln!(
            out,
            "sluicegate_tls_failures_total{{{labels}reason=\"{reason}\"}} {}",
            n.load(Ordering::Relaxed)
        );
    }
}
