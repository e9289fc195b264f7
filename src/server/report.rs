//! What the server tells about itself: the readings the counter table renders as `stats()` and
//! as the Prometheus text of `/metrics` (`observe::table`), the in-flight requests of
//! `/debug/requests`, and the `--timeout` watcher's log lines, each with the Python stack of the
//! thread that runs the stuck call (and its raise in that call); and [`Pages`], the pages of
//! the `--metrics-bind` listener as the event loop is handed them.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use pyo3::prelude::*;

use super::drive::Shared;
use crate::io::error_answer::{error_answer, GATEWAY_TIMEOUT};
use crate::io::event_loop::{MetricsPages, PageJob};
use crate::observe::metrics_http::{redact_query, Page};
use crate::observe::table::{AdmissionReadings, Readings};
use crate::wsgi::deadline::{Deadlines, Expired, Step};
use crate::wsgi::interrupt::Raised;

/// The `--timeout` watcher's thread: answers calls past the deadline (`wsgi::deadline`), logs
/// each once with the Python stack of the thread running it, raises `sluicegate.RequestTimeout`
/// in that thread at the next look if the call is still there (`wsgi::interrupt`), and logs a
/// call still in the app a while after the raise, since it is where Python cannot raise.
pub(super) fn watch_deadlines(shared: &Shared, deadlines: &Deadlines) {
    let bridge = &shared.bridge;
    deadlines.watch(
        || error_answer(GATEWAY_TIMEOUT, bridge.server_header),
        |expired| {
            Python::attach(|py| {
                for e in expired {
                    if let Some(message) = deadline_message(py, &e) {
                        bridge.log_error(py, &message);
                    }
                }
            })
        },
    );
}

/// What the watcher says about one call at one look (None: nothing), raising in it first
/// when that is the step.
fn deadline_message(py: Python<'_>, e: &Expired) -> Option<String> {
    let label = &e.label;
    match e.step {
        Step::Passed { answered } => {
            let what = if answered {
                "answered 504 Gateway Timeout"
            } else {
                "the response had begun: connection closed"
            };
            Some(format!(
                "{label} still in the app after {:.1}s (--timeout): {what}; \
                 sluicegate.RequestTimeout is raised in it if it does not return. Where it is:\n{}",
                e.age.as_secs_f64(),
                python_stack(py, e.thread)
            ))
        }
        Step::Raise => match e.interrupt.raise_in(py, e.thread) {
            Raised::Now | Raised::TooLate => None,
            Raised::NoThread => Some(format!(
                "{label}: no Python thread runs it, so sluicegate.RequestTimeout cannot be \
                 raised in it (--timeout); it keeps its thread until it returns"
            )),
        },
        Step::Lingering { waited } => Some(format!(
            "{label}: not ended {:.1}s after sluicegate.RequestTimeout was raised in it \
             (--timeout): it is in C code (a system call, a C extension), where Python cannot \
             raise until that returns, or it caught the exception. It keeps its thread \
             meanwhile; with --workers, a worker with --max-stuck such calls is replaced. \
             Where it is:\n{}",
            waited.as_secs_f64(),
            python_stack(py, e.thread)
        )),
    }
}

/// What `stats()` and `GET /metrics` read (`observe::table`, which renders both): the loop's
/// counters, and copies of what the scheduler, the pool, the `--timeout` watcher and the access
/// log keep.
pub(super) fn readings(s: &Shared) -> Readings<'_> {
    let cfg = &s.bridge.config;
    let (app_timeouts, stuck_calls, app_calls_in_flight) = match &s.bridge.deadlines {
        Some(d) => (
            d.expired_total(),
            d.stuck() as u64,
            d.in_flight_count() as u64,
        ),
        None => (0, 0, 0),
    };
    let pool = s.try_pool();
    let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
    Readings {
        counters: s.bridge.counters(),
        app_timeouts,
        stuck_calls,
        app_calls_in_flight,
        inline_calls: l(&s.sched.inline_calls),
        dispatched_calls: l(&s.sched.dispatched_calls),
        takeovers: l(&s.sched.takeovers),
        handoffs: l(&s.sched.handoffs),
        preemptions: l(&s.sched.preemptions),
        mode: s.sched.mode_name(),
        threads: pool.as_ref().map_or(0, |p| p.threads() as u64),
        busy_threads: pool.as_ref().map_or(0, |p| p.busy() as u64),
        admission: pool.as_ref().map(|p| {
            let (limit, runnable, queued_now, a) = p.admission();
            AdmissionReadings {
                max_runnable: limit as u64,
                runnable_short: runnable[0] as u64,
                runnable_long: runnable[1] as u64,
                runnable_short_peak: a.runnable_peak[0] as u64,
                runnable_long_peak: a.runnable_peak[1] as u64,
                queue: queued_now as u64,
                waits: a.queued,
                demotions: a.demoted,
                lengthened: a.lengthened,
                admitted_blocking: a.admitted_blocking,
                fast_first: a.fast_first,
                blocking_room: a.blocking_room as u64,
                blocking_room_least: a.blocking_room_least as u64,
                start_gate_places: crate::wsgi::pool::start_gate_places() as u64,
            }
        }),
        access_log_dropped: s.ctx().settings.access_log.as_ref().map(|l| l.dropped()),
        static_cache: s
            .ctx()
            .settings
            .statics
            .as_ref()
            .map(|st| st.cache_readings()),
        // With worker processes each worker has its own listener and says which it is: its
        // slot counted from 1, as its metrics port's offset is.
        worker: (cfg.balance_fd >= 0).then_some(cfg.balance_slot as u32 + 1),
    }
}

/// `/debug/requests` pages rendered at once at most, each on a thread of its own that waits for
/// the GIL; a request for one more is answered 503 at once (a burst of them cannot pile up
/// threads, each holding a connection).
const DEBUG_PAGES_AT_ONCE: usize = 2;

/// The pages of the `--metrics-bind` listener: `/metrics` rendered on the loop's thread (plain
/// counters, no GIL), `/debug/requests` (with `--debug-requests` only) on a thread of its own,
/// since the Python stacks need the GIL and the loop never waits for it.
pub(super) struct Pages {
    /// Weak: the loop holds the pages, and the server's state must not be kept alive by them.
    shared: Weak<Shared>,
    debug_requests: bool,
    rendering: Arc<AtomicUsize>,
}

impl Pages {
    pub(super) fn new(shared: &Arc<Shared>, debug_requests: bool) -> Pages {
        Pages {
            shared: Arc::downgrade(shared),
            debug_requests,
            rendering: Arc::new(AtomicUsize::new(0)),
        }
    }
}

impl MetricsPages for Pages {
    fn here(&self, path: &[u8]) -> Option<Page> {
        if path != b"/metrics" {
            return None;
        }
        let s = self.shared.upgrade()?;
        Some((
            crate::observe::prometheus::CONTENT_TYPE,
            crate::observe::prometheus::render(&readings(&s)),
        ))
    }

    fn elsewhere(&self, path: &[u8]) -> bool {
        self.debug_requests && path == b"/debug/requests"
    }

    fn render_elsewhere(&self, job: Box<PageJob>) -> Result<(), Box<PageJob>> {
        let Some(shared) = self.shared.upgrade() else {
            return Err(job);
        };
        if self.rendering.fetch_add(1, Ordering::AcqRel) >= DEBUG_PAGES_AT_ONCE {
            self.rendering.fetch_sub(1, Ordering::AcqRel);
            return Err(job);
        }
        // Kept out here too, so that a thread that cannot be started gives the job back.
        let slot = Arc::new(Mutex::new(Some(job)));
        let (theirs, rendering) = (Arc::clone(&slot), Arc::clone(&self.rendering));
        let started = std::thread::Builder::new()
            .name("sg-debug".into())
            .spawn(move || {
                if let Some(job) = theirs.lock().unwrap().take() {
                    job.finish(|_| Some(("text/plain; charset=utf-8", render_in_flight(&shared))));
                }
                rendering.fetch_sub(1, Ordering::AcqRel);
            });
        if started.is_err() {
            self.rendering.fetch_sub(1, Ordering::AcqRel);
            if let Some(job) = slot.lock().unwrap().take() {
                return Err(job);
            }
        }
        Ok(())
    }
}

/// `GET /debug/requests`: every app call in flight, oldest first, with its age and the Python
/// stack of the thread running it. Query strings are shown as `?…`: whoever reaches the
/// metrics port is not told what clients sent in them (tokens, search terms).
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
                "\n{}  age {:.3}s{}  thread {thread}\n{}",
                redact_query(&label),
                age.as_secs_f64(),
                if stuck { "  (past --timeout)" } else { "" },
                python_stack(py, thread)
            ));
        }
        out
    })
}

/// The app calls in flight for the control socket (`Server.in_flight`), oldest first: method,
/// path without its query string (as `/debug/requests` hides it), age in seconds, the thread
/// running it (`threading.get_ident()`, for its Python stack) and whether it is past
/// `--timeout`. Read from the same registry as the `sluicegate_app_calls_in_flight` gauge.
pub(super) fn calls_in_flight(s: &Shared) -> Vec<(String, String, f64, u64, bool)> {
    let Some(d) = &s.bridge.deadlines else {
        return Vec::new();
    };
    let mut calls = d.in_flight();
    calls.sort_by_key(|c| std::cmp::Reverse(c.2));
    calls
        .into_iter()
        .map(|(label, thread, age, stuck)| {
            // The label is "METHOD TARGET VERSION" (wsgi/driver.rs, wsgi/streams).
            let mut parts = label.splitn(3, ' ');
            let method = parts.next().unwrap_or_default().to_string();
            let target = parts.next().unwrap_or_default();
            let path = target.split('?').next().unwrap_or_default().to_string();
            (method, path, age.as_secs_f64(), thread, stuck)
        })
        .collect()
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
