//! `wsgi.file_wrapper(filelike, blksize)`: an iterable over a file-like object, with `close()`
//! closing the file. Iterating it in Python (as middleware may) reads `blksize` blocks.
//! (The zero-copy `sendfile(2)` path for regular files is added by the response path.)

use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::exceptions::PyAttributeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

#[pyclass(module = "sluicegate._core", name = "FileWrapper", frozen)]
pub struct FileWrapper {
    pub filelike: Py<PyAny>,
    pub blksize: usize,
    /// `close()` was called: the file object's own `close()` is called once.
    closed: AtomicBool,
}

#[pymethods]
impl FileWrapper {
    #[new]
    #[pyo3(signature = (filelike, blksize=8192))]
    fn new(filelike: Py<PyAny>, blksize: isize) -> FileWrapper {
        FileWrapper {
            filelike,
            blksize: if blksize > 0 { blksize as usize } else { 8192 },
            closed: AtomicBool::new(false),
        }
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let data = self
            .filelike
            .bind(py)
            .call_method1(pyo3::intern!(py, "read"), (self.blksize,))?;
        let empty = match data.cast::<PyBytes>() {
            Ok(b) => b.as_bytes().is_empty(),
            Err(_) => data.len().map(|n| n == 0).unwrap_or(true),
        };
        Ok(if empty { None } else { Some(data) })
    }

    /// Close the file object (once); a file-like without `close` is left as it is. One method
    /// call, no bound method made (an AttributeError is told apart from a missing `close`
    /// only when it happens). The server calls it directly for its own wrappers
    /// (`call_and_drive`).
    pub(crate) fn close(&self, py: Python<'_>) -> PyResult<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let f = self.filelike.bind(py);
        let name = pyo3::intern!(py, "close");
        match f.call_method0(name) {
            Ok(_) => Ok(()),
            Err(e) if e.is_instance_of::<PyAttributeError>(py) && !f.hasattr(name)? => Ok(()),
            Err(e) => Err(e),
        }
    }
}
