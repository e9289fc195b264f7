//! The one hook the server sets around an inline call, whatever its protocol (`server::drive`,
//! `Shared::run_inline`): the loop's thread runs the app while the loop is parked, and two
//! moments of the call need the loop moved to another thread first, since this thread cannot
//! both go on with the call and serve the loop:
//!
//! - an HTTP/1.1 response turns out to stream (the sender, at its second block):
//!   [`fire_stream_hook`] → [`LoopHolder::response_streams`];
//! - a call is about to wait for its own connection (an HTTP/2 stream's DATA frame or send
//!   window, `io/h2/stream.rs`), which only the loop would read: [`may_wait`] →
//!   [`LoopHolder::before_wait`].
//!
//! A trait the server implements, set per thread for one call with the number the loop was
//! parked under, so that neither `io` nor `wsgi` knows the scheduler. Fired once: the hook is
//! taken when the loop leaves.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

/// A streaming response's queue as the thread that takes the loop sees it: it lets the first
/// blocks pile up before it serves (`SharedOut::settle`), at most `most`, or until no block
/// came for `gap`.
pub trait Settle: Send + Sync {
    fn settle(&self, most: Duration, gap: Duration);
}

/// The server's side of an inline call (it holds the parked event loop).
pub trait LoopHolder: Send + Sync {
    /// The response of the call the loop was parked under `seq` for now streams on `out`:
    /// the loop moves to a thread that can send blocks while this one keeps producing them,
    /// and lets the first blocks pile up on `out` ([`Settle`]).
    fn response_streams(self: Arc<Self>, seq: u64, out: Arc<dyn Settle>);
    /// The call parked under `seq` is about to wait for its own connection: the loop moves to
    /// another thread first. `false` when no thread may be started for it (the thread bound):
    /// the wait fails at once (`WouldBlock`) and the hook stays for the next wait.
    fn before_wait(self: Arc<Self>, seq: u64) -> bool;
}

/// Set around an inline call: who holds the loop, and the number it was parked under.
pub struct InlineHook {
    pub holder: Arc<dyn LoopHolder>,
    pub seq: u64,
}

thread_local! {
    static HOOK: RefCell<Option<InlineHook>> = const { RefCell::new(None) };
}

/// Set (or clear, with None) the current thread's hook.
pub fn set_inline_hook(hook: Option<InlineHook>) {
    // The old hook is dropped outside the borrow.
    let old = HOOK.with(|h| h.replace(hook));
    drop(old);
}

/// Is this thread in an inline call that still holds the event loop (its hook not fired)?
/// Read at a call's start, it says whether the call runs inline (the access log's timings).
pub fn holds_the_loop() -> bool {
    HOOK.with(|h| h.borrow().is_some())
}

/// The response now streams on `out`: fire the hook (once) if this thread has one.
pub fn fire_stream_hook(out: Arc<dyn Settle>) {
    if let Some(hook) = HOOK.with(|h| h.borrow_mut().take()) {
        hook.holder.response_streams(hook.seq, out);
    }
}

/// The call is about to wait for its connection: ask the hook, if any, whether it may. A
/// `true` clears it (the loop has left); a `false` keeps it for the next wait.
pub fn may_wait() -> bool {
    let Some(hook) = HOOK.with(|h| h.borrow_mut().take()) else {
        return true;
    };
    if Arc::clone(&hook.holder).before_wait(hook.seq) {
        return true;
    }
    HOOK.with(|h| *h.borrow_mut() = Some(hook));
    false
}
