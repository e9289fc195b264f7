//! Prompt release of Python objects dropped where the interpreter is not attached.
//!
//! A large response body is queued as the app's own `bytes` object (no copy). When its client
//! goes away, the event loop, which never holds the GIL, drops the queue; PyO3 then only notes
//! the decref and applies it the next time some thread attaches. On an idle server (or one
//! that serves only static files) that could be never: three abandoned 100 MB answers stayed
//! resident. So such a drop rings a bell, an eventfd that the server's main thread waits on
//! beside its signal pipe; the main thread wakes, lets further drops gather for [`GATHER`]
//! (50 ms), then attaches once (PyO3 applies every deferred decref when a thread re-attaches),
//! and the memory is freed. Bound: 50 ms after the drop, plus getting the GIL (at most one
//! switch interval, 5 ms, behind running app threads).
//!
//! Only drops on the event loop's thread ring: it runs detached for as long as it serves. An app
//! thread that drops a block inside a detached write re-attaches right after, and PyO3 applies
//! the decref then. (Which thread is the loop's is a thread-local flag the loop sets, not
//! `PyGILState_Check`, which the stable ABI of the abi3 wheels does not have.)
//!
//! One bell per process: the server that runs last installs its own.

use std::cell::Cell;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static BELL: AtomicI32 = AtomicI32::new(-1);

/// After a ring, the main thread lets drops gather this long before it re-attaches once for
/// all of them: the bound on how long abandoned memory stays (plus getting the GIL).
pub const GATHER: std::time::Duration = std::time::Duration::from_millis(50);

/// The bell rang and the main thread has not answered yet: a drop meanwhile need not ring
/// again (its decref is registered before the main thread re-attaches), so a stream of large
/// responses wakes the main thread at most once per turn.
static PENDING: AtomicBool = AtomicBool::new(false);

/// The main thread drained the bell and is about to re-attach.
pub fn answered() {
    PENDING.store(false, Ordering::SeqCst);
}

thread_local! {
    /// This thread is driving the event loop (detached from the interpreter).
    static ON_LOOP: Cell<bool> = const { Cell::new(false) };
}

/// Marks the current thread as the event loop's while the guard lives.
pub struct LoopThread(());

impl LoopThread {
    pub fn enter() -> LoopThread {
        ON_LOOP.with(|f| f.set(true));
        LoopThread(())
    }
}

impl Drop for LoopThread {
    fn drop(&mut self) {
        ON_LOOP.with(|f| f.set(false));
    }
}

/// Clears the flag while the loop's thread runs an app call inline (attached: its drops are
/// applied at once), and restores it after. Without it every large inline response woke the
/// main thread for nothing (S2's 21 KB `bytes` answers lost 22% of their rate).
pub struct Attached(bool);

impl Attached {
    pub fn enter() -> Attached {
        Attached(ON_LOOP.with(|f| f.replace(false)))
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        ON_LOOP.with(|f| f.set(self.0));
    }
}

/// The eventfd rung after a drop without the GIL (-1: none).
pub fn install(fd: RawFd) {
    BELL.store(fd, Ordering::Release);
    PENDING.store(false, Ordering::SeqCst);
}

/// Forget `fd` if it is the installed bell (its server is going away).
pub fn uninstall(fd: RawFd) {
    let _ = BELL.compare_exchange(fd, -1, Ordering::AcqRel, Ordering::Acquire);
}

/// Call right after dropping a Python object: rings the bell on the event loop's thread (the
/// decref was deferred).
pub fn after_drop() {
    if !ON_LOOP.with(|f| f.get()) || PENDING.swap(true, Ordering::SeqCst) {
        return;
    }
    let fd = BELL.load(Ordering::Acquire);
    if fd < 0 {
        PENDING.store(false, Ordering::SeqCst); // nobody to ring: nothing is pending
        return;
    }
    // A full counter (EAGAIN) or a closed fd changes nothing that matters here.
    crate::io::wakeup::ring(fd);
}
