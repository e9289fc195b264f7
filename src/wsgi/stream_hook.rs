//! The per-thread hook the scheduler sets around an inline call (`server::drive`), which the
//! sender fires once when the response turns out to stream: the event loop then moves to
//! another thread while this one goes on producing blocks. A trait the scheduler implements,
//! so that the bridge need not know the scheduler.

use std::cell::RefCell;
use std::sync::Arc;

use crate::io::shared_out::SharedOut;

/// The scheduler's side of an inline call (it holds the parked event loop).
pub trait LoopHolder {
    /// The response of the inline call the loop was parked under `seq` for now streams on
    /// `out`: the loop moves to a thread that can send blocks while this one keeps producing
    /// them, and lets the first blocks pile up on `out` (`SharedOut::settle`). Called once.
    fn response_streams(self: Arc<Self>, seq: u64, out: &Arc<SharedOut>);
}

/// Set by the scheduler around an inline call: who holds the loop, and the number the loop
/// was parked under for this call.
pub struct StreamHook {
    pub holder: Arc<dyn LoopHolder>,
    pub seq: u64,
}

thread_local! {
    static STREAM_HOOK: RefCell<Option<StreamHook>> = const { RefCell::new(None) };
}

/// Set (or clear, with None) the current thread's stream hook.
pub fn set_stream_hook(hook: Option<StreamHook>) {
    // The old hook is dropped outside the borrow.
    let old = STREAM_HOOK.with(|h| h.replace(hook));
    drop(old);
}

/// Is this app call running inline on the event loop's thread (the scheduler set its hook)?
pub fn in_inline_call() -> bool {
    holds_the_loop()
}

/// Is this thread in an inline call that still holds the event loop (its hook not fired)?
pub fn holds_the_loop() -> bool {
    STREAM_HOOK.with(|h| h.borrow().is_some())
}

/// The response now streams on `out`: fire the hook (once) if this thread has one.
pub fn fire_stream_hook(out: &Arc<SharedOut>) {
    if let Some(hook) = STREAM_HOOK.with(|h| h.borrow_mut().take()) {
        hook.holder.response_streams(hook.seq, out);
    }
}
