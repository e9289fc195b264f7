//! The per-thread hook the scheduler sets around an inline call (`server::drive`), which the
//! sender fires once when the response turns out to stream: the event loop then moves to
//! another thread while this one goes on producing blocks. A function pointer and a context,
//! so that the bridge need not know the scheduler.

use std::cell::Cell;
use std::sync::Arc;

use crate::io::shared_out::SharedOut;

/// Per-thread hook the scheduler sets around an inline call: called once when the response
/// turns out to stream (a generator's second block), so the event loop moves to another thread
/// that can send blocks while this one keeps producing them. (Function pointer + context, so
/// the bridge need not know the scheduler.) The hook is given the response's shared queue:
/// the loop's new thread lets the first blocks pile up on it (`SharedOut::settle`).
pub type StreamHook = (fn(*const (), &Arc<SharedOut>), *const ());

thread_local! {
    static STREAM_HOOK: Cell<Option<StreamHook>> = const { Cell::new(None) };
}

/// Set (or clear, with None) the current thread's stream hook.
pub fn set_stream_hook(hook: Option<StreamHook>) {
    STREAM_HOOK.with(|h| h.set(hook));
}

/// Is this app call running inline on the event loop's thread (the scheduler set its hook)?
pub fn in_inline_call() -> bool {
    holds_the_loop()
}

/// Is this thread in an inline call that still holds the event loop (its hook not fired)?
pub fn holds_the_loop() -> bool {
    STREAM_HOOK.with(|h| h.get().is_some())
}

/// The response now streams on `out`: fire the hook (once) if this thread has one.
pub fn fire_stream_hook(out: &Arc<SharedOut>) {
    if let Some((f, ctx)) = STREAM_HOOK.with(|h| h.take()) {
        f(ctx, out);
    }
}
