//! The environ of the app call this thread is running, for Python code that is given no
//! environ (the `uwsgi` module's `set_logvar`/`get_logvar`, `python/sluicegate/uwsgi_module.py`):
//! [`Running`] marks it for the length of the call (the app, its iterable and `close()`), and
//! `_core.current_environ()` returns it, or None outside an app call. The marks are counted
//! (`_core.app_calls()`: the `uwsgi` module's `total_requests()` and `request_id()`).
//!
//! Kept here rather than in a `threading.local` the app's wrapper sets: a thread-local set by
//! the wrapper held the last environ after its request was over, and with it the request's
//! `wsgi.early_hints` method, so the thread's `start_response` objects could never be kept for
//! the next request (`start_response::Callables::finish`) and were made anew each time: about
//! 3,000 instructions of a hello world over uwsgi (callgrind).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::ffi;
use pyo3::prelude::*;

thread_local! {
    /// The running call's environ, borrowed from its [`Running`] (null: none).
    static CURRENT: Cell<*mut ffi::PyObject> = const { Cell::new(std::ptr::null_mut()) };
}

/// App calls begun in this process.
static APP_CALLS: AtomicU64 = AtomicU64::new(0);

/// The mark of one app call's environ on this thread: holds a reference to it, and puts back
/// the one before (a nested call, an app calling the server again) when dropped.
pub struct Running<'py> {
    environ: Bound<'py, PyAny>,
    before: *mut ffi::PyObject,
}

impl<'py> Running<'py> {
    pub fn mark(environ: &Bound<'py, PyAny>) -> Running<'py> {
        APP_CALLS.fetch_add(1, Ordering::Relaxed);
        let before = CURRENT.with(|c| c.replace(environ.as_ptr()));
        Running {
            environ: environ.clone(),
            before,
        }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        debug_assert_eq!(CURRENT.with(Cell::get), self.environ.as_ptr());
        CURRENT.with(|c| c.set(self.before));
    }
}

/// The environ of the app call this thread is running, or None.
#[pyfunction]
pub fn current_environ(py: Python<'_>) -> Option<Py<PyAny>> {
    let p = CURRENT.with(Cell::get);
    if p.is_null() {
        return None;
    }
    // SAFETY: a non-null pointer is the environ a live `Running` on this thread holds a
    // reference to (it is reset before that reference goes), and the GIL is held (`py`).
    Some(unsafe { Bound::from_borrowed_ptr(py, p) }.unbind())
}

/// App calls begun in this process so far (each counted as it begins).
#[pyfunction]
pub fn app_calls() -> u64 {
    APP_CALLS.load(Ordering::Relaxed)
}
