//! The server: wires the event loop, the scheduler, the pool and the WSGI bridge together, and
//! is the `sluicegate._core.Server` class the Python front drives (`run`, `shutdown`, `stats`).
//!
//! Threads: the caller of `run()` (the main thread) only waits for signals and for the end; one
//! thread drives the event loop at a time (it may change on a takeover, see `scheduler`); app
//! threads come and go in the pool; one watchdog thread looks after inline calls.

pub mod admission;
pub mod scheduler;

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::config::Config;
use crate::io::conn::Wire;
use crate::io::error_answer::{error_answer, GATEWAY_TIMEOUT};
use crate::io::event_loop::{ListenSocket, LoopCtx, LoopSettings, LoopState, Shutdown, Work};
use crate::observe::metrics_http::MetricsListener;
use crate::observe::table::{AdmissionReadings, Readings, Stat};
use crate::wsgi::deadline::Deadlines;
use crate::wsgi::driver::run_request;
use crate::wsgi::environ::{EnvironBuilder, ListenerInfo};
use crate::wsgi::file_wrapper::FileWrapper;
use crate::wsgi::pool::Pool;
use crate::wsgi::sender::set_stream_hook;
use crate::wsgi::Bridge;
use scheduler::Scheduler;

/// What a pool thread is asked to do.
pub enum Job {
    /// Run one request.
    Request(Work),
    /// Become the event loop's thread (after a takeover).
    RunLoop(Box<LoopState>),
}

/// State shared by every thread of the server.
pub struct Shared {
    bridge: Bridge,
    sched: Scheduler,
    pool: Mutex<Option<Arc<Pool<Job>>>>,
    /// eventfd written once when the event loop has finished (shutdown complete).
    done_fd: RawFd,
}

impl Shared {
    fn pool(&self) -> Arc<Pool<Job>> {
        self.pool
            .lock()
            .unwrap()
            .clone()
            .expect("pool is set in run()")
    }

    fn ctx(&self) -> &LoopCtx {
        &self.bridge.loop_ctx
    }

    /// Run one request on a pool thread (GIL taken here). Dispatched calls are timed for the
    /// scheduler from the moment the GIL is held.
    /// Returns the connection and the call's time from that moment (admission remembers it
    /// for the route: a wait for the GIL says nothing of the route).
    fn run_request_here(&self, work: Work) -> (Box<crate::io::conn::Conn>, Duration) {
        let _attached = crate::wsgi::release::Attached::enter();
        Python::attach(|py| {
            let start = Instant::now();
            let conn = run_request(&self.bridge, py, work);
            let took = start.elapsed();
            self.sched.note_call(took);
            (conn, took)
        })
    }

    /// Run one request inline on the loop's thread, attached already. Inline calls are watched
    /// by the watchdog.
    fn run_inline(&self, py: Python<'_>, work: Work) -> Box<crate::io::conn::Conn> {
        // Should the response stream, the loop moves to another thread (see `release_loop`);
        // the hook is this thread's for this call only.
        set_stream_hook(Some((
            release_loop_hook,
            self as *const Shared as *const (),
        )));
        let conn = run_request(&self.bridge, py, work);
        set_stream_hook(None);
        conn
    }
}

/// Stream hook of an inline call: hand the parked loop to a pool thread.
fn release_loop_hook(ctx: *const ()) {
    // SAFETY: set by run_inline from `&Shared` for the duration of the inline call that fires
    // it; the Shared outlives every request.
    let shared = unsafe { &*(ctx as *const Shared) };
    if let Some(st) = shared.sched.release_parked() {
        shared.pool().submit_urgent(Job::RunLoop(st));
    }
}

/// Inline requests the loop's thread runs one after another while attached, taking them from
/// what the loop has ready already; then it detaches to wait for events and do the loop's other
/// duties (pool threads' returned connections, streaming hand-offs).
const INLINE_BATCH: usize = 16;

/// How long a stop waits for threads that left their loops to finish their last drops (a
/// lock and the GIL for a moment each): a bound, never reached unless the process is starved.
const STOP_TAIL: Duration = Duration::from_secs(2);

/// Should `work` run inline on the loop's thread now (else it goes to the pool)?
fn runs_inline(shared: &Shared, work: &Work) -> bool {
    work.body_buffered && !shared.ctx().shutting_down() && shared.sched.inline_now()
}

/// Hand `work` to the pool.
fn dispatch(shared: &Shared, work: Work) {
    shared
        .sched
        .dispatched_calls
        .fetch_add(1, Ordering::Relaxed);
    let route = admission::route_hash(work.head.path());
    shared.pool().submit(Job::Request(work), route);
}

/// How [`drive_loop`] returned.
#[derive(Clone, Copy, PartialEq, Eq)]
enum LoopEnd {
    /// The loop has shut down.
    ShutDown,
    /// Another thread took the loop over while this one was in an inline call.
    TakenOver,
}

/// The event loop's driver: takes work from the loop and runs it inline or hands it to the
/// pool. Returns when the loop has shut down, or when the loop was taken over while this thread
/// was in an inline call: the caller then serves as a pool thread (a pool thread by going back
/// to its own worker loop, never by starting one inside this call: the loop moves between
/// threads at every streaming inline response, and a worker loop started here each time
/// nested one call deeper per move, until the stack overflowed, and counted the thread again
/// each time).
///
/// The thread stays attached to the interpreter and detaches only while the loop waits for
/// work (`next_work`: epoll, reads, the loop's duties), as the GIL is needed for the app call
/// that follows: taking it with `PyGILState_Ensure` per request cost about 300 instructions
/// more than `PyEval_RestoreThread`. While attached, the requests the loop has ready already
/// (parsed from events it has; it waits for no new ones) run one after another, up to
/// [`INLINE_BATCH`]: one GIL take for all of them (about 700 instructions each). The loop is
/// parked during each app call (the watchdog can take it over); its own work between calls
/// (writing back, reading and parsing the next request) runs attached, a few microseconds, as
/// the app call would anyway; a large answer still to write ends the batch and is written
/// detached (`LoopState::next_ready_work`).
fn drive_loop(shared: &Arc<Shared>, st: Box<LoopState>) -> LoopEnd {
    shared.sched.set_loop_thread();
    Python::attach(|py| {
        let mut st = Some(st);
        loop {
            let Some(work) = py.detach(|| {
                let _on_loop = crate::wsgi::release::LoopThread::enter();
                let st = st.as_mut().expect("the loop is here");
                loop {
                    let work = st.next_work(shared.ctx())?;
                    if runs_inline(shared, &work) {
                        return Some(work);
                    }
                    dispatch(shared, work);
                }
            }) else {
                signal_done(shared.done_fd);
                return LoopEnd::ShutDown;
            };
            let mut work = work;
            let mut ran = 0;
            loop {
                let route = admission::route_hash(work.head.path());
                let seq = shared
                    .sched
                    .park(st.take().expect("the loop is here"), route);
                let conn = shared.run_inline(py, work);
                match shared.sched.unpark() {
                    Some(back) => {
                        st.insert(back).put_back(conn, shared.ctx());
                    }
                    None => {
                        // The watchdog gave the loop to another thread while the app ran.
                        if shared.sched.was_adopted(seq) {
                            shared.pool().adopted_finished(route);
                        }
                        shared.ctx().return_conn(conn);
                        return LoopEnd::TakenOver;
                    }
                }
                ran += 1;
                if ran == INLINE_BATCH {
                    break;
                }
                let st = st.as_mut().expect("the loop is here");
                let next = loop {
                    match st.next_ready_work(shared.ctx()) {
                        None => break None,
                        Some(next) if runs_inline(shared, &next) => break Some(next),
                        Some(next) => dispatch(shared, next),
                    }
                };
                match next {
                    Some(next) => work = next,
                    None => break,
                }
            }
        }
    })
}

/// Run one pool job; for an app call, returns its time from when it held the GIL.
fn run_job(shared: &Arc<Shared>, job: Job) -> Option<Duration> {
    match job {
        Job::Request(work) => {
            let (conn, took) = shared.run_request_here(work);
            shared.ctx().return_conn(conn);
            Some(took)
        }
        // Taken over or shut down, this pool thread goes back to its worker loop.
        Job::RunLoop(st) => {
            drive_loop(shared, st);
            None
        }
    }
}

fn signal_done(fd: RawFd) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a valid u64 to our own eventfd.
    unsafe { libc::write(fd, &one as *const u64 as *const libc::c_void, 8) };
}

/// `sluicegate._core.Server`.
#[pyclass(module = "sluicegate._core", name = "Server", frozen)]
pub struct Server {
    shared: Arc<Shared>,
    loop_state: Mutex<Option<Box<LoopState>>>,
    signal_fd: RawFd,
    /// The release bell (`wsgi::release`), an eventfd the main thread waits on.
    bell_fd: RawFd,
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
        // wsgi.errors is the one Python object in the config; the rest are plain values.
        let errors = config.get_item("errors")?.ok_or_else(|| {
            pyo3::exceptions::PyKeyError::new_err("config key \"errors\" is missing")
        })?;
        let config = Config::from_dict(config)?;
        let mut sockets = Vec::new();
        let mut infos = Vec::new();
        let mut wires = Vec::new();
        for item in listeners.try_iter()? {
            let (fd, kind, name, port, wire): (i32, String, String, String, String) =
                item?.extract()?;
            wires.push(match wire.as_str() {
                "http" => Wire::Http,
                "proxy" => Wire::ProxyThenHttp,
                "uwsgi" => Wire::Uwsgi,
                other => {
                    return Err(pyo3::exceptions::PyValueError::new_err(format!(
                        "unknown listener wire {other:?}"
                    )))
                }
            });
            let unix = match kind.as_str() {
                "tcp" => false,
                "unix" => true,
                other => {
                    return Err(pyo3::exceptions::PyValueError::new_err(format!(
                        "unknown listener kind {other:?}"
                    )))
                }
            };
            sockets.push(ListenSocket::from_fd(fd, unix));
            infos.push(ListenerInfo {
                server_name: name,
                server_port: port,
            });
        }
        if sockets.is_empty() {
            return Err(pyo3::exceptions::PyValueError::new_err("no listeners"));
        }
        let statics =
            crate::static_files::StaticFiles::new(&config.static_mounts, config.static_fallthrough)
                .map_err(PyOSError::new_err)?;
        let balance = if config.balance_fd >= 0 {
            Some(
                crate::io::balance::Balance::open(
                    config.balance_fd,
                    config.balance_slots,
                    config.balance_slot,
                )
                .map_err(|e| PyOSError::new_err(format!("cannot map the balance table: {e}")))?,
            )
        } else {
            None
        };
        let (st, ctx) = LoopState::new(
            sockets,
            LoopSettings {
                statics,
                access_log: crate::observe::access_log::AccessLog::new(
                    config.access_log_fd,
                    &config.access_log_format,
                )
                .map_err(pyo3::exceptions::PyValueError::new_err)?
                .map(Arc::new),
                limits: config.limits,
                header_timeout: config.header_timeout,
                keepalive_timeout: config.keepalive_timeout,
                read_timeout: config.read_timeout,
                write_timeout: config.write_timeout,
                graceful_timeout: config.graceful_timeout,
                server_header: config.server_header.clone(),
                health_path: config.health_path.clone(),
                drain_delay: config.drain_delay,
                wires,
                proxy_trust: config.forwarding.as_ref().map(|(t, _)| t.clone()),
                debug: config.debug,
            },
            balance,
        )
        .map_err(|e| PyOSError::new_err(format!("cannot start the event loop: {e}")))?;
        let file_wrapper = py.get_type::<FileWrapper>().into_any();
        let environ = EnvironBuilder::new(
            py,
            &infos,
            &config.root_path,
            &config.url_scheme,
            &errors,
            &file_wrapper,
        )?;
        let policy = config.scheduler;
        let signal_fd = config.signal_fd;
        let bridge = Bridge::new(py, app, environ, config, ctx)?;
        // SAFETY: plain eventfd creation; the result is checked below.
        let done_fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        // SAFETY: as above.
        let bell_fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if done_fd < 0 || bell_fd < 0 {
            return Err(PyOSError::new_err("eventfd failed"));
        }
        Ok(Server {
            shared: Arc::new(Shared {
                bridge,
                sched: Scheduler::new(policy),
                pool: Mutex::new(None),
                done_fd,
            }),
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
            .name("sluicegate-admit".into())
            .spawn(move || p.watch(|| s.sched.loop_cpu_time()))
            .map_err(|e| PyOSError::new_err(format!("cannot start the admission watcher: {e}")))?;

        let s = Arc::clone(&shared);
        let life = pool.life();
        let loop_thread = std::thread::Builder::new()
            .name("sluicegate-loop".into())
            .stack_size(8 * 1024 * 1024)
            .spawn(move || {
                Python::attach(|py| {
                    py.detach(|| {
                        if drive_loop(&s, st) == LoopEnd::TakenOver {
                            // The loop's first thread becomes a pool thread, once.
                            s.pool().join_as_worker();
                        }
                    });
                    // The thread ends: what it kept for its next request goes now, attached.
                    crate::wsgi::start_response::Callables::drop_kept(py);
                });
                drop(s);
                drop(life); // last: `run` waits for it (see `pool::Lives`)
            })
            .map_err(|e| PyOSError::new_err(format!("cannot start the event loop thread: {e}")))?;
        let s = Arc::clone(&shared);
        let watchdog = std::thread::Builder::new()
            .name("sluicegate-watchdog".into())
            .spawn(move || {
                let pool = s.pool();
                s.sched.watchdog(
                    |st| pool.submit_urgent(Job::RunLoop(st)),
                    |route, ran| pool.adopt_long(route, ran),
                );
            })
            .map_err(|e| PyOSError::new_err(format!("cannot start the watchdog: {e}")))?;

        let deadline_watcher = match &shared.bridge.deadlines {
            Some(d) => {
                let (d, s) = (Arc::clone(d), Arc::clone(&shared));
                Some(
                    std::thread::Builder::new()
                        .name("sluicegate-timeout".into())
                        .spawn(move || watch_deadlines(&s, &d))
                        .map_err(|e| {
                            PyOSError::new_err(format!("cannot start the timeout watcher: {e}"))
                        })?,
                )
            }
            None => None,
        };

        // --metrics-bind: its own listener and thread (`observe::metrics_http`).
        let metrics_stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let metrics_thread = if shared.bridge.config.metrics_bind.is_empty() {
            None
        } else {
            let addr = shared.bridge.config.metrics_bind.clone();
            let listener = MetricsListener::bind(&addr).map_err(|e| {
                PyOSError::new_err(format!("--metrics-bind {addr}: cannot listen: {e}"))
            })?;
            let (s, stop) = (Arc::clone(&shared), Arc::clone(&metrics_stop));
            Some(
                std::thread::Builder::new()
                    .name("sluicegate-metrics".into())
                    .spawn(move || {
                        crate::observe::metrics_http::serve(listener, stop, |path| match path {
                            b"/metrics" => Some((
                                crate::observe::prometheus::CONTENT_TYPE,
                                crate::observe::prometheus::render(&readings(&s)),
                            )),
                            b"/debug/requests" => {
                                Some(("text/plain; charset=utf-8", render_in_flight(&s)))
                            }
                            _ => None,
                        })
                    })
                    .map_err(|e| {
                        PyOSError::new_err(format!("cannot start the metrics thread: {e}"))
                    })?,
            )
        };

        // Wait for the end, running signal handlers when the signal pipe has bytes, and
        // re-attaching when the release bell rings (`wsgi::release`: returning from `detach`
        // applies the decrefs PyO3 deferred).
        let done_fd = shared.done_fd;
        let signal_fd = self.signal_fd;
        let bell_fd = self.bell_fd;
        crate::wsgi::release::install(bell_fd);
        loop {
            let [done, signalled] = py.detach(|| {
                let [done, signalled, rang] = wait_any([done_fd, signal_fd, bell_fd], -1);
                if rang && !done && !signalled {
                    // Drained before re-attaching: every drop whose ring this consumes
                    // registered its decref before ringing, so re-attaching applies it. The
                    // drops of the next `release::GATHER` ring no more (the bell is pending),
                    // so a stream of large responses costs one re-attach per period, not one
                    // per response (which cost ~20 µs of CPU per 688 KB response in S1).
                    drain_fd(bell_fd);
                    let gather = crate::wsgi::release::GATHER.as_millis() as i32;
                    let [done, signalled] = wait_any([done_fd, signal_fd], gather);
                    crate::wsgi::release::answered();
                    return [done, signalled];
                }
                if rang {
                    drain_fd(bell_fd);
                    crate::wsgi::release::answered();
                }
                [done, signalled]
            });
            if signalled {
                drain_fd(signal_fd);
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
        let lives = pool.lives();
        let left = py.detach(|| {
            shared.sched.stop_watchdog();
            let _ = watchdog.join();
            if let (Some(d), Some(t)) = (&shared.bridge.deadlines, deadline_watcher) {
                d.stop();
                let _ = t.join();
            }
            metrics_stop.store(true, Ordering::Relaxed);
            if let Some(t) = metrics_thread {
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
            log.flush();
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

    /// Every `stats()` key of the counter table (`observe::table`).
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (key, value) in crate::observe::table::stats(&readings(&self.shared)) {
            match value {
                Stat::Num(n) => d.set_item(key, n)?,
                Stat::Text(t) => d.set_item(key, t)?,
            }
        }
        Ok(d)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        crate::wsgi::release::uninstall(self.bell_fd);
        // SAFETY: closing our own eventfds once.
        unsafe {
            libc::close(self.shared.done_fd);
            libc::close(self.bell_fd);
        }
    }
}

/// The `--timeout` watcher's thread: answers calls past the deadline (`wsgi::deadline`), then
/// logs each once with the Python stack of the thread running it.
fn watch_deadlines(shared: &Shared, deadlines: &Deadlines) {
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

/// What `stats()` and `GET /metrics` read (`observe::table`): the loop's counters, and copies of
/// what the scheduler, the pool, the `--timeout` watcher and the access log keep.
fn readings(s: &Shared) -> Readings<'_> {
    let cfg = &s.bridge.config;
    let (app_timeouts, stuck_calls, app_calls_in_flight) = match &s.bridge.deadlines {
        Some(d) => (
            d.expired_total(),
            d.stuck() as u64,
            d.in_flight_count() as u64,
        ),
        None => (0, 0, 0),
    };
    let pool = s.pool.lock().unwrap().clone();
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
            }
        }),
        access_log_dropped: s.ctx().settings.access_log.as_ref().map(|l| l.dropped()),
        // With worker processes each worker has its own listener and says which it is.
        worker: (cfg.balance_fd >= 0).then_some(cfg.balance_slot as u32),
    }
}

/// `GET /debug/requests`: every app call in flight, oldest first, with its age and the Python
/// stack of the thread running it.
fn render_in_flight(s: &Shared) -> String {
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
fn python_stack(py: Python<'_>, ident: u64) -> String {
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

/// Wait until one of `fds` is readable (a negative fd is ignored, as poll(2) does), at most
/// `timeout_ms` (-1: no limit). Returns which are.
fn wait_any<const N: usize>(fds: [RawFd; N], timeout_ms: i32) -> [bool; N] {
    let mut polls = fds.map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    loop {
        // SAFETY: `polls` holds N valid pollfd structs for the duration of the call.
        let r = unsafe { libc::poll(polls.as_mut_ptr(), N as libc::nfds_t, timeout_ms) };
        if r >= 0 {
            return polls.map(|p| p.revents != 0);
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return [false; N];
        }
    }
}

fn drain_fd(fd: RawFd) {
    let mut buf = [0u8; 256];
    loop {
        // SAFETY: reads into a valid stack buffer; fd is the non-blocking signal pipe or bell.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        if n <= 0 {
            return;
        }
    }
}
