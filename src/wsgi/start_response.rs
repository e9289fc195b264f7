//! `start_response` and the `write()` callable it returns (PEP 3333).
//!
//! start_response validates and encodes the app's status and headers at once (CR, LF, NUL or
//! other control bytes raise, so the app fails before anything is sent and the client gets a
//! 500), applies the exc_info rules, and notes what the server must know: the app's
//! Content-Length, and whether it asked for `Connection: close`. Hop-by-hop headers are the
//! server's business (PEP 3333) and are dropped. The response itself is written by
//! `response::Sender`, which both the iterable driver and `write()` use.

use std::sync::Mutex;

use pyo3::exceptions::{PyAssertionError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};
use sluicegate_proto::h1::encode::{validate_header_name, validate_header_value, validate_status};

use super::response::{SendError, Sender};

/// The app's answer as start_response recorded it.
#[derive(Default)]
pub struct AppHead {
    /// start_response was called.
    pub started: bool,
    /// e.g. b"200 OK".
    pub status: Vec<u8>,
    pub status_code: u16,
    /// Header names and values, latin-1 bytes, in the app's order (hop-by-hop removed), all in
    /// one buffer (`hbuf`) with (name start, name end = value start, value end) offsets: one
    /// allocation per response instead of two per header.
    pub hbuf: Vec<u8>,
    pub hidx: Vec<(u32, u32, u32)>,
    /// The app's Content-Length, if it set one.
    pub content_length: Option<u64>,
    /// The app set `Connection: close`.
    pub wants_close: bool,
}

/// The `start_response` callable for one request. It also owns the request's [`Sender`] so that
/// `write()` can send.
#[pyclass(module = "sluicegate._core", name = "StartResponse", frozen)]
pub struct StartResponse {
    pub inner: Mutex<Sender>,
}

/// The `write()` callable returned by start_response.
#[pyclass(module = "sluicegate._core", name = "Write", frozen)]
pub struct Write {
    start_response: Py<StartResponse>,
}

/// Append a str header/status as latin-1 bytes (PEP 3333 "native strings") to `out`.
fn push_latin1(out: &mut Vec<u8>, s: &Bound<'_, PyAny>, what: &str) -> PyResult<()> {
    let s = s
        .cast::<PyString>()
        .map_err(|_| PyTypeError::new_err(format!("{what} must be str, not {}", type_name(s))))?;
    let text = s.to_str()?;
    if text.is_ascii() {
        out.extend_from_slice(text.as_bytes());
        return Ok(());
    }
    for c in text.chars() {
        let b = u8::try_from(u32::from(c))
            .map_err(|_| PyValueError::new_err(format!("{what} is not latin-1: {text:?}")))?;
        out.push(b);
    }
    Ok(())
}

impl AppHead {
    /// (name, value) pairs in the app's order.
    pub fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.hidx.iter().map(move |&(n, v, e)| {
            (
                &self.hbuf[n as usize..v as usize],
                &self.hbuf[v as usize..e as usize],
            )
        })
    }
}

pub fn type_name(o: &Bound<'_, PyAny>) -> String {
    o.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Headers a WSGI app must not set (PEP 3333: hop-by-hop is the server's business).
fn is_hop_by_hop(name: &[u8]) -> bool {
    const HOP: [&[u8]; 7] = [
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"transfer-encoding",
        b"te",
        b"trailer",
        b"upgrade",
    ];
    HOP.iter().any(|h| name.eq_ignore_ascii_case(h))
}

fn parse_head(status: &Bound<'_, PyAny>, headers: &Bound<'_, PyAny>) -> PyResult<AppHead> {
    let mut status_b = Vec::with_capacity(32);
    push_latin1(&mut status_b, status, "status")?;
    validate_status(&status_b).map_err(|_| {
        PyValueError::new_err(format!(
            "invalid status line {:?}",
            String::from_utf8_lossy(&status_b)
        ))
    })?;
    let code = std::str::from_utf8(&status_b[..3])
        .ok()
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or_else(|| PyValueError::new_err("status must start with a 3-digit code"))?;
    let mut head = AppHead {
        started: true,
        status: status_b,
        status_code: code,
        hbuf: Vec::with_capacity(256),
        ..AppHead::default()
    };
    for item in headers.try_iter()? {
        let item = item?;
        let pair = item.cast::<PyTuple>().map_err(|_| {
            PyTypeError::new_err(format!(
                "each header must be a tuple, not {}",
                type_name(&item)
            ))
        })?;
        if pair.len() != 2 {
            return Err(PyValueError::new_err(
                "each header must be a (name, value) tuple",
            ));
        }
        let start = head.hbuf.len();
        push_latin1(&mut head.hbuf, &pair.get_item(0)?, "header name")?;
        let mid = head.hbuf.len();
        push_latin1(&mut head.hbuf, &pair.get_item(1)?, "header value")?;
        let end = head.hbuf.len();
        let (name, value) = head.hbuf[start..].split_at(mid - start);
        validate_header_name(name).map_err(|_| {
            PyValueError::new_err(format!(
                "invalid header name {:?}",
                String::from_utf8_lossy(name)
            ))
        })?;
        validate_header_value(value).map_err(|_| {
            PyValueError::new_err(format!(
                "header {:?} has a value with CR, LF, NUL or another control character",
                String::from_utf8_lossy(name)
            ))
        })?;
        let mut keep = true;
        if is_hop_by_hop(name) {
            if name.eq_ignore_ascii_case(b"connection")
                && value
                    .split(|&b| b == b',')
                    .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"))
            {
                head.wants_close = true;
            }
            keep = false;
        } else if name.eq_ignore_ascii_case(b"content-length") {
            let v = std::str::from_utf8(value)
                .ok()
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| PyValueError::new_err("invalid Content-Length set by the app"))?;
            if head.content_length.is_some_and(|c| c != v) {
                return Err(PyValueError::new_err(
                    "conflicting Content-Length headers set by the app",
                ));
            }
            keep = head.content_length.is_none();
            head.content_length = Some(v);
        }
        if keep {
            head.hidx.push((start as u32, mid as u32, end as u32));
        } else {
            head.hbuf.truncate(start);
        }
    }
    Ok(head)
}

impl StartResponse {
    pub fn new(sender: Sender) -> StartResponse {
        StartResponse {
            inner: Mutex::new(sender),
        }
    }
}

#[pymethods]
impl StartResponse {
    #[pyo3(signature = (status, headers, exc_info=None))]
    fn __call__(
        slf: &Bound<'_, Self>,
        status: &Bound<'_, PyAny>,
        headers: &Bound<'_, PyAny>,
        exc_info: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Write> {
        let exc_info = exc_info.filter(|e| !e.is_none());
        {
            let mut sender = slf.get().inner.lock().unwrap();
            match exc_info {
                Some(info) if sender.headers_sent() => {
                    // PEP 3333: too late to change the answer; re-raise the app's error.
                    drop(sender);
                    let value = info.get_item(1)?;
                    return Err(PyErr::from_value(value));
                }
                Some(_) => {}
                None if sender.app_head().started => {
                    return Err(PyAssertionError::new_err(
                        "start_response called a second time without exc_info",
                    ));
                }
                None => {}
            }
            let head = parse_head(status, headers)?;
            sender.set_app_head(head);
        }
        Ok(Write {
            start_response: slf.clone().unbind(),
        })
    }
}

#[pymethods]
impl Write {
    fn __call__(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let sr = self.start_response.bind(py).get();
        let mut sender = sr.inner.lock().unwrap();
        match sender.send_block(py, data) {
            Ok(()) => Ok(()),
            Err(SendError::NotBytes(t)) => Err(PyTypeError::new_err(format!(
                "write() takes bytes, not {t}"
            ))),
            Err(SendError::NotStarted) => Err(PyAssertionError::new_err(
                "write() called before start_response",
            )),
            Err(SendError::Finished) => Err(PyValueError::new_err(
                "write() called after the response was complete",
            )),
            Err(SendError::ClientGone) => Err(crate::ClientDisconnected::new_err(
                "client disconnected while the response was being sent",
            )),
        }
    }
}
