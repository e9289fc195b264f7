//! `wsgi.file_wrapper(filelike, blksize)`: an iterable over a file-like object, with `close()`
//! closing the file. Iterating it in Python (as middleware may) reads `blksize` blocks.
//! (The zero-copy `sendfile(2)` path for regular files is added by the response path.)

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::PyBytes;

#[pyclass(module = "sluicegate._core", name = "FileWrapper", frozen)]
pub struct FileWrapper {
    pub filelike: Py<PyAny>,
    pub blksize: usize,
    closed: Mutex<bool>,
}

#[pymethods]
impl FileWrapper {
    #[new]
    #[pyo3(signature = (filelike, blksize=8192))]
    fn new(filelike: Py<PyAny>, blksize: isize) -> FileWrapper {
        FileWrapper {
            filelike,
            blksize: if blksize > 0 { blksize as usize } else { 8192 },
            closed: Mutex::new(false),
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

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let mut closed = self.closed.lock_py_attached(py).unwrap();
        if !*closed {
            *closed = true;
            let f = self.filelike.bind(py);
            if f.hasattr("close")? {
                f.call_method0("close")?;
            }
        }
        Ok(())
    }
}
