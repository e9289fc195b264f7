//! The elastic thread pool that runs app calls which must not run on the event loop's thread.
//!
//! Threads are created on demand up to `max` and exit after `IDLE_EXIT` without work (down to
//! `min`). Idle threads wait on their own slot, most recently idle first (LIFO): a job goes
//! straight into a parked thread's slot and only that thread is woken, hot threads stay hot,
//! and threads at the bottom of the stack time out when the load drops.
//!
//! App calls pass admission first (`admission`): at most `max_runnable` of them count as
//! runnable at once; the others wait in a FIFO queue, and a thread that finishes a call takes
//! the next one itself, without a wake-up. The pool's watcher thread (`watch`) looks at the
//! admitted calls while calls wait, and demotes those it sees blocked, so blocking apps still
//! get as many threads as they have blocked calls (up to `max`). Jobs submitted as urgent (the
//! event loop moving to another thread) bypass admission.
//!
//! Each thread stays attached to the Python interpreter for its whole life (one thread state,
//! created once), so taking the GIL for a job costs a lock, not a thread-state allocation.

pub mod admission;
pub mod batch;
mod climb;
pub(crate) mod machine;
mod route;
mod start_gate;
mod threads;
mod watch;

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::clock::clock_time;

use admission::{Admission, AdmissionStats, Class, Waiting};
#[cfg(test)]
pub(crate) use climb::MACHINE_IDLE_LEAST;
pub use start_gate::{
    allowance_binds, attach_to_start, crowded as start_crowded, note_allowance,
    places as start_gate_places, set_policy as set_start_gate,
};

/// An idle thread with no work for this long exits (while more than `min` threads exist).
const IDLE_EXIT: Duration = Duration::from_secs(30);

/// Stack size of app threads: the same 8 MiB a Python `threading.Thread` gets by default on
/// Linux, so deep recursion in apps behaves as it does elsewhere. Only touched pages use memory.
const STACK_SIZE: usize = 8 * 1024 * 1024;

/// The longest a long call waits for the admitted fast calls to go first (see
/// `Pool::let_fast_calls_go_first`): a fast call has the GIL within a wake-up once the ended
/// call let it go; one that has not finished by then is blocked or computing, and is not
/// waited for.
const FAST_FIRST: Duration = Duration::from_millis(2);

/// The watcher's interval between looks at admitted calls while calls wait. A blocked call is
/// demoted after `STALLED_LOOKS` of them (0.5–0.75 ms), which is what a queued request waits
/// at most behind calls that sleep; a look costs a few `clock_gettime` calls.
const LOOK_EVERY: Duration = Duration::from_micros(250);

/// The watcher's interval between looks while only calls of the blocking class wait (no
/// admitted call to judge): it looks at where their threads wait, to size the class's room.
const BLOCKING_LOOK_EVERY: Duration = Duration::from_millis(1);

/// The watcher's interval between looks while only calls of the blocking class wait and their
/// room may not grow now (`Pool::size_blocking`): a look then can only find a GIL convoy (two
/// looks in a row shrink the room by one), or nothing at all at the floor or below. A look
/// costs the watcher a wake-up and the pool's lock: at 1 ms while Django waited for room,
/// 130 µs of CPU per request (S13). A call admitted that must be judged ends the wait at once
/// (`Pool::hold`).
const BLOCKING_QUIET_LOOK: Duration = Duration::from_millis(8);

/// Past this many app threads the pool logs one warning: it is PostgreSQL's default
/// `max_connections`, and an app that holds one database connection per thread (Django with
/// its defaults) gets refused connections beyond it. See docs/deploying.md, "Sizing --threads".
const MANY_THREADS: usize = 100;

/// No thread CPU clock known yet.
const NO_CLOCK: i64 = i64::MIN;

/// How a job was admitted: its route and class (urgent jobs have none), and whether it is a
/// call to a blocking route judged again (`Admission::classify`), which the watcher must look
/// at even while no call waits.
#[derive(Clone, Copy)]
struct Ticket {
    route: u64,
    class: Class,
    judged: bool,
}

/// A parked thread's mailbox, and its CPU clock (for the watcher).
struct Slot<J> {
    job: Mutex<Option<(J, Option<Ticket>)>>,
    cond: Condvar,
    clock: AtomicI64,
    /// Its thread's kernel id (0 until known), for where it waits.
    tid: std::sync::atomic::AtomicI32,
}

impl<J> Slot<J> {
    fn new() -> Arc<Slot<J>> {
        Arc::new(Slot {
            job: Mutex::new(None),
            cond: Condvar::new(),
            clock: AtomicI64::new(NO_CLOCK),
            tid: std::sync::atomic::AtomicI32::new(0),
        })
    }

    /// Called by the slot's own thread once.
    fn set_clock_of_this_thread(&self) {
        let mut clock: libc::clockid_t = 0;
        // SAFETY: pthread_self is this live thread; `clock` is a valid out-pointer.
        if unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) } == 0 {
            self.clock.store(i64::from(clock), Ordering::Relaxed);
        }
        // SAFETY: gettid has no preconditions.
        self.tid.store(unsafe { libc::gettid() }, Ordering::Relaxed);
    }

    /// Where its thread waits: the system call it is in, from /proc.
    fn waiting(&self) -> Waiting {
        let tid = self.tid.load(Ordering::Relaxed);
        if tid == 0 {
            return Waiting::Unknown;
        }
        waiting_of(tid)
    }

    fn cpu_time(&self) -> Option<Duration> {
        match self.clock.load(Ordering::Relaxed) {
            NO_CLOCK => None,
            c => clock_time(c as libc::clockid_t),
        }
    }
}

/// An admitted call that counts as runnable: its thread's slot and what the watcher saw of it.
struct Holder<J> {
    slot: Arc<Slot<J>>,
    ticket: Ticket,
    since: Instant,
    /// Its thread's CPU time at the previous look.
    cpu_seen: Option<Duration>,
    /// Its thread's CPU time, and the app threads' together, at the watcher's first look.
    cpu_first: Option<Duration>,
    app_first: Option<Duration>,
    /// How its length was judged (see `Length`).
    length: Length,
    stalled_looks: u32,
    /// Windows in a row the watcher judged it and did not find it blocked.
    clean_looks: u32,
    /// Its last stall was a wait on I/O (its route then counts as blocking).
    io: bool,
}

impl<J> Holder<J> {
    fn new(slot: &Arc<Slot<J>>, ticket: Ticket) -> Holder<J> {
        Holder {
            slot: Arc::clone(slot),
            ticket,
            since: Instant::now(),
            cpu_seen: None,
            cpu_first: None,
            app_first: None,
            length: Length::Short,
            stalled_looks: 0,
            clean_looks: 0,
            io: false,
        }
    }

    /// A fast call: admitted short, or judged to have only waited for the interpreter past
    /// `LONG_CALL` (it moved to the long class, but its route is fast).
    fn is_fast(&self) -> bool {
        self.ticket.class == Class::Short || self.length == Length::Waited
    }

    /// Its wall time to remember for its route when it finishes (`None`: it only waited).
    fn took(&self, took: Duration) -> Option<Duration> {
        (self.length != Length::Waited).then_some(took)
    }
}

/// A call past `LONG_CALL` waited for the interpreter if, since the watcher first saw it, the
/// other app threads used over this many times (4) the CPU it used. Waiting for the GIL behind
/// a long call uses next to none while the long call computes (measured: ~50 µs in 10–14 ms
/// for a `/hello` in S12). A call sharing the interpreter with one or two others gets a half or
/// a third; a call slowed by a busy machine (other processes on every core) gets little CPU,
/// but so do the other app threads, so it is not taken for a wait.
const WAITED_SHARE: u32 = 4;

/// CPU below which a share says nothing: over a window where neither the call nor the other
/// app threads used this much (1 ms), the process hardly ran, and the judgement waits.
const EVIDENCE: Duration = Duration::from_millis(1);

/// What the watcher made of an admitted call's length (see `admission`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Length {
    /// Not past `LONG_CALL` of wall time, nor seen computing `COMPUTING_CPU`.
    Short,
    /// Past `LONG_CALL` of wall time, not judged yet (seen too briefly, or the process hardly
    /// ran). Its time is recorded like a short call's (averaged into its route's, never
    /// marking the route long alone).
    Unsure,
    /// Past `LONG_CALL` of wall time while the other app threads used over `WAITED_SHARE`
    /// times its CPU, and at least `EVIDENCE` (it waited for the GIL): its time says nothing
    /// of its route.
    Waited,
    /// Seen using `COMPUTING_CPU`, or past `LONG_CALL` having used `EVIDENCE` without having
    /// waited: its route is long.
    Computing,
}

struct Inner<J> {
    idle: Vec<Arc<Slot<J>>>,
    adm: Admission<J>,
    holders: Vec<Holder<J>>,
    /// The threads of the calls of the blocking class in flight (see `watch`).
    blocking: Vec<Arc<Slot<J>>>,
    /// The threads of calls that wait outside the blocking class (demoted for waiting on I/O,
    /// or in flight on a route found blocking), each holding a place in the blocking class's
    /// room until its call ends (`Pool::hold_route`).
    held: Vec<Arc<Slot<J>>>,
    total: usize,
    stopping: bool,
    /// The `MANY_THREADS` warning was given.
    warned: bool,
    /// The watcher's last look found nothing to do but wait (`BLOCKING_QUIET_LOOK`).
    quiet: bool,
}

pub struct Pool<J: Send + 'static> {
    inner: Mutex<Inner<J>>,
    /// Signalled when a thread exits (for `stop`).
    exited: Condvar,
    /// Signalled when a call starts waiting in an empty queue (wakes the watcher).
    queued: Condvar,
    /// Signalled when a fast call ends (`let_fast_calls_go_first`).
    fast_done: Condvar,
    min: usize,
    max: usize,
    /// Runs one job; returns the call's own time to remember for its route, timed from when
    /// it could run (for an app call, from when it held the GIL), or `None` to use the wall
    /// time since the job started (see `worker_loop`).
    run: Box<dyn Fn(J) -> Option<Duration> + Send + Sync>,
    busy: AtomicUsize,
    /// Every pool thread, and the threads the server lends it, until their very last drop.
    lives: Arc<Lives>,
}

/// Counts threads until the last thing they drop, so that the server's stop can wait for them
/// to be gone, not only out of their loop. What such a thread drops last (its share of the
/// pool, whose job closure holds the app) is released without the GIL, so PyO3 defers the
/// decref to the next thread that attaches: a thread still finishing after `Server::run` had
/// re-attached for the last time kept the app of a stopped server alive for the process's life
/// (seen in CI under load, `tests/test_shutdown.py`).
#[derive(Default)]
pub struct Lives {
    count: Mutex<usize>,
    gone: Condvar,
}

/// One counted thread; dropping it (last, after everything else the thread held) ends it.
pub struct Life(Arc<Lives>);

impl Lives {
    pub fn enter(self: &Arc<Self>) -> Life {
        *self.count.lock().unwrap() += 1;
        Life(Arc::clone(self))
    }

    /// Wait until every counted thread is gone or `timeout` passes; true if all are gone.
    pub fn wait_gone(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut count = self.count.lock().unwrap();
        while *count > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            count = self.gone.wait_timeout(count, left).unwrap().0;
        }
        true
    }
}

impl Drop for Life {
    fn drop(&mut self) {
        *self.0.count.lock().unwrap() -= 1;
        self.0.gone.notify_all();
    }
}

impl<J: Send + 'static> Pool<J> {
    /// `max_runnable`: see `admission` (0: no admission limit).
    pub fn new(
        min: usize,
        max: usize,
        max_runnable: usize,
        run: Box<dyn Fn(J) -> Option<Duration> + Send + Sync>,
    ) -> Arc<Pool<J>> {
        Arc::new(Pool {
            inner: Mutex::new(Inner {
                idle: Vec::new(),
                adm: Admission::new(max_runnable),
                holders: Vec::new(),
                blocking: Vec::new(),
                held: Vec::new(),
                total: 0,
                stopping: false,
                warned: false,
                quiet: false,
            }),
            exited: Condvar::new(),
            queued: Condvar::new(),
            fast_done: Condvar::new(),
            min,
            max,
            run,
            busy: AtomicUsize::new(0),
            lives: Arc::default(),
        })
    }

    /// Count a thread that is not the pool's own (the event loop's first thread, which may
    /// become a pool thread) among those `Lives::wait_gone` waits for.
    pub fn life(&self) -> Life {
        self.lives.enter()
    }

    /// The count of threads that hold a part of the pool (see [`Lives`]).
    pub fn lives(&self) -> Arc<Lives> {
        Arc::clone(&self.lives)
    }

    /// Threads alive.
    pub fn threads(&self) -> usize {
        self.inner.lock().unwrap().total
    }

    /// Threads running a job now.
    pub fn busy(&self) -> usize {
        self.busy.load(Ordering::Relaxed)
    }

    /// Admission: (limit, runnable now per class, queued now, counters).
    pub fn admission(&self) -> (usize, [usize; 2], usize, AdmissionStats) {
        let inner = self.inner.lock().unwrap();
        (
            inner.adm.limit(),
            [
                inner.adm.runnable(Class::Short),
                inner.adm.runnable(Class::Long),
            ],
            inner.adm.queued_now(),
            inner.adm.stats,
        )
    }

    /// Start `min` threads ahead of the first request.
    pub fn prestart(self: &Arc<Self>) {
        let mut inner = self.inner.lock().unwrap();
        while inner.total < self.min {
            inner.total += 1;
            drop(inner); // `spawn` takes it when it fails
            if !self.spawn(Slot::new(), None, false) {
                return; // out of threads: the pool grows on demand instead
            }
            inner = self.inner.lock().unwrap();
        }
    }

    /// Run an app call on a pool thread once admitted: at once if there is room and a thread
    /// (a parked one, else a new one below max), else after the calls queued before it.
    /// `route`: see `admission::route_hash`.
    pub fn submit(self: &Arc<Self>, job: J, route: u64) {
        let mut inner = self.inner.lock().unwrap();
        let thread = !inner.idle.is_empty() || inner.total < self.max;
        let (class, judged) = inner.adm.classify(route, thread);
        let room = inner.adm.may_admit(route, class) || inner.stopping;
        if room && thread {
            inner.adm.admit(class);
            if judged {
                inner.adm.hold_blocking();
            }
            self.start(
                inner,
                job,
                Some(Ticket {
                    route,
                    class,
                    judged,
                }),
            );
            if judged {
                self.queued.notify_one(); // the watcher looks at it, queue or not
            }
            return;
        }
        let was_empty = inner.adm.queued_now() == 0;
        inner.adm.wait(job, route, class);
        drop(inner);
        if was_empty {
            self.queued.notify_one();
        }
    }

    /// Run `job` now, not counted by admission, starting a thread beyond `max` if none is
    /// idle: for the event loop itself when it is handed to another thread.
    pub fn submit_urgent(self: &Arc<Self>, job: J) {
        let inner = self.inner.lock().unwrap();
        self.start(inner, job, None);
    }

    /// Run `job` now on an idle thread, not counted by admission; `Err(job)` if none is idle.
    /// For a job that must not wait for the GIL: an idle thread is attached to the interpreter
    /// already (and detached while it waits), where a new one attaches before its first job.
    pub fn submit_to_idle(self: &Arc<Self>, job: J) -> Result<(), J> {
        let inner = self.inner.lock().unwrap();
        if inner.idle.is_empty() {
            return Err(job);
        }
        self.start(inner, job, None);
        Ok(())
    }

    /// An inline call to `route` was taken over from the event loop's thread for computing
    /// (`server::scheduler`): it goes on outside the pool, but it holds the interpreter like
    /// an admitted long call. Count it in the long class and mark its route long, so that the
    /// route's next calls queue behind it instead of running beside it: two computing calls
    /// make a fast call wait for the GIL among both (measured, `bench.s12_startup`: probes of
    /// 30-190 ms on a fresh server, against one switch interval behind a single long call).
    /// `ran`: how long it had run. [`Pool::adopted_finished`] ends it.
    pub fn adopt_long(&self, route: u64, ran: Duration) {
        let mut inner = self.inner.lock().unwrap();
        inner.adm.mark_long(route, ran);
        inner.adm.admit(Class::Long);
        inner.adm.hold_blocking();
    }

    /// An inline call was taken over from the event loop's thread while it waited in the
    /// kernel: it takes a place in the blocking class's room until it ends, as a demoted call
    /// does (see `watch`), so the calls that wait in flight stay within that room. Its route
    /// is not marked: the wait may have been one for the interpreter. [`Pool::adopted_finished`]
    /// ends it.
    pub fn adopt_blocked(&self) {
        self.inner.lock().unwrap().adm.hold_blocking();
    }

    /// The call counted by [`Pool::adopt_long`] (`blocked`: by [`Pool::adopt_blocked`])
    /// finished. The calling thread goes on to its worker loop, which admits what was queued
    /// behind it.
    pub fn adopted_finished(&self, route: u64, blocked: bool) {
        let mut inner = self.inner.lock().unwrap();
        inner.adm.release_blocking();
        if !blocked {
            inner.adm.finished(Class::Long, true, route, None);
        }
    }

    /// Stop: idle threads exit now, busy ones after their job (queued calls are still run,
    /// whatever the admission limit). Waits up to `timeout` for all to be gone but those in
    /// calls stuck past `--timeout` (`stuck`); returns the number still running.
    pub fn stop(&self, timeout: Duration, stuck: &AtomicUsize) -> usize {
        let mut inner = self.inner.lock().unwrap();
        inner.stopping = true;
        self.queued.notify_all();
        for s in inner.idle.iter() {
            s.cond.notify_one();
        }
        let deadline = std::time::Instant::now() + timeout;
        // Threads in calls stuck past `--timeout` (answered already) are not waited for.
        while inner.total > stuck.load(Ordering::Relaxed) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            inner = self.exited.wait_timeout(inner, left).unwrap().0;
            for s in inner.idle.iter() {
                s.cond.notify_one();
            }
        }
        inner.total
    }
}

/// Where thread `tid` of this process waits: `/proc/self/task/TID/syscall` starts with the
/// number of the system call it is blocked in ("running" or "-1" otherwise).
fn waiting_of(tid: i32) -> Waiting {
    let Ok(text) = std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall")) else {
        return Waiting::Unknown;
    };
    match text.split_ascii_whitespace().next().map(str::parse::<i64>) {
        Some(Ok(nr)) if nr == libc::SYS_futex => Waiting::Lock,
        Some(Ok(nr)) if nr >= 0 => Waiting::Io,
        _ => Waiting::Unknown,
    }
}
