//! Where an app call runs: inline on the event loop's thread, or on a pool thread.
//!
//! Inline is the fastest way to run an app that returns quickly (no hand-off, no context
//! switch: the thread that read the request calls the app, as a C event loop does). Dispatching
//! is the only way to keep serving while apps block (sleep, database waits). The scheduler
//! switches between the two:
//!
//! - **Inline mode** (the start): requests whose body is already buffered run on the loop
//!   thread. Before each inline call the loop *parks* its whole state (`LoopState`) in a slot,
//!   and takes it back after the call: two uncontended lock operations.
//! - **Watchdog**: a thread that looks every tick (`TICK_MIN` to `TICK_MAX`, see below). If the
//!   same inline call is still running
//!   at two looks in a row *and the loop thread is asleep in the kernel* (state `S` or `D` in
//!   /proc: a sleep, a socket or database wait, a lock — what blocking means; a wait for the
//!   GIL only while no other thread can run, `thread_state::thread_wait`), it takes the
//!   parked loop state and hands it to another thread,
//!   which carries on serving; the stuck thread finishes its request and becomes a pool thread
//!   (as the Go runtime hands a processor away from a thread blocked in a system call). The
//!   mode becomes *dispatch*.
//!   A thread that is runnable (`R`) is computing, or was preempted by the OS on a busy
//!   machine: wall time alone would mistake that for blocking (measured: on a 2-core machine
//!   with wrk on the other core, hello world flipped to dispatch mode within seconds and lost
//!   half its throughput to GIL hand-offs). A call that computes for `CPU_BOUND_TAKEOVER` is
//!   taken over all the same, so the loop keeps accepting.
//! - **Dispatch mode**: every request goes to the pool. Calls that take longer than
//!   `SLOW_CALL` (measured from when the GIL was taken, so waiting for the GIL does not count)
//!   keep the mode; after `REVERT_AFTER` without a slow call, the mode goes back to inline.
//!
//! So a blocking app costs one takeover, then runs dispatched at full pool width, and a fast
//! app pays no hand-off.
//!
//! The watchdog's own cost is its wake-ups. It starts at `TICK_MIN`; each `CALM_LOOKS` looks in a
//! row that find no call outlasting a tick double the tick, up to `TICK_MAX`; a call seen across
//! two looks brings it back to `TICK_MIN` while it runs. A look that finds a call it has not seen
//! before looks again one `TICK_MIN` later (not after such a re-look itself: under steady load
//! the looks come in pairs, a tick apart, `Watch::look`), so a call that blocks is taken over
//! within one tick plus `TICK_MIN` (after a calm spell: 4–4.25 ms once, then dispatch mode
//! takes over). A call
//! that ends by itself (one the OS preempted on a busy machine, or one that computed) puts the
//! tick back where it was; after a takeover it ramps up again from `TICK_MIN`. (Measured with
//! `ab -c1`, one new connection per request: a steady 250 µs tick cost 3 µs of the 35 µs of
//! server CPU per request. Behind nginx at 5–8k new connections a second, each wake-up of the
//! watchdog costs it about 20 µs of CPU on a 2-core VM: the 2 ms tick that was `TICK_MAX` cost
//! 1.4–1.8 µs of the 12 µs of server CPU per request.)
//! When calls are rare even at `TICK_MAX` (large responses over keep-alive connections: one
//! call per many ticks), the watchdog stops ticking and sleeps between calls; each call wakes
//! it (one futex wake in `park`) and it watches that call from `TICK_MIN` until it ends
//! (`SPARSE_GAP`). It sleeps so too after `WATCHDOG_IDLE_AFTER` without a call, and in dispatch
//! mode, where no call runs inline to be judged (after a takeover, until the mode ends and an
//! inline call wakes it: `Watch::look`). Woken while calls come close together again, it looks
//! at the waking call from `TICK_MIN` and then takes up the tick it slept at (`Watch::woken`):
//! no ramp from `TICK_MIN` each time calls resume.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use super::thread_state::{thread_wait, Wait};
use crate::clock::clock_time;
use crate::config::Policy;
use crate::io::event_loop::LoopState;
use crate::observe::allowance::{self, Allowance};

mod call_time;
mod judge;
#[cfg(test)]
mod replay;
mod watch;
pub use call_time::CallClock;
use judge::{Found, Judge, Verdict};
use watch::{Look, Watch};

/// The watchdog's shortest interval between looks: a call blocked for two ticks (0.25–0.5 ms)
/// is taken over.
pub const TICK_MIN: Duration = Duration::from_micros(250);
/// The longest interval, reached while calls stay short (see the module doc). A call first seen
/// running at a look is looked at again one `TICK_MIN` later (`Watch::next_sleep`), so a call
/// that blocks after a calm spell is taken over within `TICK_MAX + TICK_MIN` (and within
/// `2 × TICK_MIN` while the tick is short).
const TICK_MAX: Duration = Duration::from_millis(4);
/// The interval between looks while the loop thread is seen computing (its CPU clock advanced by
/// half the time since the last look): such a call can only be judged for its CPU (`PREEMPT_CPU`,
/// `CPU_BOUND_TAKEOVER`), and looking every `TICK_MIN` woke the watchdog four times per 1 ms
/// request, each wake-up taking a core from a loop when every core is busy (two worker
/// processes on two cores: S9). A call that computes and then blocks is taken over within this
/// plus two ticks.
const TICK_COMPUTING: Duration = Duration::from_millis(1);
/// Looks in a row without a call outlasting a tick before the tick doubles.
const CALM_LOOKS: u32 = 64;
/// A call that keeps computing (runnable, holding the GIL) is taken over after this long.
pub const CPU_BOUND_TAKEOVER: Duration = Duration::from_millis(50);
/// A call that has used this much CPU while other work waits (requests queued behind it,
/// connections to read, a health check) is taken over, whatever it is doing: the loop goes to
/// another thread and the call goes on as a pool call, so short requests and checks reach the
/// interpreter within a few switch intervals instead of waiting for every long call queued
/// before them. One switch interval of CPython (5 ms): a call that has had the interpreter
/// that long would lose it to any waiting thread on the pool anyway. CPU time, not wall
/// time: a thread preempted by the OS on a busy machine uses none, so preemption is never
/// mistaken for a long call (hello world at 64 clients never comes near it).
const PREEMPT_CPU: Duration = Duration::from_millis(5);
/// A call longer than this counts as blocking.
pub const SLOW_CALL: Duration = Duration::from_millis(1);
/// Dispatch mode ends after this long without a slow call.
pub const REVERT_AFTER: Duration = Duration::from_secs(1);
/// Sparse mode (the watchdog sleeps between inline calls, woken by each) ends when a call
/// comes sooner than this after the previous one. Entered when calls are rarer than one per
/// two looks at `TICK_MAX`. Measured on 64 MiB `[bytes]` responses over one keep-alive
/// connection (one call per 16 ms): eight 2 ms ticks per response cost 1.3–1.4 ms of server
/// CPU per response (15.4–16.3 ms against 14.1–14.5 ms with no watchdog), far more than
/// their own CPU time (a wake-up on a busy core disturbs the copying threads).
const SPARSE_GAP: Duration = Duration::from_millis(8);
/// How often the watchdog reads the allowance again (`Scheduler::refresh_quota`).
const QUOTA_READ_EVERY: Duration = Duration::from_secs(1);
/// The watchdog sleeps (instead of ticking) after this long without an inline call.
const WATCHDOG_IDLE_AFTER: Duration = Duration::from_secs(1);

/// What became of the loop state an inline call parked (`Scheduler::unpark`).
pub enum Unparked {
    /// Nobody took it: the call's thread drives the loop on.
    Back(Box<LoopState>),
    /// The watchdog took it over, and the pool counted the call as its own: in the blocking
    /// class's room if it was taken over while it waited in the kernel (`blocked`), else as a
    /// long call.
    TakenOver { blocked: bool },
    /// The call's response streamed and its thread gave the loop away (`release_parked`).
    HandedOff,
}

/// Where the next request runs, under the adaptive policy. Stored in an `AtomicU8` as its
/// discriminant (read on every request: one relaxed load).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Mode {
    /// On the loop's thread (the start, and after `REVERT_AFTER` without a slow call).
    Inline = 0,
    /// On the pool (after a takeover or a slow call).
    Dispatch = 1,
}

pub struct Scheduler {
    policy: Policy,
    /// The process's cgroup has a CPU quota (`observe::allowance`): a call's time on the wall
    /// then includes the periods the quota stopped it, which `call_time` takes off.
    under_quota: AtomicBool,
    /// When the allowance was last read (ns since `epoch`): again every `QUOTA_READ_EVERY`, by
    /// the watchdog (a process moved into a cgroup, or a quota set, after it started).
    quota_read: AtomicU64,
    /// The cgroup's throttled periods at that reading (`u64::MAX`: none read yet), so that the
    /// next tells whether the quota stopped the process in between (the start gate's places).
    throttled_seen: AtomicU64,
    mode: AtomicU8,
    /// Incremented when a loop state is parked for an inline call and when it leaves the slot
    /// (taken back, or taken over): odd exactly while a state is parked.
    inline_seq: AtomicU64,
    /// The loop state while its thread is inside an inline call.
    parked: Mutex<Option<Box<LoopState>>>,
    /// The route (`admission::route_hash`) of the inline call that parked it.
    inline_route: AtomicU64,
    /// Inline calls whose loop state the watchdog took, by sequence number (`inline_seq` while
    /// parked), until their threads learn it (`unpark`); `true`: taken over while it waited in
    /// the kernel (`Pool::adopt_blocked`), else for computing (`Pool::adopt_long`). The call's
    /// thread ends the pool's count.
    taken: Mutex<Vec<(u64, bool)>>,
    /// Inline calls taken over that are still running. Dispatch mode lasts while there is one:
    /// such a call may hold the GIL inside one C call for as long as it likes, and a loop
    /// thread back in inline mode would wait for the GIL before serving anything.
    taken_running: AtomicU32,
    /// Nanoseconds since `epoch` of the last slow call.
    last_slow: AtomicU64,
    epoch: Instant,
    watchdog_sleeping: AtomicBool,
    watchdog_lock: Mutex<bool>,
    watchdog_cond: Condvar,
    pub takeovers: AtomicU64,
    /// Loop hand-offs made by inline calls whose response streams.
    pub handoffs: AtomicU64,
    /// Takeovers of a call that computed for `PREEMPT_CPU` while other work waited.
    pub preemptions: AtomicU64,
    pub inline_calls: AtomicU64,
    pub dispatched_calls: AtomicU64,
    stopping: AtomicBool,
    /// Kernel thread id of the thread driving the loop (for its /proc state).
    loop_tid: AtomicI32,
    /// Its pthread handle (for its CPU clock).
    loop_thread: AtomicU64,
}

impl Scheduler {
    pub fn new(policy: Policy) -> Scheduler {
        Scheduler {
            policy,
            under_quota: AtomicBool::new(Allowance::read().quota.is_some()),
            quota_read: AtomicU64::new(0),
            throttled_seen: AtomicU64::new(u64::MAX),
            mode: AtomicU8::new(if policy == Policy::Pool {
                Mode::Dispatch as u8
            } else {
                Mode::Inline as u8
            }),
            inline_seq: AtomicU64::new(0),
            parked: Mutex::new(None),
            inline_route: AtomicU64::new(0),
            taken: Mutex::new(Vec::new()),
            taken_running: AtomicU32::new(0),
            last_slow: AtomicU64::new(0),
            epoch: Instant::now(),
            watchdog_sleeping: AtomicBool::new(false),
            watchdog_lock: Mutex::new(false),
            watchdog_cond: Condvar::new(),
            takeovers: AtomicU64::new(0),
            handoffs: AtomicU64::new(0),
            preemptions: AtomicU64::new(0),
            inline_calls: AtomicU64::new(0),
            dispatched_calls: AtomicU64::new(0),
            stopping: AtomicBool::new(false),
            loop_tid: AtomicI32::new(0),
            loop_thread: AtomicU64::new(0),
        }
    }

    pub fn mode_name(&self) -> &'static str {
        if self.mode.load(Ordering::Relaxed) == Mode::Inline as u8 {
            "inline"
        } else {
            "dispatch"
        }
    }

    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Should the next request run inline? Also ends dispatch mode when calls have been quick
    /// for `REVERT_AFTER` and no call taken over is still running.
    pub fn inline_now(&self) -> bool {
        match self.policy {
            Policy::Inline => return true,
            Policy::Pool => return false,
            Policy::Adaptive => {}
        }
        if self.mode.load(Ordering::Relaxed) == Mode::Inline as u8 {
            return true;
        }
        if self.taken_running.load(Ordering::Relaxed) > 0 {
            return false;
        }
        let since = self
            .now_ns()
            .saturating_sub(self.last_slow.load(Ordering::Relaxed));
        if since > REVERT_AFTER.as_nanos() as u64 {
            self.mode.store(Mode::Inline as u8, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// Time a pool call from the moment it holds the GIL: the clock is started before the call
    /// and read (`CallClock::took`) after it. Under a CPU quota the time the thread waited to
    /// run (the cgroup's throttled periods) is not counted (`call_time`): a throttled call did
    /// not block, and judged by the wall it would keep the server in dispatch mode and mark its
    /// route long.
    /// Whether the process is under a quota is the watchdog's last reading (`refresh_quota`):
    /// one atomic load here, where the call holds the GIL and its admission.
    pub fn call_clock(&self) -> CallClock {
        CallClock::start(self.under_quota.load(Ordering::Relaxed))
    }

    /// Read again whether the process's cgroup has a CPU quota (and the start gate's places,
    /// `wsgi::pool::note_allowance`: whether the quota stopped the process since the last
    /// reading), once `QUOTA_READ_EVERY` has passed since the last
    /// reading. On the watchdog's thread (each look, and each `QUOTA_READ_EVERY` while it
    /// dozes), never an app call's: read at a pool call's start,
    /// the cgroup files took 0.2 ms (median) to 39 ms on a loaded 2-core machine, with the GIL
    /// held (every other Python thread waited) and counted in the call's wall time (a 3 ms
    /// call ran past `admission::LONG_CALL`).
    fn refresh_quota(&self) {
        let now = self.now_ns();
        let last = self.quota_read.load(Ordering::Relaxed);
        if now.saturating_sub(last) >= QUOTA_READ_EVERY.as_nanos() as u64 {
            self.quota_read.store(now, Ordering::Relaxed);
            let a = Allowance::read();
            self.under_quota.store(a.quota.is_some(), Ordering::Relaxed);
            // The start gate's places under `--start-gate auto` follow the same reading.
            let now_throttled = a.throttling().map(|t| t.throttled);
            let before = self
                .throttled_seen
                .swap(now_throttled.unwrap_or(u64::MAX), Ordering::Relaxed);
            let throttled =
                allowance::throttled_between((before != u64::MAX).then_some(before), now_throttled);
            crate::wsgi::pool::note_allowance(crate::wsgi::pool::allowance_binds(
                &a,
                allowance::online_cpus(),
                throttled,
            ));
        }
    }

    /// Record a dispatched call's duration (from taking the GIL); slow calls keep dispatch
    /// mode. (Inline calls are judged by the watchdog, which can tell blocking from preemption.)
    pub fn note_call(&self, took: Duration) {
        if took > SLOW_CALL {
            self.note_slow();
        }
    }

    /// The calling thread now drives the event loop.
    pub fn set_loop_thread(&self) {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        self.loop_tid.store(tid, Ordering::Relaxed);
        // SAFETY: pthread_self has no preconditions.
        let thread = unsafe { libc::pthread_self() };
        self.loop_thread.store(thread as u64, Ordering::Relaxed);
    }

    /// An inline call handed the loop on before waiting for its connection
    /// (`LoopHolder::before_wait`): a slow call, as a takeover is.
    pub fn note_handoff(&self) {
        self.handoffs.fetch_add(1, Ordering::Relaxed);
        self.note_slow();
    }

    fn note_slow(&self) {
        self.last_slow.store(self.now_ns(), Ordering::Relaxed);
        if self.policy == Policy::Adaptive {
            self.mode.store(Mode::Dispatch as u8, Ordering::Relaxed);
        }
    }

    /// Before an inline call to `route` (before its thread attaches to the interpreter: the
    /// wait for the GIL is part of the call, see `drive::drive_loop`): leave the loop state
    /// where the watchdog can take it. Returns the call's sequence number (for `unpark`).
    pub fn park(&self, st: Box<LoopState>, route: u64) -> u64 {
        let seq = {
            // The sequence number moves with the parked state, under its lock: odd exactly
            // while a state is parked. (SeqCst pairs with the watchdog's going to sleep: either
            // it sees this call's number, or this sees it asleep and wakes it.)
            let mut parked = self.parked.lock().unwrap();
            *parked = Some(st);
            self.inline_route.store(route, Ordering::Relaxed);
            self.inline_seq.fetch_add(1, Ordering::SeqCst) + 1
        };
        self.inline_calls.fetch_add(1, Ordering::Relaxed);
        if self.watchdog_sleeping.load(Ordering::SeqCst) {
            let _g = self.watchdog_lock.lock().unwrap();
            self.watchdog_sleeping.store(false, Ordering::Relaxed);
            self.watchdog_cond.notify_one();
        }
        seq
    }

    /// A call whose loop state was taken over (`unpark` said `TakenOver`) has returned.
    pub fn taken_over_call_ended(&self) {
        self.taken_running.fetch_sub(1, Ordering::Relaxed);
    }

    /// After the inline call parked as `seq`: the loop state back, or who took it. Only the
    /// call's own state comes back: after a streaming hand-off (`release_parked`) the slot may
    /// hold the state another thread parked since, for a call of its own, which taking would
    /// have stolen the loop from under that call (and counted a takeover that never was).
    pub fn unpark(&self, seq: u64) -> Unparked {
        let mut parked = self.parked.lock().unwrap();
        if self.inline_seq.load(Ordering::SeqCst) == seq {
            if let Some(st) = parked.take() {
                self.inline_seq.fetch_add(1, Ordering::SeqCst);
                return Unparked::Back(st);
            }
        }
        drop(parked);
        let mut taken = self.taken.lock().unwrap();
        match taken.iter().position(|&(s, _)| s == seq) {
            Some(i) => Unparked::TakenOver {
                blocked: taken.swap_remove(i).1,
            },
            None => Unparked::HandedOff,
        }
    }

    /// The inline call's response streams: give the parked loop state up now (without changing
    /// the mode), so another thread sends its blocks while this one produces them.
    /// `seq`: the call's number; its state only (the watchdog may have taken it already, and
    /// the slot then holds another thread's).
    pub fn release_parked(&self, seq: u64) -> Option<Box<LoopState>> {
        let mut parked = self.parked.lock().unwrap();
        if self.inline_seq.load(Ordering::SeqCst) != seq {
            return None;
        }
        let st = parked.take();
        if st.is_some() {
            self.inline_seq.fetch_add(1, Ordering::SeqCst);
            self.handoffs.fetch_add(1, Ordering::Relaxed);
        }
        st
    }

    /// The watchdog's body: sleep a tick, look (`Watch::look`), act on what it says.
    /// `hand_over` runs the taken loop state on another thread; `adopt` counts a call taken
    /// over as the pool's: its route, how long it had run, and whether it was waiting in the
    /// kernel (`Pool::adopt_blocked`) or computing (`Pool::adopt_long`).
    pub fn watchdog(
        &self,
        hand_over: impl Fn(Box<LoopState>),
        adopt: impl Fn(u64, Duration, bool),
    ) {
        let mut watch = Watch::new(Instant::now());
        let mut judge = Judge::default();
        let mut computing = false;
        while !self.stopping.load(Ordering::Relaxed) {
            std::thread::sleep(watch.next_sleep(computing));
            computing = false;
            self.refresh_quota();
            let seq = self.inline_seq.load(Ordering::Acquire);
            let dispatching = self.mode.load(Ordering::Relaxed) == Mode::Dispatch as u8;
            match watch.look(seq, Instant::now(), dispatching) {
                Look::Running {
                    first,
                    read_state,
                    cpu_bound,
                } => {
                    let now = Instant::now();
                    let verdict = judge.look(
                        first,
                        read_state,
                        cpu_bound,
                        now,
                        self.loop_cpu_time(),
                        || self.loop_found(),
                        || self.work_waiting(),
                    );
                    computing = judge.ran;
                    if verdict != Verdict::Leave {
                        // The call goes on outside the loop: the pool counts it, a computing call
                        // as one holding the interpreter, a blocked one as one waiting.
                        let blocked = verdict == Verdict::Blocked;
                        let ran = now.saturating_duration_since(watch.running_since);
                        let taken = self.take_parked(blocked, |route| adopt(route, ran, blocked));
                        watch.judged(taken.is_some());
                        if let Some(st) = taken {
                            self.takeovers.fetch_add(1, Ordering::Relaxed);
                            if verdict == Verdict::Hogging {
                                self.preemptions.fetch_add(1, Ordering::Relaxed);
                            }
                            self.note_slow();
                            hand_over(st);
                        }
                    }
                }
                Look::Calm => {}
                Look::Doze => {
                    self.doze(seq);
                    watch.woken(Instant::now());
                }
            }
        }
    }

    /// CPU time (user + system) the loop thread has used so far: its POSIX thread CPU clock,
    /// one `clock_gettime`. `None` before a loop thread is known.
    pub fn loop_cpu_time(&self) -> Option<Duration> {
        let thread = self.loop_thread.load(Ordering::Relaxed);
        if thread == 0 {
            return None;
        }
        let mut clock: libc::clockid_t = 0;
        // SAFETY: `thread` is the pthread handle of a thread of this process that drove the
        // loop; the threads that do never exit while the server runs (they go back to the
        // pool). `clock` is a valid out-pointer.
        if unsafe { libc::pthread_getcpuclockid(thread as libc::pthread_t, &mut clock) } != 0 {
            return None;
        }
        clock_time(clock)
    }

    /// Where the loop thread is (`thread_wait`), for the judge; for a wait for the GIL, with the
    /// process's CPU clock (charged to the call: `judge.rs`).
    fn loop_found(&self) -> Found {
        match thread_wait(self.loop_tid.load(Ordering::Relaxed)) {
            Wait::Runnable => Found::Runnable,
            Wait::Asleep => Found::Asleep,
            Wait::ForGil => Found::ForGil {
                process_cpu: clock_time(libc::CLOCK_PROCESS_CPUTIME_ID),
            },
        }
    }

    /// Is other work waiting behind the inline call that holds the parked loop state?
    fn work_waiting(&self) -> bool {
        self.parked
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|st| st.has_waiting_work())
    }

    /// Take the parked loop state away from the inline call that holds it (`blocked`: it waits
    /// in the kernel). `adopt` runs under the same lock, with the call's route, so the pool
    /// counts the call before its thread, which learns it was taken over under this lock, can
    /// end the count.
    fn take_parked(&self, blocked: bool, adopt: impl FnOnce(u64)) -> Option<Box<LoopState>> {
        let mut parked = self.parked.lock().unwrap();
        let st = parked.take();
        if st.is_some() {
            adopt(self.inline_route.load(Ordering::Relaxed));
            let seq = self.inline_seq.load(Ordering::SeqCst);
            self.taken.lock().unwrap().push((seq, blocked));
            self.taken_running.fetch_add(1, Ordering::Relaxed);
            // The stuck call no longer holds the loop: the number is even again and the next
            // inline call (on the new loop thread) makes it odd.
            self.inline_seq.fetch_add(1, Ordering::SeqCst);
        }
        st
    }

    /// Nothing runs inline: sleep until the next inline call (`park`) wakes us, waking every
    /// `QUOTA_READ_EVERY` to read the allowance again (`refresh_quota`: pool calls use it).
    fn doze(&self, seq: u64) {
        let mut g = self.watchdog_lock.lock().unwrap();
        self.watchdog_sleeping.store(true, Ordering::SeqCst);
        if self.inline_seq.load(Ordering::SeqCst) != seq {
            self.watchdog_sleeping.store(false, Ordering::SeqCst);
        }
        while self.watchdog_sleeping.load(Ordering::Relaxed)
            && !self.stopping.load(Ordering::Relaxed)
        {
            let (guard, waited) = self
                .watchdog_cond
                .wait_timeout(g, QUOTA_READ_EVERY)
                .unwrap();
            g = guard;
            if waited.timed_out() {
                // Not under the lock: an inline call's `park` takes it to wake us.
                drop(g);
                self.refresh_quota();
                g = self.watchdog_lock.lock().unwrap();
            }
        }
    }

    pub fn stop_watchdog(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        let _g = self.watchdog_lock.lock().unwrap();
        self.watchdog_sleeping.store(false, Ordering::Relaxed);
        self.watchdog_cond.notify_all();
    }
}

#[cfg(test)]
mod tests;
