//! `start_response` and the `write()` callable it returns (PEP 3333), for every protocol.
//!
//! start_response converts and validates the app's status and headers at once (`app_head`: CR,
//! LF, NUL or other control bytes raise, so the app fails before anything is sent and the
//! client gets a 500) and applies the exc_info rules. The response itself is written by the
//! call's [`Reply`] (HTTP/1.1's `Sender`, a stream's `Response`), which both the
//! iterable driver and `write()` use: the rules here are written once, generic over it, and
//! the object holds one of the two ([`Sink`], matched once per call).
//!
//! Both callables, and `wsgi.early_hints` (a `103 Early Hints` before start_response), are
//! bound methods of one [`StartResponse`] object (builtin methods, called without an argument
//! tuple). On HTTP/1.1 a thread keeps its object and the three methods between requests
//! ([`Callables`]) and gives them to the next request only if nothing else holds any of the
//! four: an app that kept `start_response`, `write` or `wsgi.early_hints` keeps its own, and
//! the next request gets new ones. Making and freeing the objects cost about 1,000
//! instructions of a hello world. A stream's (HTTP/2, HTTP/3) are made for it and let go after it.

use std::cell::RefCell;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyAssertionError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::{ffi, intern};

use sluicegate_proto::RequestHead;

use super::app_head::{parse_head, parse_hints};
use super::body_block::SendError;
use super::reply::{HintsRefused, Reply};
use super::sender::{Sender, SenderSettings};
use super::streams::response::Response;
use crate::io::conn::Conn;
use crate::io::event_loop::LoopCtx;
use crate::io::out_queue::OutQueue;

/// The response a [`StartResponse`] acts on: one per protocol.
pub enum Sink {
    /// An HTTP/1.1 request's sender.
    H1(Mutex<Sender>),
    /// An HTTP/2 or HTTP/3 stream's response.
    Stream(Mutex<Response>),
}

/// The state behind `start_response`, `write` and `wsgi.early_hints` for one call: its
/// response, and the `write` method that start_response returns.
#[pyclass(module = "sluicegate._core", name = "StartResponse", frozen)]
pub struct StartResponse {
    pub sink: Sink,
    /// `self.write`, made once. (A reference cycle while the object is kept; broken by
    /// [`Callables::discard`].)
    write: Mutex<Option<Py<PyAny>>>,
}

impl StartResponse {
    /// HTTP/1.1's sender. Only HTTP/1.1's driver asks, of the callables it made.
    pub fn sender(&self) -> &Mutex<Sender> {
        match &self.sink {
            Sink::H1(s) => s,
            Sink::Stream(_) => unreachable!("a stream's start_response has no Sender"),
        }
    }

    /// A stream's response (HTTP/2, HTTP/3). Only the stream's call asks, of the callables it made.
    pub fn response(&self) -> &Mutex<Response> {
        match &self.sink {
            Sink::Stream(r) => r,
            Sink::H1(_) => unreachable!("an HTTP/1.1 start_response has no stream"),
        }
    }
}

#[pymethods]
impl StartResponse {
    #[pyo3(signature = (status, headers, exc_info=None))]
    fn start_response(
        &self,
        py: Python<'_>,
        status: &Bound<'_, PyAny>,
        headers: &Bound<'_, PyAny>,
        exc_info: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let exc_info = exc_info.filter(|e| !e.is_none());
        match &self.sink {
            Sink::H1(s) => record_head(s, status, headers, exc_info)?,
            Sink::Stream(r) => record_head(r, status, headers, exc_info)?,
        }
        match &*self.write.lock_py_attached(py).unwrap() {
            Some(w) => Ok(w.clone_ref(py)),
            None => Err(PyValueError::new_err(
                "start_response called after the response was complete",
            )),
        }
    }

    /// `environ["wsgi.early_hints"]`: send `headers` (a list of `(name, value)`) as a `103
    /// Early Hints` now (`Reply::send_early_hints`). Validated as start_response's headers
    /// are; an error after start_response, since the final head may be on its way.
    fn early_hints(&self, py: Python<'_>, headers: &Bound<'_, PyAny>) -> PyResult<()> {
        let sent = match &self.sink {
            Sink::H1(s) => send_hints(py, s, headers)?,
            Sink::Stream(r) => send_hints(py, r, headers)?,
        };
        match sent {
            Ok(()) => Ok(()),
            Err(HintsRefused::AfterStart) => Err(PyRuntimeError::new_err(
                "wsgi.early_hints called after start_response",
            )),
            Err(HintsRefused::Finished) => Err(PyValueError::new_err(
                "wsgi.early_hints called after the response was complete",
            )),
        }
    }

    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let sent = match &self.sink {
            Sink::H1(s) => s.lock_py_attached(py).unwrap().send_block(py, data),
            Sink::Stream(r) => Reply::send_block(&mut *r.lock_py_attached(py).unwrap(), py, data),
        };
        sent.map_err(write_error)
    }
}

/// start_response on `reply`: the exc_info rules of PEP 3333, then the checked head recorded.
fn record_head<R: Reply>(
    reply: &Mutex<R>,
    status: &Bound<'_, PyAny>,
    headers: &Bound<'_, PyAny>,
    exc_info: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let mut reply = reply.lock_py_attached(status.py()).unwrap();
    match exc_info {
        Some(info) if reply.head_sent() => {
            // PEP 3333: too late to change the answer; re-raise the app's error.
            drop(reply);
            let value = info.get_item(1)?;
            return Err(PyErr::from_value(value));
        }
        Some(_) => {}
        None if reply.app_started() => {
            return Err(PyAssertionError::new_err(
                "start_response called a second time without exc_info",
            ));
        }
        None => {}
    }
    let buf = reply.head_buffer();
    let head = parse_head(status, headers, reply.max_app_headers(), buf)?;
    reply.set_app_head(head);
    Ok(())
}

/// `wsgi.early_hints` on `reply`: the hints checked, then sent (or refused).
fn send_hints<R: Reply>(
    py: Python<'_>,
    reply: &Mutex<R>,
    headers: &Bound<'_, PyAny>,
) -> PyResult<Result<(), HintsRefused>> {
    let mut reply = reply.lock_py_attached(py).unwrap();
    let hints = parse_hints(headers, reply.max_app_headers())?;
    Ok(reply.send_early_hints(py, &hints))
}

/// The exception `write()` raises in the app, on every protocol.
pub(crate) fn write_error(e: SendError) -> PyErr {
    match e {
        SendError::NotBytes(t) => PyTypeError::new_err(format!("write() takes bytes, not {t}")),
        SendError::NotStarted => PyAssertionError::new_err("write() called before start_response"),
        SendError::Finished => {
            PyValueError::new_err("write() called after the response was complete")
        }
        SendError::ClientGone => super::errors::ClientDisconnected::new_err(
            "client disconnected while the response was being sent",
        ),
    }
}

/// One request's `StartResponse`, its bound `start_response` method (the app's argument) and
/// its bound `early_hints` method (`environ["wsgi.early_hints"]`).
pub struct Callables {
    pub sr: Py<StartResponse>,
    pub start: Py<PyAny>,
    pub hints: Py<PyAny>,
}

thread_local! {
    /// The callables the last request on this thread left unshared, for the next one. The
    /// server's threads drop them before they end (`drop_kept`); a thread that ends otherwise
    /// leaves them, as Python may be gone by then.
    static KEPT: RefCell<ManuallyDrop<Option<Callables>>> =
        const { RefCell::new(ManuallyDrop::new(None)) };
}

impl Callables {
    /// Callables for a request, with its sender: this thread's kept ones (their sender made
    /// anew in place), or new ones. The arguments are `Sender::new`'s.
    pub fn take(
        py: Python<'_>,
        conn: &Conn,
        out: OutQueue,
        head: &RequestHead,
        ctx: Arc<LoopCtx>,
        settings: SenderSettings,
    ) -> Callables {
        if let Some(c) = KEPT.with(|k| k.borrow_mut().take()) {
            c.sr.get()
                .sender()
                .lock_py_attached(py)
                .unwrap()
                .renew(conn, out, head, ctx, settings);
            return c;
        }
        let sender = Sender::new(conn, out, head, ctx, settings);
        Callables::new(py, Sink::H1(Mutex::new(sender)))
    }

    /// New callables over `sink`.
    pub fn new(py: Python<'_>, sink: Sink) -> Callables {
        let sr = Bound::new(
            py,
            StartResponse {
                sink,
                write: Mutex::new(None),
            },
        )
        .expect("allocating start_response");
        let write = sr
            .getattr(intern!(py, "write"))
            .expect("StartResponse.write");
        let start = sr
            .getattr(intern!(py, "start_response"))
            .expect("StartResponse.start_response");
        let hints = sr
            .getattr(intern!(py, "early_hints"))
            .expect("StartResponse.early_hints");
        *sr.get().write.lock_py_attached(py).unwrap() = Some(write.unbind());
        Callables {
            sr: sr.unbind(),
            start: start.unbind(),
            hints: hints.unbind(),
        }
    }

    /// Drop this thread's kept callables: for a thread about to end, while it is attached
    /// (after its thread state is gone, a kept object could not be freed).
    pub fn drop_kept(_py: Python<'_>) {
        if let Some(c) = KEPT.with(|k| k.borrow_mut().take()) {
            c.discard();
        }
    }

    /// The request is over (its sender ended). Kept for the next request on this thread if
    /// only these references remain: the object is held here, by `start`, `hints` and `write`;
    /// each method only here (`write` from inside the object). Otherwise the app kept one of
    /// them (a kept `wsgi.early_hints` must never reach a later request's connection): the
    /// cycle through `write` is broken, and the app's reference keeps what it needs.
    pub fn finish(self, py: Python<'_>) {
        let unshared = {
            let write = self.sr.get().write.lock_py_attached(py).unwrap();
            // SAFETY: reading the reference counts of live objects we hold, with the GIL.
            unsafe {
                ffi::Py_REFCNT(self.sr.as_ptr()) == 4
                    && ffi::Py_REFCNT(self.start.as_ptr()) == 1
                    && ffi::Py_REFCNT(self.hints.as_ptr()) == 1
                    && write
                        .as_ref()
                        .is_some_and(|w| ffi::Py_REFCNT(w.as_ptr()) == 1)
            }
        };
        // A nested request (an app calling the server again) may have left its own already.
        let this = if unshared {
            KEPT.with(|k| {
                let mut k = k.borrow_mut();
                if k.is_none() {
                    **k = Some(self);
                    None
                } else {
                    Some(self)
                }
            })
        } else {
            Some(self)
        };
        if let Some(c) = this {
            c.discard();
        }
    }

    /// Let these callables go: the cycle through `write` is broken, so that what nobody else
    /// holds is freed (with the GIL held, as every caller is attached).
    pub fn discard(self) {
        let write = self.sr.get().write.lock().unwrap().take();
        drop(write);
    }
}
