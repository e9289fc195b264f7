//! Who runs each request and the loop: the state every server thread shares ([`Shared`]), a
//! request run inline on the loop's thread (the loop parked around the call) or handed to the
//! pool, the loop's thread driving `next_work` in batches, and a pool thread's job (a request,
//! or the loop itself after a takeover). The scheduler (`scheduler.rs`) decides; this file
//! carries it out.

use std::cell::Cell;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use super::scheduler::{Scheduler, Unparked};
use crate::io::event_loop::{LoopCtx, LoopState, Turn, Work};
use crate::io::h2::stream::{set_wait_hook, WaitHook};
use crate::io::h2::StreamCall;
use crate::io::shared_out::SharedOut;
use crate::io::wakeup;
use crate::wsgi::bridge::Bridge;
use crate::wsgi::driver::run_request;
use crate::wsgi::h2::run_stream;
use crate::wsgi::pool::Pool;
use crate::wsgi::stream_hook::{set_stream_hook, LoopHolder, StreamHook};

/// What a pool thread is asked to do.
pub enum Job {
    /// Run one request.
    Request(Work),
    /// Become the event loop's thread (after a takeover), first letting the blocks of the
    /// response that streamed pile up on its queue when the loop was handed off by a streaming
    /// inline call (`SharedOut::settle`).
    RunLoop(Box<LoopState>, Option<Arc<SharedOut>>),
    /// Run one HTTP/2 stream's call (`io::h2` dispatches it here).
    Stream(StreamCall),
}

/// State shared by every thread of the server.
pub struct Shared {
    pub(super) bridge: Bridge,
    pub(super) sched: Scheduler,
    pub(super) pool: Mutex<Option<Arc<Pool<Job>>>>,
    /// eventfd written once when the event loop has finished (shutdown complete).
    pub(super) done_fd: RawFd,
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

    /// Run one request on a pool thread (GIL taken here). Dispatched calls are timed for the
    /// scheduler from the moment the GIL is held.
    /// Returns the connection and the call's time from that moment (admission remembers it
    /// for the route: a wait for the GIL says nothing of the route).
    pub(super) fn run_request_here(&self, work: Work) -> (Box<crate::io::conn::Conn>, Duration) {
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
    /// `seq`: the number the loop was parked under for it.
    pub(super) fn run_inline(
        self: &Arc<Self>,
        py: Python<'_>,
        work: Work,
        seq: u64,
    ) -> Box<crate::io::conn::Conn> {
        // Should the response stream, the loop moves to another thread (see
        // `response_streams`); the hook is this thread's for this call only.
        set_stream_hook(Some(StreamHook {
            holder: Arc::clone(self) as Arc<dyn LoopHolder>,
            seq,
        }));
        let conn = run_request(&self.bridge, py, work);
        set_stream_hook(None);
        conn
    }
}

impl LoopHolder for Shared {
    /// The stream hook of an inline call: hand the parked loop to another thread
    /// ([`hand_loop_over`]: the call goes on producing blocks, and may hold the GIL while it
    /// does). Only the state parked under `seq` may be handed off (see
    /// `Scheduler::release_parked`).
    fn response_streams(self: Arc<Self>, seq: u64, out: &Arc<SharedOut>) {
        if let Some(st) = self.sched.release_parked(seq) {
            hand_loop_over(&self, &self.pool(), st, Some(Arc::clone(out)));
        }
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
    settle: Option<Arc<SharedOut>>,
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

/// Inline requests the loop's thread runs one after another while attached, taking them from
/// what the loop has ready already; then it detaches to wait for events and do the loop's other
/// duties (pool threads' returned connections, streaming hand-offs).
pub(super) const INLINE_BATCH: usize = 16;

/// How long a stop waits for threads that left their loops to finish their last drops (a
/// lock and the GIL for a moment each): a bound, never reached unless the process is starved.
pub(super) const STOP_TAIL: Duration = Duration::from_secs(2);

/// Should `work` run inline on the loop's thread now (else it goes to the pool)?
pub(super) fn runs_inline(shared: &Shared, work: &Work) -> bool {
    work.body_buffered && !shared.ctx().shutting_down() && shared.sched.inline_now()
}

/// Hand `work` to the pool.
pub(super) fn dispatch(shared: &Shared, work: Work) {
    shared
        .sched
        .dispatched_calls
        .fetch_add(1, Ordering::Relaxed);
    let route = crate::wsgi::pool::admission::route_hash(work.head.path());
    shared.pool().submit(Job::Request(work), route);
}

/// How [`drive_loop`] returned.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum LoopEnd {
    /// The loop has shut down.
    ShutDown,
    /// The loop went to another thread while this one was in an inline call (taken over by
    /// the watchdog, or handed off by a streaming response).
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
pub(super) fn drive_loop(
    shared: &Arc<Shared>,
    st: Box<LoopState>,
    settle: Option<Arc<SharedOut>>,
) -> LoopEnd {
    if let Some(out) = settle {
        out.settle(SETTLE_MOST, SETTLE_GAP);
    }
    shared.sched.set_loop_thread();
    let mut st = Some(st);
    // Serve detached until the first request to run inline, and take the GIL only then: a
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
                let end = match parked {
                    InlineNext::Call(call) => run_inline_batch(shared, py, &mut st, call),
                    InlineNext::Streams => run_streams(shared, py, &mut st),
                };
                if let Some(end) = end {
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
    }
    end
}

/// A request to run inline, the loop parked for it (`Scheduler::park`) under this sequence
/// number and route.
struct ParkedCall {
    work: Work,
    seq: u64,
    route: u64,
}

/// Park the loop in `st` for an inline call of `work` (see `Scheduler::park`).
pub(super) fn park_for_route(shared: &Shared, st: &mut Option<Box<LoopState>>, route: u64) -> u64 {
    shared
        .sched
        .park(st.take().expect("the loop is here"), route)
}

fn park_for(shared: &Shared, st: &mut Option<Box<LoopState>>, work: Work) -> ParkedCall {
    let route = crate::wsgi::pool::admission::route_hash(work.head.path());
    let seq = shared
        .sched
        .park(st.take().expect("the loop is here"), route);
    ParkedCall { work, seq, route }
}

/// What the loop's thread runs next, attached.
enum InlineNext {
    /// A request, the loop parked for it.
    Call(ParkedCall),
    /// The HTTP/2 streams queued to run inline (each parks the loop around its call).
    Streams,
}

/// Serve (detached) until a request is to run inline: it is returned with the loop parked
/// for it; the others went to the pool. `None`: the loop has shut down.
fn next_inline_parked(shared: &Shared, st: &mut Option<Box<LoopState>>) -> Option<InlineNext> {
    match next_inline(shared, st)? {
        Turn::Request(work) => Some(InlineNext::Call(park_for(shared, st, work))),
        Turn::Streams => Some(InlineNext::Streams),
    }
}

/// Serve (detached) until a request is to run inline: it is returned, the others went to the
/// pool. `None`: the loop has shut down.
fn next_inline(shared: &Shared, st: &mut Option<Box<LoopState>>) -> Option<Turn> {
    let _on_loop = crate::wsgi::release::LoopThread::enter();
    let st = st.as_mut().expect("the loop is here");
    loop {
        match st.next_work(shared.ctx())? {
            Turn::Request(work) if runs_inline(shared, &work) => return Some(Turn::Request(work)),
            Turn::Request(work) => dispatch(shared, work),
            Turn::Streams if streams_inline(shared) => return Some(Turn::Streams),
            Turn::Streams => dispatch_queued(shared),
        }
    }
}

/// Run `call` inline (the loop parked for it already), then the requests the loop has ready
/// already, up to [`INLINE_BATCH`], the loop parked around each call. `None`: the batch ended
/// with the loop here; `Some(TakenOver)`: the loop went to another thread meanwhile (`st` is
/// empty).
fn run_inline_batch(
    shared: &Arc<Shared>,
    py: Python<'_>,
    st: &mut Option<Box<LoopState>>,
    mut call: ParkedCall,
) -> Option<LoopEnd> {
    let mut ran = 0;
    loop {
        let conn = shared.run_inline(py, call.work, call.seq);
        match shared.sched.unpark(call.seq) {
            Unparked::Back(back) => {
                let here = st.insert(back);
                // A large TLS answer is written by the TLS writer (`io/tls_writer.rs`) while the loop
                // goes on with the other connections ready; with none, the loop would only
                // wait for events meanwhile, and writes it itself (no hand-off to pay for).
                let conn = if here.has_ready() {
                    shared.bridge.loop_ctx.write_away(conn)
                } else {
                    Some(conn)
                };
                if let Some(conn) = conn {
                    here.put_back(conn, shared.ctx());
                }
            }
            Unparked::TakenOver { adopted } => {
                // The watchdog gave the loop to another thread while the app ran.
                shared.sched.taken_over_call_ended();
                if adopted {
                    shared.pool().adopted_finished(call.route);
                }
                shared.ctx().return_conn(conn);
                return Some(LoopEnd::TakenOver);
            }
            Unparked::HandedOff => {
                // The response streamed: the loop went to another thread at its second block.
                shared.ctx().return_conn(conn);
                return Some(LoopEnd::TakenOver);
            }
        }
        ran += 1;
        if ran == INLINE_BATCH {
            return None;
        }
        let here = st.as_mut().expect("the loop is here");
        let next = loop {
            match here.next_ready_work(shared.ctx()) {
                None => break None,
                Some(next) if runs_inline(shared, &next) => break Some(next),
                Some(next) => dispatch(shared, next),
            }
        };
        match next {
            Some(next) => call = park_for(shared, st, next),
            None => return None,
        }
    }
}

/// Run one pool job; for an app call, returns its time from when it held the GIL.
pub(super) fn run_job(shared: &Arc<Shared>, job: Job) -> Option<Duration> {
    match job {
        Job::Request(work) => {
            let (conn, took) = shared.run_request_here(work);
            shared.ctx().return_conn(conn);
            Some(took)
        }
        Job::Stream(call) => {
            let _attached = crate::wsgi::release::Attached::enter();
            Some(Python::attach(|py| {
                let start = Instant::now();
                run_stream(&shared.bridge, py, call, false);
                let took = start.elapsed();
                // A slow stream keeps dispatch mode, as a slow request does.
                shared.sched.note_call(took);
                took
            }))
        }
        // Taken over or shut down, this pool thread goes back to its worker loop.
        Job::RunLoop(st, settle) => {
            drive_loop(shared, st, settle);
            None
        }
    }
}

// --- HTTP/2 streams run inline on the loop's thread -------------------------------------------

fn stream_runs_inline(shared: &Shared) -> bool {
    !shared.ctx().shutting_down() && shared.sched.inline_now()
}

pub(super) fn dispatch_stream(shared: &Shared, call: StreamCall) {
    shared
        .sched
        .dispatched_calls
        .fetch_add(1, Ordering::Relaxed);
    let route = crate::wsgi::pool::admission::route_hash(call.head.path());
    if let Some(pool) = shared.try_pool() {
        pool.submit(Job::Stream(call), route);
    }
}

/// Whether queued streams run inline now (else they go to the pool).
pub(super) fn streams_inline(shared: &Shared) -> bool {
    stream_runs_inline(shared)
}

/// Send every queued stream to the pool (the scheduler left inline mode meanwhile).
pub(super) fn dispatch_queued(shared: &Shared) {
    if let Some(hub) = &shared.ctx().settings.h2 {
        for call in hub.inline.drain() {
            dispatch_stream(shared, call);
        }
    }
}

thread_local! {
    /// This thread's inline stream call gave the loop away and counts in
    /// `Inline::left_behind` until it returns (set by [`WaitHook::before_wait`], read by
    /// [`run_streams`]).
    static LEFT_BEHIND: Cell<bool> = const { Cell::new(false) };
}

impl WaitHook for Shared {
    /// An inline call is about to wait for its connection: the parked loop goes to another
    /// thread first, and the scheduler to dispatch mode. `false` (the call does not wait, its
    /// stream is reset) when one more thread would pass `--threads`.
    fn before_wait(self: Arc<Self>, seq: u64) -> bool {
        let Some(hub) = &self.ctx().settings.h2 else {
            return true;
        };
        if !may_leave_behind(&self, hub) {
            return false;
        }
        if let Some(st) = self.sched.release_parked(seq) {
            self.sched.note_handoff();
            hub.inline.left_behind.fetch_add(1, Ordering::SeqCst);
            LEFT_BEHIND.with(|l| l.set(true));
            hand_loop_over(&self, &self.pool(), st, None);
        }
        true
    }
}

/// Whether one more thread may wait in a call apart from the loop: those threads and the
/// pool's together stay within `--threads`.
fn may_leave_behind(shared: &Shared, hub: &crate::io::h2::H2Hub) -> bool {
    let max = shared.bridge.config.threads_max;
    let pool = shared.try_pool().map_or(0, |p| p.threads());
    hub.inline.left_behind.load(Ordering::SeqCst) < max.saturating_sub(pool).max(1)
}

/// Run up to [`INLINE_BATCH`] queued streams here, the loop parked around each. `None`: the
/// loop is back in `st`; `Some(TakenOver)`: it went to another thread meanwhile.
pub(super) fn run_streams(
    shared: &Arc<Shared>,
    py: Python<'_>,
    st: &mut Option<Box<LoopState>>,
) -> Option<LoopEnd> {
    let hub = shared.ctx().settings.h2.as_ref()?;
    let _attached = crate::wsgi::release::Attached::enter();
    for _ in 0..INLINE_BATCH {
        let call = hub.inline.pop()?;
        let route = crate::wsgi::pool::admission::route_hash(call.head.path());
        let seq = park_for_route(shared, st, route);
        set_wait_hook(Some((Arc::clone(shared) as Arc<dyn WaitHook>, seq)));
        run_stream(&shared.bridge, py, call, true);
        set_wait_hook(None);
        if LEFT_BEHIND.with(|l| l.replace(false)) {
            hub.inline.left_behind.fetch_sub(1, Ordering::SeqCst);
        }
        match shared.sched.unpark(seq) {
            Unparked::Back(back) => {
                st.replace(back);
            }
            Unparked::TakenOver { adopted } => {
                shared.sched.taken_over_call_ended();
                if adopted {
                    shared.pool().adopted_finished(route);
                }
                return Some(LoopEnd::TakenOver);
            }
            Unparked::HandedOff => return Some(LoopEnd::TakenOver),
        }
    }
    None
}
