//! The Python object of one HTTP/2 stream's call: `start_response` (with its `write`), over
//! the stream's [`Response`] (`io::h2::stream`), and
//! `wsgi.early_hints` (a method of start_response's object, as on HTTP/1.1). The rules are the
//! HTTP/1.1 bridge's: the app's status and headers are converted and validated by
//! `app_head::parse_head` (hop-by-hop and connection-specific headers dropped), `exc_info` as
//! PEP 3333 says; every wait for send window releases the GIL. (`wsgi.input` is the one
//! `wsgi::input::Input`, over the stream's `body_source::StreamInput`.)

use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyAssertionError, PyRuntimeError};
use pyo3::prelude::*;

use super::response::Response;
use crate::wsgi::app_head::{parse_head, parse_hints};
use crate::wsgi::reply::Reply;
use crate::wsgi::start_response::write_error;

/// start_response for one stream; `write` is its method.
#[pyclass(module = "sluicegate._core", name = "H2StartResponse", frozen)]
pub struct H2StartResponse {
    pub(super) resp: Arc<Mutex<Response>>,
}

#[pymethods]
impl H2StartResponse {
    #[pyo3(signature = (status, headers, exc_info=None))]
    fn __call__(
        slf: &Bound<'_, Self>,
        status: &Bound<'_, PyAny>,
        headers: &Bound<'_, PyAny>,
        exc_info: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let exc_info = exc_info.filter(|e| !e.is_none());
        {
            let mut r = slf.get().resp.lock().unwrap();
            match exc_info {
                Some(info) if r.head_sent() => {
                    drop(r);
                    return Err(PyErr::from_value(info.get_item(1)?));
                }
                Some(_) => {}
                None if r.app.started => {
                    return Err(PyAssertionError::new_err(
                        "start_response called a second time without exc_info",
                    ));
                }
                None => {}
            }
            let max = r.max_app_headers;
            r.app = parse_head(status, headers, max, Vec::new())?;
        }
        Ok(slf.getattr("write")?.unbind())
    }

    /// `environ["wsgi.early_hints"]`: an informational HEADERS frame (`:status 103`) with
    /// `headers`, validated as start_response's are; an error after start_response.
    fn early_hints(&self, headers: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut r = self.resp.lock().unwrap();
        if r.app.started {
            return Err(PyRuntimeError::new_err(
                "wsgi.early_hints called after start_response",
            ));
        }
        let hints = parse_hints(headers, r.max_app_headers)?;
        r.send_early_hints(&hints);
        Ok(())
    }

    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut r = self.resp.lock().unwrap();
        r.send_block(py, data).map_err(write_error)
    }
}
