//! The `bytes` objects lent to the read-ahead reader thread (`io::read_ahead`, through its
//! [`LentBuf`]): made here with the GIL held, uninitialised, filled by the reader, and returned
//! whole to the app by a `read(n)` (`ahead.rs`), so that the kernel's copy into one is the
//! body's only copy.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::io::read_ahead::LentBuf;

/// A `bytes` object lent to the reader thread, made here with the GIL held and returned
/// whole to the app by a `read(n)` once filled.
pub(super) struct LentBytes {
    pub(super) obj: Py<PyBytes>,
    ptr: *mut u8,
    pub(super) len: usize,
}

// SAFETY: the object is referenced only by this value until a `read(n)` returns it (it was
// made here and no Python code has seen it), so its buffer is written by one thread at a
// time, whichever holds the value; `Py` itself may be sent, and dropped, anywhere.
unsafe impl Send for LentBytes {}

impl LentBytes {
    /// An uninitialised `bytes` of `size` (the reader writes it before anyone reads it); None
    /// when out of memory (the read then goes the usual way).
    pub(super) fn new(py: Python<'_>, size: usize) -> Option<LentBytes> {
        let len = pyo3::ffi::Py_ssize_t::try_from(size).ok()?;
        // SAFETY: a null source asks CPython for an uninitialised bytes object of `len` bytes;
        // the result is a new reference, or null with an exception set (cleared below).
        let raw = unsafe { pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), len) };
        if raw.is_null() {
            drop(PyErr::fetch(py));
            return None;
        }
        // SAFETY: `raw` is a new, owned, non-null reference to a bytes object.
        let obj = unsafe { Bound::from_owned_ptr(py, raw).cast_into_unchecked::<PyBytes>() };
        // SAFETY: `raw` is a bytes object; its buffer lives as long as the object.
        let ptr = unsafe { pyo3::ffi::PyBytes_AsString(raw) } as *mut u8;
        Some(LentBytes {
            obj: obj.unbind(),
            ptr,
            len: size,
        })
    }
}

impl LentBuf for LentBytes {
    fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` is the object's buffer of `len` bytes, alive as long as `obj`, and
        // only this value reaches it (see the `Send` impl).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`; `&mut self` makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}
