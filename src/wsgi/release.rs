//! Prompt release of Python objects dropped where the interpreter is not attached.
//!
//! A large response body is queued as the app's own `bytes` object (no copy). When its client
//! goes away, the event loop, which never holds the GIL, drops the queue; PyO3 then only notes
//! the decref and applies it the next time some thread attaches. On an idle server (or one
//! that serves only static files) that could be never: three abandoned 100 MB answers stayed
//! resident. So such a drop rings a bell, an eventfd that the server's main thread waits on
//! beside its signal pipe; the main thread wakes, attaches (PyO3 applies every deferred decref
//! when a thread re-attaches), and the memory is freed. Bound: as soon as the main thread gets
//! the GIL after the drop, at most one switch interval (5 ms) behind the running app threads.
//!
//! One bell per process: the server that runs last installs its own.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicI32, Ordering};

use pyo3::ffi;

static BELL: AtomicI32 = AtomicI32::new(-1);

/// The eventfd rung after a drop without the GIL (-1: none).
pub fn install(fd: RawFd) {
    BELL.store(fd, Ordering::Release);
}

/// Forget `fd` if it is the installed bell (its server is going away).
pub fn uninstall(fd: RawFd) {
    let _ = BELL.compare_exchange(fd, -1, Ordering::AcqRel, Ordering::Acquire);
}

/// Call right after dropping a Python object: rings the bell if this thread is not attached
/// (the decref was deferred).
pub fn after_drop() {
    // SAFETY: PyGILState_Check only reads this thread's state; callable without the GIL.
    if unsafe { ffi::PyGILState_Check() } != 0 {
        return;
    }
    let fd = BELL.load(Ordering::Acquire);
    if fd >= 0 {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to an eventfd; a full counter (EAGAIN) or a
        // closed fd changes nothing that matters here.
        unsafe { libc::write(fd, &one as *const u64 as *const libc::c_void, 8) };
    }
}
