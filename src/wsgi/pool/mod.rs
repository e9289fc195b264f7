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

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use crate::clock::clock_time;

use admission::{
    stalled, Admission, AdmissionStats, Class, Waiting, COMPUTING_CPU, LOCK_LOOKS, LONG_CALL,
    STALLED_LOOKS,
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
    total: usize,
    stopping: bool,
    /// The `MANY_THREADS` warning was given.
    warned: bool,
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
                total: 0,
                stopping: false,
                warned: false,
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
        let (class, judged) = inner.adm.classify(route);
        let room = inner.adm.has_room(class) || inner.stopping;
        if room && (!inner.idle.is_empty() || inner.total < self.max) {
            inner.adm.admit(class);
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

    /// Give `job` to a parked thread, or to a new one. An admitted job's thread becomes a
    /// holder (watched while calls wait).
    fn start(
        self: &Arc<Self>,
        mut inner: std::sync::MutexGuard<'_, Inner<J>>,
        job: J,
        ticket: Option<Ticket>,
    ) {
        let (slot, new) = match inner.idle.pop() {
            Some(slot) => (slot, false),
            None => {
                inner.total += 1;
                (Slot::new(), true)
            }
        };
        let warn = new && inner.total > MANY_THREADS && !inner.warned;
        inner.warned |= warn;
        if let Some(ticket) = ticket.filter(|t| t.class != Class::Blocking) {
            inner.holders.push(Holder::new(&slot, ticket));
        }
        drop(inner);
        if new {
            self.spawn(slot, Some((job, ticket)), warn);
        } else {
            *slot.job.lock().unwrap() = Some((job, ticket));
            slot.cond.notify_one();
        }
    }

    /// Start a thread for `slot` (its first job: `first`); false if none could be started.
    /// Call without holding `inner`.
    fn spawn(
        self: &Arc<Self>,
        slot: Arc<Slot<J>>,
        first: Option<(J, Option<Ticket>)>,
        warn: bool,
    ) -> bool {
        let pool = Arc::clone(self);
        let life = self.lives.enter();
        let res = std::thread::Builder::new()
            .name("sluicegate-app".into())
            .stack_size(STACK_SIZE)
            .spawn(move || {
                pool.thread_main(slot, first, warn); // consumes the thread's share of the pool
                drop(life);
            });
        if let Err(e) = res {
            // Out of threads. The job (moved into the closure) is lost with it: say so loudly.
            eprintln!("sluicegate: cannot start an app thread: {e}");
            let mut inner = self.inner.lock().unwrap();
            inner.total -= 1;
            return false;
        }
        true
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
    }

    /// The call counted by [`Pool::adopt_long`] finished (its route was marked long then). The
    /// calling thread goes on to its worker loop, which admits what was queued behind it.
    pub fn adopted_finished(&self, route: u64) {
        let mut inner = self.inner.lock().unwrap();
        inner.adm.finished(Class::Long, true, route, None);
    }

    /// Before a thread that just ended a call starts the next long one: wait (at most
    /// `FAST_FIRST`) until the admitted fast calls (`Holder::is_fast`) are done. They are
    /// waiting for the GIL that the ended call held, and CPython's GIL is not fair: a thread
    /// that releases it and asks for it again at once (the next long call) usually gets it
    /// back before a waiter wakes, and the fast call waits a whole switch interval more.
    /// Measured (S12, `/hello` beside 16 clients of a 200 ms computing route): a probe that
    /// came within 5 ms of a long call's end took 8-10 ms instead of 5.5 ms, one probe in
    /// 10-40. (A waiter that has asked the holder to drop the GIL gets it fairly: that is
    /// every wait longer than a switch interval.)
    fn let_fast_calls_go_first<'a>(
        &self,
        mut inner: std::sync::MutexGuard<'a, Inner<J>>,
    ) -> std::sync::MutexGuard<'a, Inner<J>> {
        let waiting = |inner: &Inner<J>| inner.holders.iter().any(Holder::is_fast);
        if !waiting(&inner) {
            return inner;
        }
        inner.adm.stats.fast_first += 1;
        let deadline = Instant::now() + FAST_FIRST;
        while waiting(&inner) && !inner.stopping {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            inner = self.fast_done.wait_timeout(inner, left).unwrap().0;
        }
        inner
    }

    /// Turn the calling thread into a pool thread (after its event-loop duty was taken over).
    pub fn join_as_worker(self: &Arc<Self>) {
        self.inner.lock().unwrap().total += 1;
        self.worker_loop(Slot::new(), None);
    }

    fn thread_main(
        self: Arc<Self>,
        slot: Arc<Slot<J>>,
        first: Option<(J, Option<Ticket>)>,
        warn: bool,
    ) {
        // Attach once for the thread's life; jobs re-attach cheaply inside.
        Python::attach(|py| {
            if warn {
                self.warn_many_threads(py);
            }
            py.detach(|| self.worker_loop(slot, first));
            // The thread ends: what it kept for its next request goes now, while attached.
            super::start_response::Callables::drop_kept(py);
        });
    }

    /// The one-time `MANY_THREADS` warning, on the logger the server's errors go to. Given from
    /// the new thread (which takes the GIL anyway), never from the event loop.
    fn warn_many_threads(&self, py: Python<'_>) {
        let msg = format!(
            "more than {MANY_THREADS} app calls at once: the app thread pool grew past \
             {MANY_THREADS} threads (limit {}). If each call holds a database connection, a \
             database with a default connection limit (PostgreSQL max_connections = 100) \
             refuses the next ones; cap it with --threads MIN:MAX below that limit (see \
             docs/deploying.md, \"Sizing --threads\")",
            self.max
        );
        let logged = py
            .import("logging")
            .and_then(|l| l.call_method1("getLogger", ("sluicegate.error",)))
            .and_then(|l| l.call_method1("warning", (msg.as_str(),)));
        if logged.is_err() {
            eprintln!("sluicegate: {msg}");
        }
    }

    fn worker_loop(self: &Arc<Self>, slot: Arc<Slot<J>>, mut next: Option<(J, Option<Ticket>)>) {
        slot.set_clock_of_this_thread();
        loop {
            let mut finished: Option<(Ticket, Duration)> = None;
            if let Some((job, ticket)) = next.take() {
                let start = Instant::now();
                self.busy.fetch_add(1, Ordering::Relaxed);
                let own = (self.run)(job);
                self.busy.fetch_sub(1, Ordering::Relaxed);
                // The call's own time, not the wait for the interpreter before it: a fast
                // call that waited for the GIL behind long ones while the watcher was not
                // looking (no call queued, so nobody judged it `Waited`) would otherwise
                // record that wait as its route's time and mark a fast route long. Measured
                // (`bench.s12_startup`): `/hello` probes on a fresh server beside CPU-bound
                // calls waited 75 ms for the GIL, one such time marked `/hello` long, and
                // the next probes queued behind whole 200 ms calls.
                finished = ticket.map(|t| (t, own.unwrap_or_else(|| start.elapsed())));
            }
            let mut inner = self.inner.lock().unwrap();
            if let Some((ticket, took)) = finished {
                let held = inner
                    .holders
                    .iter()
                    .position(|h| Arc::ptr_eq(&h.slot, &slot));
                // The holder's class, which may have become long while it ran.
                let (class, took, unblocked, fast) = match held {
                    Some(i) => {
                        let h = inner.holders.swap_remove(i);
                        let fast = h.is_fast();
                        (
                            h.ticket.class,
                            h.took(took),
                            h.clean_looks >= STALLED_LOOKS,
                            fast,
                        )
                    }
                    None => (ticket.class, Some(took), false, false),
                };
                inner
                    .adm
                    .finished(class, held.is_some(), ticket.route, took);
                if fast {
                    self.fast_done.notify_all();
                }
                if unblocked {
                    inner.adm.unblocked(ticket.route);
                }
            }
            // Queued work first (on this thread, no wake-up), then park.
            let queued = if inner.stopping {
                inner.adm.admit_any()
            } else {
                inner.adm.admit_next()
            };
            if let Some((job, route, class)) = queued {
                if class == Class::Long && !inner.stopping {
                    inner = self.let_fast_calls_go_first(inner);
                }
                let ticket = Ticket {
                    route,
                    class,
                    judged: false,
                };
                if class != Class::Blocking {
                    inner.holders.push(Holder::new(&slot, ticket));
                }
                next = Some((job, Some(ticket)));
                continue;
            }
            if inner.stopping {
                break;
            }
            inner.idle.push(Arc::clone(&slot));
            drop(inner);
            let mut job = slot.job.lock().unwrap();
            loop {
                if let Some(j) = job.take() {
                    next = Some(j);
                    break;
                }
                let (guard, timeout) = slot.cond.wait_timeout(job, IDLE_EXIT).unwrap();
                job = guard;
                if job.is_some() {
                    continue;
                }
                let mut inner = self.inner.lock().unwrap();
                let still_idle = inner.idle.iter().position(|s| Arc::ptr_eq(s, &slot));
                if inner.stopping || (timeout.timed_out() && inner.total > self.min) {
                    if let Some(i) = still_idle {
                        inner.idle.remove(i);
                        inner.total -= 1;
                        drop(inner);
                        self.exited.notify_all();
                        return;
                    }
                    // A job is being handed to us right now: take it.
                }
            }
        }
        let mut inner = self.inner.lock().unwrap();
        inner.total -= 1;
        drop(inner);
        self.exited.notify_all();
    }

    /// The watcher's body (its own thread, until `stop`): while calls wait for admission, look
    /// at the admitted ones every `LOOK_EVERY`, demote those seen blocked, and admit queued
    /// calls in their place. Sleeps while no call waits. `non_app_cpu`: CPU time used so far
    /// by the server's threads that never run Python (the event loop's).
    pub fn watch(self: &Arc<Self>, non_app_cpu: impl Fn() -> Option<Duration>) {
        // The previous look: when, and the app threads' CPU time then.
        let mut prev: Option<(Instant, Duration)> = None;
        let mut inner = self.inner.lock().unwrap();
        loop {
            if inner.stopping {
                return;
            }
            if inner.adm.queued_now() == 0 && !inner.holders.iter().any(|h| h.ticket.judged) {
                prev = None;
                for h in inner.holders.iter_mut() {
                    h.cpu_seen = None;
                    h.stalled_looks = 0;
                    h.clean_looks = 0;
                }
                inner = self.queued.wait(inner).unwrap();
                continue;
            }
            drop(inner);
            std::thread::sleep(LOOK_EVERY);
            let now = Instant::now();
            let app_cpu = match (clock_time(libc::CLOCK_PROCESS_CPUTIME_ID), non_app_cpu()) {
                (Some(all), Some(other)) => all
                    .saturating_sub(other)
                    .saturating_sub(clock_time(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or_default()),
                _ => Duration::MAX,
            };
            inner = self.inner.lock().unwrap();
            let window = prev.map(|(t, cpu)| (now.duration_since(t), app_cpu.saturating_sub(cpu)));
            prev = Some((now, app_cpu));
            let mut demoted = Vec::new();
            let mut lengthened = 0;
            let mut long_routes = Vec::new();
            let mut i = 0;
            while i < inner.holders.len() {
                let h = &mut inner.holders[i];
                let ran = now.saturating_duration_since(h.since);
                let cpu = h.slot.cpu_time();
                if h.cpu_first.is_none() {
                    h.cpu_first = cpu;
                    h.app_first = Some(app_cpu);
                }
                let computed = cpu.zip(h.cpu_first).map(|(c, f)| c.saturating_sub(f));
                if h.length != Length::Computing && computed.is_some_and(|c| c >= COMPUTING_CPU) {
                    h.length = Length::Computing;
                    long_routes.push((h.ticket.route, ran));
                }
                if h.ticket.class == Class::Short && ran >= LONG_CALL {
                    h.ticket.class = Class::Long;
                    lengthened += 1;
                    if h.length == Length::Short {
                        h.length = Length::Unsure;
                    }
                }
                if h.length == Length::Unsure {
                    // Past `LONG_CALL` without having computed `COMPUTING_CPU`: did it wait for
                    // the interpreter (its time then says nothing of its route), or compute?
                    let others = h.app_first.zip(computed).map(|(first, own)| {
                        (app_cpu.saturating_sub(first).saturating_sub(own), own)
                    });
                    match others {
                        Some((others, own))
                            if others >= EVIDENCE && others > own * WAITED_SHARE =>
                        {
                            h.length = Length::Waited;
                        }
                        Some((_, own)) if own >= EVIDENCE => {
                            h.length = Length::Computing;
                            long_routes.push((h.ticket.route, ran));
                        }
                        // Not seen long enough, or nobody ran (the machine was busy): look again.
                        _ => {}
                    }
                }
                let was = std::mem::replace(&mut h.cpu_seen, cpu);
                if let (Some((wall, app)), Some(was), Some(cpu)) = (window, was, cpu) {
                    let slot = &h.slot;
                    match stalled(wall, cpu.saturating_sub(was), app, || slot.waiting()) {
                        Some(w) => {
                            h.stalled_looks += 1;
                            h.clean_looks = 0;
                            h.io = w == Waiting::Io;
                        }
                        None => {
                            h.stalled_looks = 0;
                            h.clean_looks += 1;
                        }
                    }
                }
                let needed = if h.io { STALLED_LOOKS } else { LOCK_LOOKS };
                if h.stalled_looks >= needed {
                    let h = inner.holders.swap_remove(i);
                    demoted.push((h.ticket, h.io));
                } else {
                    i += 1;
                }
            }
            for _ in 0..lengthened {
                inner.adm.lengthen();
            }
            for (route, ran) in long_routes {
                inner.adm.mark_long(route, ran);
            }
            for (ticket, io) in demoted {
                inner.adm.demote(ticket.class, ticket.route, io);
            }
            while !inner.idle.is_empty() || inner.total < self.max {
                let Some((job, route, class)) = inner.adm.admit_next() else {
                    break;
                };
                let ticket = Ticket {
                    route,
                    class,
                    judged: false,
                };
                self.start(inner, job, Some(ticket));
                inner = self.inner.lock().unwrap();
            }
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
