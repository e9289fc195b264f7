//! `start_response` and the `write()` callable it returns (PEP 3333).
//!
//! start_response converts and validates the app's status and headers at once (`app_head`: CR,
//! LF, NUL or other control bytes raise, so the app fails before anything is sent and the
//! client gets a 500) and applies the exc_info rules. The response itself is written by the
//! request's `Sender`, which both the iterable driver and `write()` use. Dependencies run one
//! way: app_head <- sender <- start_response <- driver.

use std::sync::Mutex;

use pyo3::exceptions::{PyAssertionError, PyTypeError, PyValueError};
use pyo3::prelude::*;

use super::app_head::parse_head;
use super::sender::{SendError, Sender};

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
            let head = parse_head(status, headers, sender.max_app_headers())?;
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
