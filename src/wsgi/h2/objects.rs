//! The Python objects of one HTTP/2 stream's call: `start_response` (with its `write`) and
//! `wsgi.input`, over the stream's [`Response`] and body (`io::h2::stream`), and
//! `wsgi.early_hints` (a method of start_response's object, as on HTTP/1.1). The rules are the
//! HTTP/1.1 bridge's: the app's status and headers are converted and validated by
//! `app_head::parse_head` (hop-by-hop and connection-specific headers dropped), `exc_info` as
//! PEP 3333 says; every wait (a DATA frame, send window) releases the GIL. A request body
//! that stalls past `--read-timeout` raises `TimeoutError` in the app, as on HTTP/1.1.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use pyo3::exceptions::{PyAssertionError, PyRuntimeError, PyTimeoutError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use super::response::Response;
use crate::io::h2::stream::body_protocol_error;
use crate::io::h2::StreamBody;
use crate::io::read_ahead::BodyFailure;
use crate::wsgi::app_head::{parse_head, parse_hints};
use crate::wsgi::errors::{BodyError, ClientDisconnected};

/// The bytes of a block the app gave (bytes, bytearray or memoryview), copied: the `h2` crate
/// keeps them until the window takes them, after the GIL is released.
pub(super) fn block_bytes(item: &Bound<'_, PyAny>) -> PyResult<Bytes> {
    if let Ok(b) = item.cast::<PyBytes>() {
        return Ok(Bytes::copy_from_slice(b.as_bytes()));
    }
    if let Ok(v) = item.extract::<Vec<u8>>() {
        if !item.is_instance_of::<pyo3::types::PyString>() {
            return Ok(Bytes::from(v));
        }
    }
    Err(PyTypeError::new_err(format!(
        "the app's body blocks must be bytes, not {}",
        crate::wsgi::bridge::type_name(item)
    )))
}

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
        let bytes = block_bytes(data)?;
        let mut r = self.resp.lock().unwrap();
        if !r.app.started {
            return Err(PyAssertionError::new_err(
                "write() called before start_response",
            ));
        }
        r.send(py, bytes, false)
            .map_err(|_| ClientDisconnected::new_err("client went away (HTTP/2 stream)"))
    }
}

/// What `wsgi.input` reads from: the stream's body and what a line read left over.
struct InputState {
    /// `None` once the call is over ([`H2Input::detach`]): reads return `b""`, and the stream's
    /// receiving half is dropped (a client still sending gets RST_STREAM).
    body: Option<StreamBody>,
    spill: Vec<u8>,
    timeout: Duration,
    /// Why the body failed, once it has: later reads raise the same error.
    failure: Option<BodyFailure>,
}

/// The exception the app sees, as on HTTP/1.1 (`wsgi::body::to_pyerr`): a stall past
/// `--read-timeout` is `TimeoutError`, a client gone is `ClientDisconnected`.
fn body_error(f: BodyFailure) -> PyErr {
    match f {
        BodyFailure::TimedOut | BodyFailure::TooSlow => {
            PyTimeoutError::new_err("timed out reading the request body (HTTP/2 stream)")
        }
        BodyFailure::Disconnected => ClientDisconnected::new_err(
            "client disconnected before the request body was complete (HTTP/2 stream)",
        ),
        BodyFailure::Protocol(e) => {
            BodyError::new_err(format!("invalid request body: {e} (HTTP/2 stream)"))
        }
    }
}

impl InputState {
    /// More bytes into `spill`; false at the end of the body.
    fn fill(&mut self, py: Python<'_>, want: usize) -> PyResult<bool> {
        if let Some(f) = self.failure {
            return Err(body_error(f));
        }
        let Some(body) = self.body.as_mut() else {
            return Ok(false);
        };
        let timeout = self.timeout;
        let got = match py.detach(|| body.read(want.max(1), timeout)) {
            Ok(got) => got,
            Err(e) => {
                let f = match (e.kind(), body_protocol_error(&e)) {
                    (_, Some(p)) => BodyFailure::Protocol(p),
                    (io::ErrorKind::TimedOut, _) => BodyFailure::TimedOut,
                    _ => BodyFailure::Disconnected,
                };
                self.failure = Some(f);
                return Err(body_error(f));
            }
        };
        if got.is_empty() {
            return Ok(false);
        }
        self.spill.extend_from_slice(&got);
        Ok(true)
    }
}

/// Most bytes asked of the stream per read when the app asked for "all".
const READ_ALL_STEP: usize = 1024 * 1024;

/// `wsgi.input` of an HTTP/2 stream with a body (`wsgi.input_terminated` is true: reading to
/// the end is safe).
#[pyclass(module = "sluicegate._core", name = "H2Input", frozen)]
pub struct H2Input {
    state: Mutex<InputState>,
}

impl H2Input {
    pub(super) fn new(body: StreamBody, timeout: Duration) -> H2Input {
        H2Input {
            state: Mutex::new(InputState {
                body: Some(body),
                spill: Vec::new(),
                timeout,
                failure: None,
            }),
        }
    }

    /// The call is over: let the stream's body go (an app that kept `wsgi.input` reads
    /// `b""`), and say why it failed, if it did.
    pub(super) fn detach(&self) -> Option<BodyFailure> {
        let mut st = self.state.lock().unwrap();
        st.body = None;
        st.spill.clear();
        st.failure.take()
    }
}

#[pymethods]
impl H2Input {
    #[pyo3(signature = (size=None))]
    fn read<'py>(&self, py: Python<'py>, size: Option<isize>) -> PyResult<Bound<'py, PyBytes>> {
        let mut st = self.state.lock().unwrap();
        let limit = size.filter(|&n| n >= 0).map(|n| n as usize);
        loop {
            let have = st.spill.len();
            if limit.is_some_and(|n| have >= n) {
                break;
            }
            let want = limit.map_or(READ_ALL_STEP, |n| n - have);
            if !st.fill(py, want)? {
                break;
            }
        }
        let n = limit.unwrap_or(usize::MAX).min(st.spill.len());
        let out = PyBytes::new(py, &st.spill[..n]);
        st.spill.drain(..n);
        Ok(out)
    }

    #[pyo3(signature = (size=None))]
    fn readline<'py>(&self, py: Python<'py>, size: Option<isize>) -> PyResult<Bound<'py, PyBytes>> {
        let mut st = self.state.lock().unwrap();
        let limit = size.filter(|&n| n >= 0).map(|n| n as usize);
        let mut scanned = 0;
        let end = loop {
            if let Some(i) = st.spill[scanned..].iter().position(|&b| b == b'\n') {
                break scanned + i + 1;
            }
            scanned = st.spill.len();
            if limit.is_some_and(|n| scanned >= n) || !st.fill(py, 64 * 1024)? {
                break st.spill.len();
            }
        };
        let n = limit.unwrap_or(usize::MAX).min(end);
        let out = PyBytes::new(py, &st.spill[..n]);
        st.spill.drain(..n);
        Ok(out)
    }

    #[pyo3(signature = (hint=None))]
    fn readlines<'py>(&self, py: Python<'py>, hint: Option<isize>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        let mut total = 0usize;
        loop {
            let line = self.readline(py, None)?;
            if line.as_bytes().is_empty() {
                break;
            }
            total += line.as_bytes().len();
            out.append(line)?;
            if hint.is_some_and(|h| h > 0 && total >= h as usize) {
                break;
            }
        }
        Ok(out)
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let line = self.readline(py, None)?;
        Ok((!line.as_bytes().is_empty()).then_some(line))
    }

    fn readable(&self) -> bool {
        true
    }
}
