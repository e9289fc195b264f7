//! Who runs each call and the loop: the state every server thread shares ([`Shared`]), a
//! call (an HTTP/1.1 request or an HTTP/2 stream, one [`Call`]) run inline on the loop's
//! thread (the loop parked around it) or handed to the pool, the loop's thread driving
//! `next_work` in batches, and a pool thread's job (a call, or the loop itself after a
//! takeover). The scheduler (`scheduler.rs`) decides; this file carries it out, the same way
//! for every protocol.

use std::cell::Cell;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use pyo3::prelude::*;

use super::scheduler::{Scheduler, Unparked};
use crate::io::conn::Conn;
use crate::io::event_loop::{Call, LoopCtx, LoopState};
use crate::io::inline_call::{set_inline_hook, InlineHook, LoopHolder, Settle};
use crate::io::streams::{StreamCall, StreamRunner};
use crate::io::wakeup;
use crate::wsgi::bridge::Bridge;
use crate::wsgi::pool::Pool;

/// What a pool thread is asked to do. (Unboxed: a job moves once, into the pool's queue, and
/// a box would cost each dispatched call an allocation.)
#[allow(clippy::large_enum_variant)]
pub enum Job {
    /// Run one app call.
    Call(Call),
    /// Become the event loop's thread (after a takeover), first letting the blocks of the
    /// response that streamed pile up on its queue when the loop was handed off by a streaming
    /// inline call (`SharedOut::settle`).
    RunLoop(Box<LoopState>, Option<Arc<dyn Settle>>),
}

/// State shared by every thread of the server.
pub struct Shared {
    pub(super) bridge: Bridge,
    pub(super) sched: Scheduler,
    pub(super) pool: Mutex<Option<Arc<Pool<Job>>>>,
    /// eventfd written once when the event loop has finished (shutdown complete).
    pub(super) done_fd: RawFd,
    /// Inline calls that gave the loop away to wait for their connection and still wait
    /// (`LoopHolder::before_wait`): with the pool's threads, within `--threads`.
    pub(super) left_behind: AtomicUsize,
}

impl Shared {
    pub(super) fn pool(&self) -> Arc<Pool<Job>> {
        self.try_pool().expect("pool is set in run()")
    }

    /// The pool, or `None` once the stop has let go of it (the lock is released before the
    /// caller looks, so a late caller never poisons it for `stats()`).
    pub(super) fn try_pool(&self) -> Option<Arc<Pool<Job>>> {
        let pool = self.pool.lock().unwrap().clone();
        pool
    }

    pub(super) fn ctx(&self) -> &LoopCtx {
        &self.bridge.loop_ctx
    }

    /// Run one call on a pool thread (GIL taken here, past the start gate). Dispatched calls are
    /// timed for the scheduler from the moment the GIL is held.
    /// Returns an HTTP/1.1 request's connection and the call's time from that moment
    /// (admission remembers it for the route: a wait for the GIL says nothing of the route).
    pub(super) fn run_on_pool(&self, call: Call) -> (Option<Box<Conn>>, Duration) {
        let _attached = crate::wsgi::release::Attached::enter();
        crate::wsgi::pool::attach_to_start(|py| {
            let clock = self.sched.call_clock();
            let conn = crate::wsgi::run_call(&self.bridge, py, call);
            let took = clock.took();
            // A slow call keeps dispatch mode.
            self.sched.note_call(took);
            (conn, took)
        })
    }

    /// Run one call inline on the loop's thread, attached already. Inline calls are watched
    /// by the watchdog.
    /// `seq`: the number the loop was parked under for it.
    fn run_inline(self: &Arc<Self>, py: Python<'_>, call: Call, seq: u64) -> Option<Box<Conn>> {
        // Should the response stream, or the call wait for its connection, the loop moves to
        // another thread (`LoopHolder`); the hook is this thread's for this call only.
        set_inline_hook(Some(InlineHook {
            holder: Arc::clone(self) as Arc<dyn LoopHolder>,
            seq,
        }));
        let conn = crate::wsgi::run_call(&self.bridge, py, call);
        set_inline_hook(None);
        if LEFT_BEHIND.with(|l| l.replace(false)) {
            self.left_behind.fetch_sub(1, Ordering::SeqCst);
        }
        conn
    }
}

thread_local! {
    /// This thread's inline call gave the loop away to wait and counts in
    /// `Shared::left_behind` until it returns (set by [`LoopHolder::before_wait`], read by
    /// `Shared::run_inline`).
    static LEFT_BEHIND: Cell<bool> = const { Cell::new(false) };
}

impl LoopHolder for Shared {
    /// The response of an inline call streams: hand the parked loop to another thread
    /// ([`hand_loop_over`]: the call goes on producing blocks, and may hold the GIL while it
    /// does). Only the state parked under `seq` may be handed off (see
    /// `Scheduler::release_parked`).
    fn response_streams(self: Arc<Self>, seq: u64, out: Arc<dyn Settle>) {
        if let Some(st) = self.sched.release_parked(seq) {
            hand_loop_over(&self, &self.pool(), st, Some(out));
        }
    }

    /// An inline call is about to wait for its connection: the parked loop goes to another
    /// thread first, and the scheduler to dispatch mode. `false` (the call does not wait)
    /// when one more thread would pass `--threads`.
    fn before_wait(self: Arc<Self>, seq: u64) -> bool {
        let max = self.bridge.config.threads_max;
        let pool = self.try_pool().map_or(0, |p| p.threads());
        if self.left_behind.load(Ordering::SeqCst) >= max.saturating_sub(pool).max(1) {
            return false;
        }
        if let Some(st) = self.sched.release_parked(seq) {
            self.sched.note_handoff();
            self.left_behind.fetch_add(1, Ordering::SeqCst);
            LEFT_BEHIND.with(|l| l.set(true));
            hand_loop_over(&self, &self.pool(), st, None);
        }
        true
    }
}

/// The watchdog took the loop over from an inline call (or the call's response streams): run
/// the loop on another thread, which must serve without the GIL, since the call may hold it
/// inside one C call (a regex, a big `json.dumps`) for as long as it likes. An idle pool
/// thread is detached already; a new pool thread would attach to the interpreter before its
/// first job, so without an idle one the loop gets a thread of its own (detached until it runs
/// a request inline), which joins the pool once the loop is taken from it in turn, as the
/// loop's first thread does.
/// `settle`: the queue of the response that streamed, for a hand-off by a streaming call.
pub(super) fn hand_loop_over(
    shared: &Arc<Shared>,
    pool: &Arc<Pool<Job>>,
    st: Box<LoopState>,
    settle: Option<Arc<dyn Settle>>,
) {
    let Err(job) = pool.submit_to_idle(Job::RunLoop(st, settle)) else {
        return;
    };
    // Kept outside the thread's closure, so that the loop survives a failed spawn.
    let job = Arc::new(Mutex::new(Some(job)));
    let (s, p, j) = (Arc::clone(shared), Arc::clone(pool), Arc::clone(&job));
    let life = pool.life();
    let spawned = std::thread::Builder::new()
        .name("sg-loop".into())
        .stack_size(LOOP_STACK)
        .spawn(move || {
            let Some(Job::RunLoop(st, settle)) = j.lock().unwrap().take() else {
                unreachable!("only the loop is handed over here");
            };
            let end = drive_loop(&s, st, settle);
            // No longer the loop's thread: waiting for the GIL is harmless now.
            Python::attach(|py| {
                if end == LoopEnd::TakenOver {
                    py.detach(|| p.join_as_worker());
                }
                crate::wsgi::start_response::Callables::drop_kept(py);
            });
            drop(s);
            drop(life); // last: `run` waits for it (see `pool::Lives`)
        });
    if let Err(e) = spawned {
        eprintln!(
            "sluicegate: cannot start a thread for the event loop: {e}; a pool thread takes it"
        );
        if let Some(job) = job.lock().unwrap().take() {
            pool.submit_urgent(job);
        }
    }
}

/// The longest a thread handed the loop by a streaming inline call lets that response's blocks
/// pile up before it serves (`SharedOut::settle`); about CPython's switch interval (5 ms),
/// which bounded the same wait when the thread took the GIL first.
const SETTLE_MOST: Duration = Duration::from_millis(3);
/// ... and how long without a new block ends that wait (a producer sleeping between blocks).
const SETTLE_GAP: Duration = Duration::from_micros(200);

/// The stack of a thread started by [`hand_loop_over`]: the loop's first thread's.
const LOOP_STACK: usize = 8 * 1024 * 1024;

/// Inline calls the loop's thread runs one after another while attached, taking them from
/// what the loop has ready already (requests of ready connections, queued streams); then it
/// detaches to wait for events and do the loop's other duties (pool threads' returned
/// connections, streaming hand-offs, the HTTP/2 tasks).
pub(super) const INLINE_BATCH: usize = 16;

/// How long a stop waits for threads that left their loops to finish their last drops (a
/// lock and the GIL for a moment each): a bound, never reached unless the process is starved.
pub(super) const STOP_TAIL: Duration = Duration::from_secs(2);

/// Should `call` run inline on the loop's thread now (else it goes to the pool)? Only a whole
/// request, and only while the scheduler is in inline mode and no stop has begun.
fn runs_inline(shared: &Shared, call: &Call) -> bool {
    call.whole() && inline_now(shared)
}

/// The scheduler's mode, and no stop begun.
fn inline_now(shared: &Shared) -> bool {
    !shared.ctx().shutting_down() && shared.sched.inline_now()
}

/// A call's route, for admission and the watchdog.
fn route_of(call: &Call) -> u64 {
    crate::wsgi::pool::admission::route_hash(call.head().path())
}

/// Hand `call` to the pool. (Once the stop has let go of the pool, a late stream is dropped,
/// which resets it.)
pub(super) fn dispatch(shared: &Shared, call: Call) {
    shared
        .sched
        .dispatched_calls
        .fetch_add(1, Ordering::Relaxed);
    let route = route_of(&call);
    if let Some(pool) = shared.try_pool() {
        pool.submit(Job::Call(call), route);
    }
}

/// How [`drive_loop`] returned.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum LoopEnd {
    /// The loop has shut down.
    ShutDown,
    /// The loop went to another thread while this one was in an inline call (taken over by
    /// the watchdog, handed off by a streaming response, or given away by a call about to
    /// wait for its connection).
    TakenOver,
}

/// The event loop's driver: takes calls from the loop and runs them inline or hands them to
/// the pool. Returns when the loop has shut down, or when the loop was taken over while this
/// thread was in an inline call: the caller then serves as a pool thread (a pool thread by
/// going back to its own worker loop, never by starting one inside this call: the loop moves
/// between threads at every streaming inline response, and a worker loop started here each
/// time nested one call deeper per move, until the stack overflowed, and counted the thread
/// again each time).
///
/// The thread stays attached to the interpreter and detaches only while the loop waits for
/// work (`next_work`: epoll, reads, the HTTP/2 tasks, the loop's duties), as the GIL is needed
/// for the app call that follows: taking it with `PyGILState_Ensure` per request cost about
/// 300 instructions more than `PyEval_RestoreThread`. While attached, the calls the loop has
/// ready already (parsed from events it has, or queued by the tasks' last poll; it waits for
/// no new ones) run one after another, up to [`INLINE_BATCH`]: one GIL take for all of them
/// (about 700 instructions each). The loop is parked during each app call (the watchdog can
/// take it over); its own work between calls (writing back, reading and parsing the next
/// request) runs attached, a few microseconds, as the app call would anyway; a large answer
/// still to write ends the batch and is written detached (`LoopState::next_ready_call`).
pub(super) fn drive_loop(
    shared: &Arc<Shared>,
    st: Box<LoopState>,
    settle: Option<Arc<dyn Settle>>,
) -> LoopEnd {
    if let Some(out) = settle {
        out.settle(SETTLE_MOST, SETTLE_GAP);
    }
    shared.sched.set_loop_thread();
    // The thread's name says its role: a pool thread handed the loop is `sg-loop` while it
    // drives it, and a thread whose loop was taken over is `sg-app` from its return on (it
    // serves as a pool thread). Named once at the spawn, a loop's first thread that joined the
    // pool kept `sg-loop`: its app calls' CPU showed as the loop's (`top -H`, per-thread CPU),
    // while the loop ran on a thread named `sg-app`. (A thread taken over keeps the name until
    // its inline call returns.)
    let _ = super::prctl::name_this_thread("sg-loop");
    // A pool thread handed the loop is `SCHED_OTHER` while it drives it (`wsgi::pool::batch`).
    crate::wsgi::pool::batch::batch_this_thread(false);
    let mut st = Some(st);
    // Serve detached until the first call to run inline, and take the GIL only then: a
    // thread that takes the loop over from an inline call that holds the GIL inside one C call
    // (a regex, a big `json.dumps`) used to wait for that call to end before serving anything,
    // `--health-path` and static files included. (On the loop's first thread this is the same
    // one attach as before, not one more per request.) The loop is parked *before* the thread
    // attaches (`next_inline_parked`): the wait for the GIL is part of the inline call, and the
    // watchdog takes the loop away from a thread that waits for it too long, as from a call
    // that blocks. (A call that holds the GIL in C on another thread, e.g. a streaming answer
    // whose producer kept it after the loop was handed off, used to stall the loop at the next
    // inline request, the health path included, for as long as the C call ran.)
    let end = match next_inline_parked(shared, &mut st) {
        None => LoopEnd::ShutDown,
        Some(first) => Python::attach(|py| {
            let mut parked = first;
            loop {
                if let Some(end) = run_inline_batch(shared, py, &mut st, parked) {
                    return end;
                }
                match py.detach(|| next_inline_parked(shared, &mut st)) {
                    Some(next) => parked = next,
                    None => return LoopEnd::ShutDown,
                }
            }
        }),
    };
    if end == LoopEnd::ShutDown {
        wakeup::ring(shared.done_fd);
    } else {
        let _ = super::prctl::name_this_thread("sg-app");
        crate::wsgi::pool::batch::batch_this_thread(true);
    }
    end
}

/// A call to run inline, the loop parked for it (`Scheduler::park`) under this sequence
/// number and route.
struct ParkedCall {
    call: Call,
    seq: u64,
    route: u64,
}

/// Park the loop in `st` for an inline call of `call` (see `Scheduler::park`).
fn park_for(shared: &Shared, st: &mut Option<Box<LoopState>>, call: Call) -> ParkedCall {
    let route = route_of(&call);
    let seq = shared
        .sched
        .park(st.take().expect("the loop is here"), route);
    ParkedCall { call, seq, route }
}

/// Serve (detached) until a call is to run inline: it is returned with the loop parked for
/// it; the others went to the pool. `None`: the loop has shut down.
fn next_inline_parked(shared: &Shared, st: &mut Option<Box<LoopState>>) -> Option<ParkedCall> {
    let call = {
        let _on_loop = crate::wsgi::release::LoopThread::enter();
        let here = st.as_mut().expect("the loop is here");
        let mut call = here.next_work(shared.ctx())?;
        loop {
            if runs_inline(shared, &call) {
                break call;
            }
            dispatch(shared, call);
            // What is ready already goes first (the rest of the streams queued by the same
            // poll, without polling again for each).
            call = match here.next_ready_call(shared.ctx()) {
                Some(next) => next,
                None => here.next_work(shared.ctx())?,
            };
        }
    };
    Some(park_for(shared, st, call))
}

/// Run `parked` inline (the loop parked for it already), then the calls the loop has ready
/// already, up to [`INLINE_BATCH`], the loop parked around each call. `None`: the batch ended
/// with the loop here; `Some(TakenOver)`: the loop went to another thread meanwhile (`st` is
/// empty).
fn run_inline_batch(
    shared: &Arc<Shared>,
    py: Python<'_>,
    st: &mut Option<Box<LoopState>>,
    mut parked: ParkedCall,
) -> Option<LoopEnd> {
    let mut ran = 0;
    loop {
        let conn = shared.run_inline(py, parked.call, parked.seq);
        match shared.sched.unpark(parked.seq) {
            Unparked::Back(back) => {
                let here = st.insert(back);
                if let Some(conn) = conn {
                    // A large TLS answer is written by the TLS writer (`io/tls_writer.rs`)
                    // while the loop goes on with the other connections ready; with none, the
                    // loop would only wait for events meanwhile, and writes it itself (no
                    // hand-off to pay for).
                    let conn = if here.has_ready() {
                        shared.bridge.loop_ctx.write_away(conn)
                    } else {
                        Some(conn)
                    };
                    if let Some(conn) = conn {
                        here.put_back(conn, shared.ctx());
                    }
                }
            }
            away => {
                if let Unparked::TakenOver { blocked } = away {
                    // The watchdog gave the loop to another thread while the app ran.
                    shared.sched.taken_over_call_ended();
                    // A call that outlived the stop finds the pool let go (it ran on the
                    // loop's old thread, which the stop does not wait for): nothing to count.
                    if let Some(pool) = shared.try_pool() {
                        pool.adopted_finished(parked.route, blocked);
                    }
                }
                // Else the loop was handed off: the response streamed, or the call waited
                // for its connection.
                if let Some(conn) = conn {
                    shared.ctx().return_conn(conn);
                }
                return Some(LoopEnd::TakenOver);
            }
        }
        ran += 1;
        if ran == INLINE_BATCH {
            return None;
        }
        let here = st.as_mut().expect("the loop is here");
        let next = loop {
            match here.next_ready_call(shared.ctx()) {
                None => break None,
                Some(next) if runs_inline(shared, &next) => break Some(next),
                Some(next) => dispatch(shared, next),
            }
        };
        match next {
            Some(next) => parked = park_for(shared, st, next),
            None => return None,
        }
    }
}

/// Run one pool job; for an app call, returns its time from when it held the GIL.
pub(super) fn run_job(shared: &Arc<Shared>, job: Job) -> Option<Duration> {
    match job {
        Job::Call(call) => {
            let (conn, took) = shared.run_on_pool(call);
            if let Some(conn) = conn {
                shared.ctx().return_conn(conn);
            }
            Some(took)
        }
        // Taken over or shut down, this pool thread goes back to its worker loop.
        Job::RunLoop(st, settle) => {
            drive_loop(shared, st, settle);
            None
        }
    }
}

/// The server's answer to the HTTP/2 connections' tasks (`io::h2`): run a whole stream inline
/// now (queued for the loop's driver, as a `Call::Stream`), or hand it to the pool. Weak: the
/// tasks hold it, and the server holds the loop.
///
/// Why inline (measured; benchmarks/results/2026-11-25-design-measurements/): handing every
/// stream to the pool cost more server CPU than the HTTP/2 work and the app call together.
pub(super) struct Runner(pub(super) Weak<Shared>);

impl StreamRunner for Runner {
    fn inline_now(&self) -> bool {
        self.0.upgrade().is_some_and(|s| inline_now(&s))
    }

    fn dispatch(&self, call: StreamCall) {
        if let Some(s) = self.0.upgrade() {
            dispatch(&s, Call::Stream(Box::new(call)));
        }
    }
}
