//! HTTP/2 streams, inline or on the pool: the server's side of `io::h2::inline`.
//!
//! - [`Runner`]: what the HTTP/2 thread asks per stream: run it inline now (the scheduler's
//!   mode, as for an HTTP/1.1 request), or hand it to the pool (`Job::Stream`).
//! - [`drive_h2`]: the body of the thread that holds the driver role: it drives every
//!   connection (`H2Hub::next_batch`) and, between two drives, runs the queued streams'
//!   calls itself, up to [`INLINE_BATCH`] per GIL take (attached once, detached while driving).
//! - [`watch_h2`]: the watchdog of those calls. A batch seen at two looks in a row whose
//!   thread sleeps in the kernel (a sleep, a socket or database wait, the GIL held elsewhere),
//!   or that has computed for `CPU_BOUND_TAKEOVER`, loses the role to a new thread, and the
//!   scheduler goes to dispatch mode: the new thread drives the connections on and sends the
//!   calls still queued to the pool; the stuck call ends on its old thread, which then leaves.
//!   So a blocking app stalls the other streams for two ticks once, then runs on the pool.
//!
//! Why (measured; benchmarks/results/2026-11-25-design-measurements/): handing every stream
//! to the pool cost more server CPU than the HTTP/2 work and the app call together: S15b
//! (`h2load -c16 -m10`, hello world) spent 11.4 µs per request on the HTTP/2 thread and
//! 11.4 µs on pool threads, 3.1 futex calls per request (pool wake-ups, GIL hand-offs between
//! pool threads, the `h2` crate's stream lock contended by two threads) and one runtime
//! wake-up (an eventfd write) per answer sent from a pool thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use super::drive::{Job, Shared, INLINE_BATCH};
use super::scheduler::CPU_BOUND_TAKEOVER;
use super::thread_state::thread_is_sleeping;
use crate::io::h2::stream::set_wait_hook;
use crate::io::h2::{Batch, H2Hub, StreamCall, StreamRunner};
use crate::wsgi::h2::run_stream;

/// The watchdog's interval between looks while batches run: a batch that blocks is taken over
/// after one to two of these.
const H2_TICK: Duration = Duration::from_millis(1);
/// The watchdog sleeps (until the next batch wakes it) after this long without one.
const H2_WATCH_IDLE: Duration = Duration::from_secs(1);

/// The server's answer to the HTTP/2 thread (weak: the runtime's tasks hold it, and the server
/// holds the runtime).
pub(super) struct Runner(pub(super) Weak<Shared>);

impl StreamRunner for Runner {
    fn inline_now(&self) -> bool {
        self.0.upgrade().is_some_and(|s| runs_inline(&s))
    }

    fn dispatch(&self, call: StreamCall) {
        if let Some(s) = self.0.upgrade() {
            dispatch_stream(&s, call);
        }
    }
}

fn runs_inline(shared: &Shared) -> bool {
    !shared.ctx().shutting_down() && shared.sched.inline_now()
}

fn dispatch_stream(shared: &Shared, call: StreamCall) {
    shared
        .sched
        .dispatched_calls
        .fetch_add(1, Ordering::Relaxed);
    let route = crate::wsgi::pool::admission::route_hash(call.head.path());
    if let Some(pool) = shared.try_pool() {
        pool.submit(Job::Stream(call), route);
    }
}

/// Start a thread that takes the driver role (the first one, or after a takeover).
pub(super) fn spawn_driver(shared: &Arc<Shared>, hub: &Arc<H2Hub>) -> std::io::Result<()> {
    let (s, h) = (Arc::clone(shared), Arc::clone(hub));
    std::thread::Builder::new()
        .name("sg-h2".into())
        .spawn(move || drive_h2(&s, &h))
        .map(|_| ())
}

/// What the wait hook of an inline call needs (`hand_off`).
struct HookCtx<'a> {
    shared: &'a Arc<Shared>,
    hub: &'a Arc<H2Hub>,
    seq: u64,
}

/// An inline call is about to wait for its connection (the window, past what the I/O layer
/// holds for it): the role goes to a new thread first, and the scheduler to dispatch mode (the
/// next streams run on the pool instead of each handing the role on). `false`, and the call
/// does not wait (its stream is reset), when no thread may be left behind: the thread bound.
fn hand_off(ctx: *const ()) -> bool {
    // SAFETY: set by `drive_h2` from a `HookCtx` on its stack, which outlives the call that
    // fires the hook (`drive_h2` clears the hook before the context goes).
    let ctx = unsafe { &*(ctx as *const HookCtx<'_>) };
    if !may_leave_behind(ctx.shared, ctx.hub) {
        return false;
    }
    if ctx.hub.inline.take(ctx.seq) {
        ctx.shared.sched.note_handoff();
        left_behind(ctx.shared, ctx.hub);
    }
    true
}

/// Whether one more thread may lose the role and finish its call apart: those threads and the
/// pool's together stay within `--threads`.
fn may_leave_behind(shared: &Shared, hub: &H2Hub) -> bool {
    let max = shared.bridge.config.threads_max;
    let pool = shared.try_pool().map_or(0, |p| p.threads());
    hub.inline.left_behind.load(Ordering::SeqCst) < max.saturating_sub(pool).max(1)
}

/// The role was taken from a thread that goes on with its call: count it, start the new
/// driving thread.
fn left_behind(shared: &Arc<Shared>, hub: &Arc<H2Hub>) {
    hub.inline.left_behind.fetch_add(1, Ordering::SeqCst);
    if let Err(e) = spawn_driver(shared, hub) {
        eprintln!("sluicegate: cannot start a thread for HTTP/2: {e}");
        // The role goes back to that thread when its call returns: it does not leave.
        hub.inline.left_behind.fetch_sub(1, Ordering::SeqCst);
        hub.inline.orphan();
    }
}

/// Hold the driver role: drive the connections, run the streams queued to run inline, until
/// the HTTP/2 work is over (a stop) or the role was taken from this thread.
///
/// The thread attaches to the interpreter at its first batch to run inline, not before: one
/// that takes the role from a call holding the GIL must drive the connections without it.
/// Then it stays attached and detaches while driving (as the event loop's thread does). Each
/// batch begins (`Inline::begin`, watched) before the thread attaches again: the wait for the
/// GIL is part of the batch, and a thread that waits for it too long (a pool thread inside one
/// long C call) loses the role as a call that blocks does, instead of stalling every
/// connection unwatched.
pub(super) fn drive_h2(shared: &Arc<Shared>, hub: &Arc<H2Hub>) {
    let done = match next_inline(shared, hub) {
        None => true,
        Some(first) => Python::attach(|py| {
            let mut seq = first;
            loop {
                if !run_batch(shared, hub, py, seq) {
                    return false;
                }
                match py.detach(|| next_inline(shared, hub)) {
                    Some(next) => seq = next,
                    None => return true,
                }
            }
        }),
    };
    if done {
        hub.finish();
    } else {
        hub.inline.left_behind.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Drive the connections (detached) until streams are queued to run inline: the batch is
/// begun and its number returned; in dispatch mode they go to the pool meanwhile. `None`: the
/// HTTP/2 work is over.
fn next_inline(shared: &Shared, hub: &H2Hub) -> Option<u64> {
    loop {
        if hub.next_batch() == Batch::Done {
            return None;
        }
        if runs_inline(shared) {
            return Some(hub.inline.begin());
        }
        for call in hub.inline.drain() {
            dispatch_stream(shared, call);
        }
    }
}

/// Run the batch begun as `seq`: up to [`INLINE_BATCH`] queued calls, here. `false`: the role
/// was taken from this thread meanwhile (it leaves).
fn run_batch(shared: &Arc<Shared>, hub: &Arc<H2Hub>, py: Python<'_>, seq: u64) -> bool {
    let hook = HookCtx { shared, hub, seq };
    set_wait_hook(Some((hand_off, &hook as *const HookCtx<'_> as *const ())));
    let _attached = crate::wsgi::release::Attached::enter();
    for _ in 0..INLINE_BATCH {
        let Some(call) = hub.inline.next_call(seq) else {
            break;
        };
        shared.sched.inline_calls.fetch_add(1, Ordering::Relaxed);
        run_stream(&shared.bridge, py, call, true);
    }
    set_wait_hook(None);
    hub.inline.end(seq)
}

/// The watchdog of inline HTTP/2 batches (see the module doc); returns once `stop` is set
/// (and `Inline::wake_watch` called).
pub(super) fn watch_h2(shared: &Arc<Shared>, hub: &Arc<H2Hub>, stop: &AtomicBool) {
    let inline = &hub.inline;
    let mut last = inline.look().0;
    let mut moved_at = Instant::now();
    let mut running_since: Option<Instant> = None;
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(H2_TICK);
        let (seq, tid) = inline.look();
        let now = Instant::now();
        if seq != last {
            last = seq;
            moved_at = now;
            running_since = None;
            continue;
        }
        if seq.is_multiple_of(2) {
            if now.duration_since(moved_at) >= H2_WATCH_IDLE {
                inline.doze(seq, stop);
                moved_at = Instant::now();
                last = inline.look().0;
            }
            continue;
        }
        // The same batch at two looks: is it blocked, or computing for too long?
        let since = *running_since.get_or_insert(now);
        let cpu_bound = now.duration_since(since) >= CPU_BOUND_TAKEOVER;
        if (cpu_bound || thread_is_sleeping(tid))
            && may_leave_behind(shared, hub)
            && inline.take(seq)
        {
            shared.sched.note_takeover();
            left_behind(shared, hub);
        }
    }
}
