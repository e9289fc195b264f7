//! The server: wires the event loop, the scheduler, the pool and the WSGI bridge together, and
//! is the `sluicegate._core.Server` class the Python front drives (`run`, `shutdown`, `stats`).
//!
//! Threads: the caller of `run()` (the main thread) only waits for signals and for the end; one
//! thread drives the event loop at a time (it may change on a takeover, see `scheduler`); app
//! threads come and go in the pool; one watchdog thread looks after inline calls.
//!
//! This file is the pyclass and the order `Server::new` builds things in; `wiring.rs` makes the
//! listeners, their TLS and the event loop's settings of the front's arguments; `drive.rs` runs
//! calls of either protocol and the loop (inline or on the pool), `scheduler.rs` decides which
//! (`thread_state.rs`: is a thread asleep), `report.rs` gathers the readings of `stats()` and
//! `/metrics`, renders `/debug/requests` and logs the `--timeout` lines; `memory.rs` gives back
//! the pages the start read and will not read again, when `run()` begins.

pub mod allowance;
mod drive;
pub mod memory;
pub mod prctl;
mod report;
pub mod scheduler;
mod thread_state;
pub mod tls;
mod wiring;

use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::config::Config;
use crate::io::event_loop::{LoopCtx, LoopState, Shutdown};
use crate::io::metrics_socket::MetricsSocket;
use crate::io::wakeup;
use crate::observe::table::Stat;
use crate::wsgi::bridge::Bridge;
use crate::wsgi::environ::{EnvironBuilder, ListenerInfo};
use crate::wsgi::file_wrapper::FileWrapper;
use crate::wsgi::pool::{set_start_gate, Pool};
use drive::{drive_loop, hand_loop_over, run_job, LoopEnd, Shared, STOP_TAIL};
use report::{readings, watch_deadlines, Pages};
use scheduler::Scheduler;
use wiring::{listener_tls, loop_settings, python_line_sink, statsd_output, Listeners};

/// The least a stop gives the access log's writer for its last lines, even with nothing left of
/// the graceful timeout (an immediate stop): a file or a pipe that is read takes them in far
/// less; a reader that reads nothing costs the stop this long at most (`AccessLog::finish`).
const ACCESS_LOG_LAST_WRITE: std::time::Duration = std::time::Duration::from_millis(500);

/// `sluicegate._core.Server`.
#[pyclass(module = "sluicegate._core", name = "Server", frozen)]
pub struct Server {
    shared: Arc<Shared>,
    loop_state: Mutex<Option<Box<LoopState>>>,
    signal_fd: RawFd,
    /// The release bell (`wsgi::release`), an eventfd the main thread waits on.
    bell_fd: RawFd,
}

/// The state the loop's thread, the pool's threads and the Python object share: the WSGI
/// bridge (the app, its environ's constants, the frozen config, the loop's context), the
/// scheduler, and the eventfd that says the loop has finished.
fn shared_state(
    py: Python<'_>,
    app: Py<PyAny>,
    infos: &[ListenerInfo],
    errors: &Bound<'_, PyAny>,
    config: Arc<Config>,
    ctx: Arc<LoopCtx>,
) -> PyResult<Arc<Shared>> {
    let file_wrapper = py.get_type::<FileWrapper>().into_any();
    let environ = EnvironBuilder::new(
        py,
        infos,
        &config.root_path,
        &config.url_scheme,
        errors,
        &file_wrapper,
    )?;
    let policy = config.scheduler;
    let bridge = Bridge::new(py, app, environ, config, ctx)?;
    // Before any response lends a `bytes` block to an output queue.
    crate::wsgi::body_block::register_release();
    let done_fd = wakeup::eventfd(false);
    if done_fd < 0 {
        return Err(PyOSError::new_err("eventfd failed"));
    }
    Ok(Arc::new(Shared {
        bridge,
        sched: Scheduler::new(policy),
        pool: Mutex::new(None),
        done_fd,
        left_behind: Default::default(),
    }))
}

#[pymethods]
impl Server {
    #[new]
    fn new(
        py: Python<'_>,
        app: Py<PyAny>,
        listeners: &Bound<'_, PyAny>,
        config: &Bound<'_, PyDict>,
    ) -> PyResult<Server> {
        // wsgi.errors and the loaded TLS credentials are the Python objects in the config;
        // the rest are plain values.
        let errors = config.get_item("errors")?.ok_or_else(|| {
            pyo3::exceptions::PyKeyError::new_err("config key \"errors\" is missing")
        })?;
        let tls_given = config.get_item("tls")?;
        let access_sink = python_line_sink(config.get_item("access_log_sink")?);
        let statsd = statsd_output(config.get_item("statsd")?)?;
        let config = Arc::new(Config::from_dict(config)?);
        set_start_gate(config.start_gate);
        // --metrics-bind is bound here, while the server is built, so that a worker says it is
        // ready only once its metrics port listens (the event loop serves it: `observe`).
        let metrics = match config.metrics_bind.as_str() {
            "" => None,
            addr => Some(MetricsSocket::bind(addr).map_err(|e| {
                PyOSError::new_err(format!("--metrics-bind {addr}: cannot listen: {e}"))
            })?),
        };
        let Listeners {
            sockets,
            infos,
            wires,
            tls_flags,
        } = Listeners::of(listeners)?;
        let (tls, not_after) = listener_tls(&tls_flags, tls_given.as_ref(), &config)?;
        let (settings, balance) =
            loop_settings(&config, &sockets, wires, tls, access_sink, statsd)?;
        let (mut st, ctx) = LoopState::new(sockets, settings, balance)
            .map_err(|e| PyOSError::new_err(format!("cannot start the event loop: {e}")))?;
        if let Some(not_after) = not_after {
            ctx.counters
                .tls_not_after
                .store(not_after.max(1), Ordering::Relaxed);
        }
        let signal_fd = config.signal_fd;
        let shared = shared_state(py, app, &infos, &errors, config, ctx)?;
        let bell_fd = wakeup::eventfd(true);
        if bell_fd < 0 {
            return Err(PyOSError::new_err("eventfd failed"));
        }
        if let Some(socket) = metrics {
            let pages = Pages::new(&shared, shared.bridge.config.debug_requests);
            st.serve_metrics(socket, Arc::new(pages))
                .map_err(|e| PyOSError::new_err(format!("--metrics-bind: {e}")))?;
        }
        Ok(Server {
            shared,
            loop_state: Mutex::new(Some(st)),
            signal_fd,
            bell_fd,
        })
    }

    /// Serve until shutdown. Runs Python signal handlers when the signal pipe wakes us.
    fn run(&self, py: Python<'_>) -> PyResult<u64> {
        let st =
            self.loop_state.lock().unwrap().take().ok_or_else(|| {
                pyo3::exceptions::PyRuntimeError::new_err("run() was already called")
            })?;
        // The app is imported and the extension loaded: give back what the start left behind.
        memory::give_back_startup_memory();
        let shared = Arc::clone(&self.shared);
        let cfg = &shared.bridge.config;
        let pool = {
            let s = Arc::clone(&shared);
            Pool::new(
                cfg.threads_min,
                cfg.threads_max,
                cfg.max_runnable,
                Box::new(move |job| run_job(&s, job)),
            )
        };
        *shared.pool.lock().unwrap() = Some(Arc::clone(&pool));
        pool.prestart();
        let s = Arc::clone(&shared);
        let p = Arc::clone(&pool);
        let admission_watcher = std::thread::Builder::new()
            .name("sg-admit".into())
            .spawn(move || p.watch(|| s.sched.loop_cpu_time()))
            .map_err(|e| PyOSError::new_err(format!("cannot start the admission watcher: {e}")))?;

        // HTTP/2: the loop polls the connections' tasks; each stream's call runs inline on
        // the loop's thread while the scheduler is in inline mode, else on the pool
        // (`drive::Runner`).
        if let Some(hub) = &shared.ctx().settings.h2 {
            let runner = Arc::new(drive::Runner(Arc::downgrade(&shared)));
            hub.start(
                Arc::clone(&shared.bridge.loop_ctx) as Arc<dyn crate::io::streams::LoopView>,
                runner,
            )
            .map_err(|e| PyOSError::new_err(format!("cannot start HTTP/2: {e}")))?;
        }
        // HTTP/3: its endpoints and connections are tasks of the loop too; a stream's call
        // takes the same way as HTTP/2's (`drive::Runner`).
        let mut st = st;
        st.start_http3(Arc::new(drive::Runner(Arc::downgrade(&shared))))
            .map_err(|e| PyOSError::new_err(format!("cannot start HTTP/3: {e}")))?;
        let loop_thread = spawn_loop_thread(&shared, &pool, st)?;
        let (watchdog, deadline_watcher) = spawn_watchers(&shared)?;
        self.wait_for_end(py);
        let lives = pool.lives();
        let left = py.detach(|| {
            shared.sched.stop_watchdog();
            let _ = watchdog.join();
            if let (Some(d), Some(t)) = (&shared.bridge.deadlines, deadline_watcher) {
                d.stop();
                let _ = t.join();
            }
            // The thread that started the loop may have become a pool thread after a takeover:
            // stop the pool first, then join it only if it is gone (never wait on an app call
            // stuck past the graceful timeout).
            // What is left of the one graceful deadline (none after an immediate stop): the
            // loop already used its share of it.
            let left = pool.stop(
                shared.ctx().graceful_left(),
                &shared.ctx().counters.stuck_calls,
            );
            let _ = admission_watcher.join();
            if left == 0 {
                // The pool's job closure holds `shared`, which holds the pool: let go of the
                // pool so that both are freed, with the loop's epoll and eventfd descriptors
                // and the app (a server started and stopped in one process kept all of them).
                // Not while a call stuck past the graceful timeout may still ask for the pool.
                shared.pool.lock().unwrap().take();
                // Out of their loops is not gone: wait until the pool's threads and the loop's
                // thread have dropped their last share, while detached, so that re-attaching
                // below applies the decrefs PyO3 deferred for them (`pool::Lives`).
                lives.wait_gone(STOP_TAIL);
            }
            if loop_thread.is_finished() {
                let _ = loop_thread.join();
            }
            left
        });
        if let Some(log) = &shared.ctx().settings.access_log {
            // What is left of the graceful timeout, and never less than a healthy log needs.
            let within = shared.ctx().graceful_left().max(ACCESS_LOG_LAST_WRITE);
            py.detach(|| log.finish(within));
        }
        // Threads in calls stuck past --timeout are reported by the supervisor.
        let left = left.saturating_sub(shared.ctx().counters.stuck_calls.load(Ordering::Relaxed));
        if left > 0 {
            let logger = py
                .import("logging")?
                .call_method1("getLogger", ("sluicegate.error",))?;
            logger.call_method1(
                "warning",
                (format!(
                    "{left} app thread(s) still running after the graceful timeout"
                ),),
            )?;
        }
        Ok(shared.bridge.counters().cut.load(Ordering::Relaxed))
    }

    /// Stop accepting and finish (graceful) or drop (not graceful) in-flight requests.
    #[pyo3(signature = (graceful=true))]
    fn shutdown(&self, graceful: bool) {
        self.shared.ctx().request_shutdown(if graceful {
            Shutdown::Graceful
        } else {
            Shutdown::Immediate
        });
    }

    /// Every `stats()` key of the counter table (`observe::table`), read detached (the
    /// readings take the pool's and the `--timeout` registry's locks).
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let stats = py.detach(|| crate::observe::table::stats(&readings(&self.shared)));
        for (key, value) in stats {
            match value {
                Stat::Num(n) => d.set_item(key, n)?,
                Stat::Text(t) => d.set_item(key, t)?,
            }
        }
        Ok(d)
    }

    /// This worker retires (`--max-requests`, `--max-stuck` reached; its replacement boots):
    /// it accepts no connection more and ends keep-alive after each answer
    /// (`io::request_limit`). Nothing in a single process.
    fn retire(&self) {
        self.shared.ctx().retire();
    }

    /// Retire by itself with the request that makes `requests` (0: never), if `min_age_s`
    /// seconds have passed by then (`io::request_limit`). Called before `run`.
    fn retire_after(&self, requests: u64, min_age_s: f64) {
        let min_age = std::time::Duration::from_secs_f64(min_age_s.max(0.0));
        self.shared.ctx().retire_after(requests, min_age);
    }

    /// The app calls in flight, oldest first: `(method, path, age_s, thread, stuck)`, the path
    /// without its query string (`report::calls_in_flight`); empty when calls are not listed
    /// (`--no-control-socket` without `--timeout` or `--metrics-bind`).
    fn in_flight(&self) -> Vec<(String, String, f64, u64, bool)> {
        report::calls_in_flight(&self.shared)
    }

    /// Serve new TLS connections with `credentials` (loaded by `_core.load_tls`): a single
    /// process's certificate reload. Connections already open keep theirs. False when no
    /// listener speaks TLS.
    fn set_tls(&self, credentials: &Bound<'_, tls::TlsCredentials>) -> bool {
        tls::replace(self.shared.ctx(), &credentials.get().config)
    }

    /// The text `GET /metrics` answers (Prometheus 0.0.4), rendered now: a worker hands its
    /// last one to its master when it stops, so the master's totals keep what it counted.
    /// Rendered detached: it reads `/proc` and the cgroup's files (0.2 ms to 39 ms on a loaded
    /// machine), and an inline call waiting for the GIL meanwhile, its holder asleep in a
    /// read, looked blocked to the watchdog: each `ctl status` (control_agent.py) could put
    /// the server in dispatch mode.
    fn metrics_text(&self, py: Python<'_>) -> String {
        py.detach(|| crate::observe::prometheus::render(&readings(&self.shared)))
    }
}

/// Start the watchdog (`sg-watchdog`: inline calls, takeovers) and, with `--timeout`, the
/// timeout watcher (`sg-timeout`).
#[allow(clippy::type_complexity)]
fn spawn_watchers(
    shared: &Arc<Shared>,
) -> PyResult<(
    std::thread::JoinHandle<()>,
    Option<std::thread::JoinHandle<()>>,
)> {
    let s = Arc::clone(shared);
    let watchdog = std::thread::Builder::new()
        .name("sg-watchdog".into())
        .spawn(move || {
            let pool = s.pool();
            s.sched.watchdog(
                |st| hand_loop_over(&s, &pool, st, None),
                |route, ran, blocked| {
                    if blocked {
                        pool.adopt_blocked();
                    } else {
                        pool.adopt_long(route, ran);
                    }
                },
            );
        })
        .map_err(|e| PyOSError::new_err(format!("cannot start the watchdog: {e}")))?;

    let deadline_watcher = match &shared.bridge.deadlines {
        Some(d) => {
            let (d, s) = (Arc::clone(d), Arc::clone(shared));
            Some(
                std::thread::Builder::new()
                    .name("sg-timeout".into())
                    .spawn(move || watch_deadlines(&s, &d))
                    .map_err(|e| {
                        PyOSError::new_err(format!("cannot start the timeout watcher: {e}"))
                    })?,
            )
        }
        None => None,
    };
    Ok((watchdog, deadline_watcher))
}

/// Start the thread that drives the event loop first (`sg-loop`).
fn spawn_loop_thread(
    shared: &Arc<Shared>,
    pool: &Arc<Pool<drive::Job>>,
    st: Box<LoopState>,
) -> PyResult<std::thread::JoinHandle<()>> {
    let s = Arc::clone(shared);
    let life = pool.life();
    std::thread::Builder::new()
        .name("sg-loop".into())
        .stack_size(8 * 1024 * 1024)
        .spawn(move || {
            Python::attach(|py| {
                py.detach(|| {
                    if drive_loop(&s, st, None) == LoopEnd::TakenOver {
                        // The loop's first thread becomes a pool thread, once; not if
                        // the stop has already let go of the pool (a stop that found the
                        // pool idle can take it before this thread gets here).
                        if let Some(pool) = s.try_pool() {
                            pool.join_as_worker();
                        }
                    }
                });
                // The thread ends: what it kept for its next request goes now, attached.
                crate::wsgi::start_response::Callables::drop_kept(py);
            });
            drop(s);
            drop(life); // last: `run` waits for it (see `pool::Lives`)
        })
        .map_err(|e| PyOSError::new_err(format!("cannot start the event loop thread: {e}")))
}

impl Server {
    /// Wait for the end, running signal handlers when the signal pipe has bytes, and
    /// re-attaching when the release bell rings (`wsgi::release`: returning from `detach`
    /// applies the decrefs PyO3 deferred).
    fn wait_for_end(&self, py: Python<'_>) {
        let shared = &self.shared;
        let done_fd = shared.done_fd;
        let signal_fd = self.signal_fd;
        let bell_fd = self.bell_fd;
        crate::wsgi::release::install(bell_fd);
        loop {
            let [done, signalled] = py.detach(|| {
                let [done, signalled, rang] = wakeup::wait_any([done_fd, signal_fd, bell_fd], -1);
                if rang && !done && !signalled {
                    // Drained before re-attaching: every drop whose ring this consumes
                    // registered its decref before ringing, so re-attaching applies it. The
                    // drops of the next `release::GATHER` ring no more (the bell is pending),
                    // so a stream of large responses costs one re-attach per period, not one
                    // per response (which cost ~20 µs of CPU per 688 KB response in S1).
                    wakeup::drain(bell_fd);
                    let gather = crate::wsgi::release::GATHER.as_millis() as i32;
                    let [done, signalled] = wakeup::wait_any([done_fd, signal_fd], gather);
                    crate::wsgi::release::answered();
                    return [done, signalled];
                }
                if rang {
                    wakeup::drain(bell_fd);
                    crate::wsgi::release::answered();
                }
                [done, signalled]
            });
            if signalled {
                wakeup::drain(signal_fd);
                if let Err(e) = py.check_signals() {
                    // e.g. KeyboardInterrupt without a handler: shut down gracefully.
                    let _ = e;
                    shared.ctx().request_shutdown(Shutdown::Graceful);
                }
            }
            if done {
                break;
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        crate::wsgi::release::uninstall(self.bell_fd);
        wakeup::close(self.shared.done_fd);
        wakeup::close(self.bell_fd);
    }
}
