//! `wsgi.input`: the request body as a file-like object (the `Input` pyclass), one type for
//! every protocol, over the call's [`BodySource`] (HTTP/1.1's body reader, `wsgi::body`, or an
//! HTTP/2 stream's, `body_source::StreamInput`). A body cut short by the client raises
//! `ClientDisconnected` in the app, never a short read that looks like the end; a body that
//! comes too slowly raises `TimeoutError` (and the client gets 408 if nothing was sent).
//!
//! `read(n)` fills one `bytes` of its final size in place, and `readinto` the caller's buffer;
//! a Content-Length body is read from the connection straight into them, and a large one ahead
//! of the app by a thread of its own (`io::read_ahead`), so the client keeps sending while the
//! app works: into the very `bytes` the app's `read(n)`s return when they are of one size
//! ([`BodySource::take_whole`]).

use std::sync::Mutex;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use super::body_source::{BodyEnd, BodySource};
use crate::io::read_ahead::BodyFailure;

/// A `read(n)` of a chunked body (whose length is unknown) fills a `bytes` of `n` in place up
/// to this size, and shrinks it with one copy if the body ends first; larger ones grow a
/// buffer instead of reserving `n` up front.
const CHUNKED_IN_PLACE_MAX: usize = 1024 * 1024;

/// The `wsgi.input` object. Holds the body state for the request; afterwards it is detached
/// and reads return b"" (an app that kept it cannot read the next request's bytes).
#[pyclass(module = "sluicegate._core", name = "Input", frozen)]
pub struct Input {
    state: Mutex<Option<Box<dyn BodySource>>>,
}

impl Input {
    pub fn new(state: Option<Box<dyn BodySource>>) -> Input {
        Input {
            state: Mutex::new(state),
        }
    }

    /// The call is over: let the body go (`BodySource::end`); `None` if it went already.
    /// Reads after this return `b""`.
    pub fn detach(&self, py: Python<'_>, max_drain: u64) -> Option<BodyEnd> {
        let source = lock_released(py, &self.state).take()?;
        Some(source.end(py, max_drain))
    }

    /// See `BodySource::drainable`; true once detached or for a body-less request.
    pub fn drainable(&self, max: u64) -> bool {
        match self.state.try_lock() {
            Ok(g) => g.as_ref().is_none_or(|st| st.drainable(max)),
            // Another thread is reading it right now: not finished, so do not promise.
            Err(_) => false,
        }
    }

    fn with_state<T>(
        &self,
        py: Python<'_>,
        empty: T,
        f: impl FnOnce(&mut dyn BodySource, Python<'_>) -> Result<T, BodyFailure>,
    ) -> PyResult<T> {
        // The lock is held while waiting on the socket with the GIL released; only a second
        // thread reading the same input concurrently would wait on it (it never holds the GIL
        // while waiting for this lock: see `lock_released`).
        let mut guard = lock_released(py, &self.state);
        match guard.as_mut() {
            None => Ok(empty),
            Some(st) => f(&mut **st, py).map_err(|e| st.to_pyerr(e)),
        }
    }
}

/// Lock a mutex without holding the GIL while waiting for it (avoids a lock-order deadlock with
/// a thread that holds the mutex and waits for the GIL).
fn lock_released<'a, T: Send>(py: Python<'_>, m: &'a Mutex<T>) -> std::sync::MutexGuard<'a, T> {
    loop {
        match m.try_lock() {
            Ok(g) => return g,
            Err(std::sync::TryLockError::Poisoned(p)) => return p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => py.detach(std::thread::yield_now),
        }
    }
}

/// `read()` (or a large `read(n)`) of a chunked body, whose length nobody knows: the body is
/// gathered in blocks of [`GATHER_BLOCK`], then copied into one `bytes` of its size, each block
/// freed once copied. A buffer that doubled would hold up to twice the body and then be copied
/// whole; this peaks at the body and one block (the new `bytes`'s pages only become resident
/// as they are written).
fn read_unknown_length<'py>(
    py: Python<'py>,
    st: &mut dyn BodySource,
    limit: Option<usize>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    let mut total = 0usize;
    loop {
        let want = limit.map_or(GATHER_BLOCK, |l| (l - total).min(GATHER_BLOCK));
        if want == 0 {
            break;
        }
        let mut block = vec![0u8; want];
        let got = st.read_into(py, &mut block).map_err(|e| st.to_pyerr(e))?;
        block.truncate(got);
        total += got;
        if got > 0 {
            blocks.push(block);
        }
        if got < want {
            break;
        }
    }
    let (bytes, _) = new_bytes_filled(py, total, |buf| {
        let mut at = 0;
        for block in blocks.drain(..) {
            buf[at..at + block.len()].copy_from_slice(&block);
            at += block.len();
        }
        Ok(at)
    })
    .map_err(|e| e.into_pyerr(st))?;
    Ok(bytes)
}

/// See [`read_unknown_length`].
const GATHER_BLOCK: usize = 1024 * 1024;

/// Why filling a new `bytes` failed.
enum FillError {
    NoMemory(PyErr),
    Body(BodyFailure),
}

impl FillError {
    fn into_pyerr(self, st: &dyn BodySource) -> PyErr {
        match self {
            FillError::NoMemory(e) => e,
            FillError::Body(f) => st.to_pyerr(f),
        }
    }
}

/// A new `bytes` of `size`, filled by `fill` (which returns how many bytes it wrote, at most
/// `size`; the rest stays zero). Unlike `PyBytes::new_with`, the buffer is not zeroed first:
/// for a 64 MiB upload that pass alone costs milliseconds.
fn new_bytes_filled<'py>(
    py: Python<'py>,
    size: usize,
    fill: impl FnOnce(&mut [u8]) -> Result<usize, BodyFailure>,
) -> Result<(Bound<'py, PyBytes>, usize), FillError> {
    let len = pyo3::ffi::Py_ssize_t::try_from(size)
        .map_err(|_| FillError::NoMemory(pyo3::exceptions::PyMemoryError::new_err(size)))?;
    // SAFETY: a null source asks CPython for an uninitialised bytes object of `len` bytes; the
    // result is a new reference (or null with an exception set, taken below).
    let raw = unsafe { pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), len) };
    if raw.is_null() {
        return Err(FillError::NoMemory(PyErr::fetch(py)));
    }
    // SAFETY: `raw` is a new, owned, non-null reference to a bytes object.
    let bytes = unsafe { Bound::from_owned_ptr(py, raw).cast_into_unchecked::<PyBytes>() };
    // SAFETY: the object's buffer holds `size` bytes and nothing else can reach the object yet
    // (it is only ours until returned), so writing to it, even with the GIL released, races
    // with nobody.
    let buf = unsafe {
        std::slice::from_raw_parts_mut(pyo3::ffi::PyBytes_AsString(raw) as *mut u8, size)
    };
    match fill(buf) {
        Ok(got) => {
            // Whatever `fill` left unwritten must not show old heap contents.
            buf[got..].fill(0);
            Ok((bytes, got))
        }
        Err(f) => Err(FillError::Body(f)),
    }
}

impl Input {
    #[cfg(not(feature = "abi3"))]
    fn fill_buffer(&self, py: Python<'_>, dst: &mut [u8]) -> PyResult<usize> {
        let mut guard = lock_released(py, &self.state);
        match guard.as_mut() {
            None => Ok(0),
            Some(st) => st.read_into(py, dst).map_err(|e| st.to_pyerr(e)),
        }
    }
}

fn size_arg(size: Option<isize>) -> Option<usize> {
    match size {
        Some(n) if n >= 0 => Some(n as usize),
        _ => None,
    }
}

#[pymethods]
impl Input {
    /// `read(n)` makes one `bytes` of its final size and fills it in place (see
    /// [`BodySource::read_into`]); only `read()` of a chunked body, whose size nobody knows,
    /// grows a buffer first.
    #[pyo3(signature = (size=None))]
    fn read<'py>(&self, py: Python<'py>, size: Option<isize>) -> PyResult<Bound<'py, PyBytes>> {
        let limit = size_arg(size);
        let mut guard = lock_released(py, &self.state);
        let Some(st) = guard.as_mut() else {
            return Ok(PyBytes::new(py, b""));
        };
        let st: &mut dyn BodySource = &mut **st;
        let size = match (limit, st.known_left()) {
            (Some(l), Some(left)) => Some(l.min(usize::try_from(left).unwrap_or(usize::MAX))),
            (None, Some(left)) => Some(usize::try_from(left).unwrap_or(usize::MAX)),
            (Some(l), None) if l <= CHUNKED_IN_PLACE_MAX => Some(l),
            _ => None,
        };
        let Some(size) = size else {
            return read_unknown_length(py, st, limit);
        };
        if let Some(bytes) = st.take_whole(py, size).map_err(|e| st.to_pyerr(e))? {
            return Ok(bytes);
        }
        let (bytes, got) = new_bytes_filled(py, size, |buf| st.read_into(py, buf))
            .map_err(|e| e.into_pyerr(st))?;
        if got == size {
            Ok(bytes)
        } else {
            // The body ended first (a chunked body): the bytes read, in a `bytes` of their
            // size.
            Ok(PyBytes::new(py, &bytes.as_bytes()[..got]))
        }
    }

    /// `readinto(b)`: up to `len(b)` bytes of the body written straight into the caller's
    /// writable, C-contiguous buffer (fewer only where the body ends); returns how many. The
    /// buffer stays exported while it is written, so the app cannot resize it meanwhile (a
    /// `bytearray` raises `BufferError`). The abi3 build's limited API has no buffer protocol
    /// before 3.11: there the bytes come by one more copy.
    fn readinto(&self, py: Python<'_>, b: &Bound<'_, PyAny>) -> PyResult<usize> {
        #[cfg(not(feature = "abi3"))]
        {
            let view = pyo3::buffer::PyBuffer::<u8>::get(b)?;
            if view.readonly() || !view.is_c_contiguous() {
                return Err(pyo3::exceptions::PyTypeError::new_err(
                    "readinto() needs a writable, contiguous buffer",
                ));
            }
            // SAFETY: the buffer is exported (and so cannot be resized or freed) while `view`
            // lives, writable and contiguous, of `len_bytes()` bytes.
            let dst = unsafe {
                std::slice::from_raw_parts_mut(view.buf_ptr() as *mut u8, view.len_bytes())
            };
            self.fill_buffer(py, dst)
        }
        #[cfg(feature = "abi3")]
        {
            // memoryview(b).cast("B")[:n] = data: any writable buffer, counted in bytes (a
            // read-only one raises TypeError on the assignment).
            let view = pyo3::types::PyMemoryView::from(b)?.call_method1("cast", ("B",))?;
            let size = view.len()?;
            let data = self.read(py, Some(size as isize))?;
            let n = data.as_bytes().len();
            view.set_item(pyo3::types::PySlice::new(py, 0, n as isize, 1), data)?;
            Ok(n)
        }
    }

    #[pyo3(signature = (size=None))]
    fn readline<'py>(&self, py: Python<'py>, size: Option<isize>) -> PyResult<Bound<'py, PyBytes>> {
        let v = self.with_state(py, Vec::new(), |st, py| st.readline(py, size_arg(size)))?;
        Ok(PyBytes::new(py, &v))
    }

    #[pyo3(signature = (hint=None))]
    fn readlines<'py>(&self, py: Python<'py>, hint: Option<isize>) -> PyResult<Bound<'py, PyList>> {
        let hint = size_arg(hint).filter(|&h| h > 0);
        let lines = PyList::empty(py);
        let mut total = 0usize;
        loop {
            let line = self.readline(py, None)?;
            let n = line.as_bytes().len();
            if n == 0 {
                break;
            }
            lines.append(line)?;
            total += n;
            if hint.is_some_and(|h| total >= h) {
                break;
            }
        }
        Ok(lines)
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let line = self.readline(py, None)?;
        Ok(if line.as_bytes().is_empty() {
            None
        } else {
            Some(line)
        })
    }

    fn readable(&self) -> bool {
        true
    }

    fn close(&self) {}

    #[getter]
    fn closed(&self) -> bool {
        false
    }

    fn fileno(&self) -> PyResult<i32> {
        Err(PyValueError::new_err("wsgi.input has no file descriptor"))
    }
}
