//! `--timeout`'s last step: ending a call past the deadline, not only answering its client.
//! Once the watcher has answered and logged the call (`deadline`, `server::report`), it raises
//! [`RequestTimeout`] inside the call's thread (`PyThreadState_SetAsyncExc`), so that the app
//! unwinds (its `finally:` blocks and `with` exits run), the iterable's `close()` is called,
//! the thread is free for the calls queued behind it, and the stuck count goes down.
//!
//! CPython delivers such an exception only when the thread next runs Python bytecode: a call
//! inside C (a system call such as a socket read or `time.sleep`, a C extension) gets it when
//! that returns, and the watcher says so in the log if the call is still there a while later
//! (`deadline::UNWIND_GRACE`).
//!
//! A raise must never reach the thread's next call. Each call has an [`Interrupt`], one state
//! moved by compare-and-swap: `IN_APP`, then `RETURNED` (the app thread, when the call leaves
//! the registry: `Deadlines::leave`) or `RAISED` (the watcher). Both moves are made with the
//! thread attached to the interpreter, the watcher's swap and its raise in one stretch, so that
//! an app thread that finds `RAISED` clears whatever is still pending on it
//! (`PyThreadState_SetAsyncExc` with NULL), as the raise came in before. Between the app's
//! `close()` and the leave the thread runs the server's Rust code, where nothing fires.

use std::os::raw::c_long;
use std::sync::atomic::{AtomicU8, Ordering};

use pyo3::create_exception;
use pyo3::exceptions::PyBaseException;
use pyo3::ffi;
use pyo3::prelude::*;

create_exception!(
    sluicegate,
    RequestTimeout,
    PyBaseException,
    "Raised inside an app call that ran past --timeout, after its client was answered 504 \
     Gateway Timeout. A BaseException, not an Exception, so that `except Exception:` blocks \
     let it through; catch it only to clean up, and raise it again."
);

/// The call is running the app.
const IN_APP: u8 = 0;
/// The app's part is over: nothing may be raised any more.
const RETURNED: u8 = 1;
/// The watcher raised `RequestTimeout` in the call's thread.
const RAISED: u8 = 2;

/// One call's interrupt state (see the module doc).
#[derive(Default)]
pub struct Interrupt(AtomicU8);

/// What [`Interrupt::raise_in`] did.
pub enum Raised {
    /// `RequestTimeout` is pending in the call's thread.
    Now,
    /// The call's app part was over already: nothing raised.
    TooLate,
    /// No thread state has that identity (no Python thread runs the call).
    NoThread,
}

impl Interrupt {
    /// The watcher: raise `RequestTimeout` in `thread` (`threading.get_ident()`) if the call is
    /// still in the app. `py`: attached, which the raise needs and which keeps the app thread
    /// from moving its state between the swap and the raise.
    pub fn raise_in(&self, py: Python<'_>, thread: u64) -> Raised {
        if self
            .0
            .compare_exchange(IN_APP, RAISED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Raised::TooLate;
        }
        set_async_exc(py, thread)
    }

    /// The app thread: the app's part of this call is over. A raise that came in before (and
    /// has not fired yet) is withdrawn, so that it cannot fire in what this thread runs next.
    pub fn returned(&self, py: Python<'_>) {
        if self.0.swap(RETURNED, Ordering::AcqRel) == RAISED {
            clear_async_exc(py);
        }
    }

    /// The watcher raised in this call (and it has not said it returned since).
    pub fn raised(&self) -> bool {
        self.0.load(Ordering::Acquire) == RAISED
    }

    /// The state `raise_in` leaves, without the interpreter (the registry's unit tests).
    #[cfg(test)]
    pub fn pretend_raised(&self) {
        self.0.store(RAISED, Ordering::Release);
    }
}

/// `PyThreadState_SetAsyncExc(thread, RequestTimeout)`.
#[cfg(not(PyPy))]
fn set_async_exc(py: Python<'_>, thread: u64) -> Raised {
    let exc = py.get_type::<RequestTimeout>();
    // SAFETY: the thread is attached (`py`); `exc` is a live type object, which CPython takes a
    // reference to; `thread` is a `pthread_t` as `threading.get_ident()` gives it, passed with
    // the same bits as the C `unsigned long` the function takes.
    let found = unsafe { ffi::PyThreadState_SetAsyncExc(thread as c_long, exc.as_ptr()) };
    if found == 0 {
        Raised::NoThread
    } else {
        Raised::Now
    }
}

/// Clear this thread's pending asynchronous exception, if any.
#[cfg(not(PyPy))]
fn clear_async_exc(_py: Python<'_>) {
    // SAFETY: attached (`_py`); NULL clears the pending asynchronous exception of the thread
    // named, which is this one (`pthread_self`, as `threading.get_ident()`).
    unsafe { ffi::PyThreadState_SetAsyncExc(libc::pthread_self() as c_long, std::ptr::null_mut()) };
}

/// PyPy has no `PyThreadState_SetAsyncExc`: the call keeps its thread (`--max-stuck`).
#[cfg(PyPy)]
fn set_async_exc(_py: Python<'_>, _thread: u64) -> Raised {
    Raised::NoThread
}

#[cfg(PyPy)]
fn clear_async_exc(_py: Python<'_>) {}
