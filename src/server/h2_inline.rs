//! HTTP/2 streams, inline or on the pool: the server's side of `io::h2::inline`.
//!
//! - [`Runner`]: what a connection's task asks per stream: run it inline now (the scheduler's
//!   mode, as for an HTTP/1.1 request), or hand it to the pool (`Job::Stream`).
//! - [`run_streams`]: the loop's thread runs the queued streams' calls itself, up to
//!   [`INLINE_BATCH`] per GIL take, the loop parked around each call as for an HTTP/1.1
//!   request, so the scheduler's watchdog takes a blocking call's loop the same way. A call
//!   about to wait for its own connection (window, a DATA frame) gives the parked loop to
//!   another thread first (`stream::set_wait_hook`): nobody else would drive the connection.
//!
//! Why inline (measured; benchmarks/results/2026-11-25-design-measurements/): handing every
//! stream to the pool cost more server CPU than the HTTP/2 work and the app call together.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use pyo3::prelude::*;

use super::drive::{hand_loop_over, park_for_route, Job, LoopEnd, Shared, INLINE_BATCH};
use super::scheduler::Unparked;
use crate::io::event_loop::LoopState;
use crate::io::h2::stream::set_wait_hook;
use crate::io::h2::{StreamCall, StreamRunner};
use crate::wsgi::h2::run_stream;

/// The server's answer to the connections' tasks (weak: the tasks hold it, and the server
/// holds the loop).
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

/// Whether queued streams run inline now (else they go to the pool).
pub(super) fn streams_inline(shared: &Shared) -> bool {
    runs_inline(shared)
}

/// Send every queued stream to the pool (the scheduler left inline mode meanwhile).
pub(super) fn dispatch_queued(shared: &Shared) {
    if let Some(hub) = &shared.ctx().settings.h2 {
        for call in hub.inline.drain() {
            dispatch_stream(shared, call);
        }
    }
}

/// What the wait hook of an inline stream needs.
struct HookCtx<'a> {
    shared: &'a Arc<Shared>,
    seq: u64,
    /// This call gave the loop away and counts in `Inline::left_behind` until it returns.
    left: std::cell::Cell<bool>,
}

/// An inline call is about to wait for its connection: the parked loop goes to another thread
/// first, and the scheduler to dispatch mode. `false` (the call does not wait, its stream is
/// reset) when one more thread would pass `--threads`.
fn hand_off(ctx: *const ()) -> bool {
    // SAFETY: set by `run_streams` from a `HookCtx` on its stack, which outlives the call that
    // fires the hook (`run_streams` clears the hook before the context goes).
    let ctx = unsafe { &*(ctx as *const HookCtx<'_>) };
    let shared = ctx.shared;
    let Some(hub) = &shared.ctx().settings.h2 else {
        return true;
    };
    if !may_leave_behind(shared, hub) {
        return false;
    }
    if let Some(st) = shared.sched.release_parked(ctx.seq) {
        shared.sched.note_handoff();
        hub.inline.left_behind.fetch_add(1, Ordering::SeqCst);
        ctx.left.set(true);
        hand_loop_over(shared, &shared.pool(), st, None);
    }
    true
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
        let hook = HookCtx {
            shared,
            seq,
            left: std::cell::Cell::new(false),
        };
        set_wait_hook(Some((hand_off, &hook as *const HookCtx<'_> as *const ())));
        run_stream(&shared.bridge, py, call, true);
        set_wait_hook(None);
        if hook.left.get() {
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
