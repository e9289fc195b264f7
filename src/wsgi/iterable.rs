//! Calling the app and driving what it returned ([`call_and_drive`], [`drive`]), for every
//! protocol, over the call's [`Reply`]: a list or tuple sent as one known-length body (bare
//! bytes too, with a warning once), a file wrapper over a regular file sent whole (HTTP/1.1:
//! `sendfile(2)`), another file-like read with `readinto` into one reused buffer, any other
//! iterable block by block; `close()` on every path; and how the app's part ended
//! ([`AppEnd`]).

use std::sync::atomic::Ordering;
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyMemoryView, PyTuple};
use sluicegate_proto::RequestHead;

use super::body_block::SendError;
use super::bridge::{type_name, Bridge};
use super::current::Running;
use super::file_wrapper::FileWrapper;
use super::reply::Reply;
use crate::io::file_body::RegularFile;
use crate::observe::timings::End as LogEnd;

/// How the app's part of a request ended.
/// The same for an HTTP/1.1 request and an HTTP/2 stream.
pub(crate) enum AppEnd {
    Done,
    /// The app raised (or returned something unusable); the error is logged.
    Failed,
    /// The client went away mid-response: nothing to log as a server error.
    ClientGone,
}

impl AppEnd {
    /// How the access log says the request ended, unless it timed out or the client left.
    pub(crate) fn log_end(&self) -> LogEnd {
        match self {
            AppEnd::Done => LogEnd::Ok,
            AppEnd::ClientGone => LogEnd::ClientGone,
            AppEnd::Failed => LogEnd::Error,
        }
    }
}

/// The blocks of a body known up front (a list, a tuple, bare bytes).
enum Blocks<'py> {
    One(Bound<'py, PyAny>),
    Many(Vec<Bound<'py, PyAny>>),
}

impl<'py> Blocks<'py> {
    fn as_slice(&self) -> &[Bound<'py, PyAny>] {
        match self {
            Blocks::One(b) => std::slice::from_ref(b),
            Blocks::Many(v) => v,
        }
    }
}

/// For a file wrapper over a regular file: the file (by the app's descriptor) and the position
/// the app left it at (its `tell()`, which accounts for Python's buffering). `None` means
/// "iterate it in Python instead" (pipes, sockets, BytesIO, errors).
pub(crate) fn regular_file_range(py: Python<'_>, fw: &FileWrapper) -> Option<(RegularFile, u64)> {
    let f = fw.filelike.bind(py);
    let fd: i32 = f
        .call_method0(pyo3::intern!(py, "fileno"))
        .ok()?
        .extract()
        .ok()?;
    let file = RegularFile::of(fd)?;
    let pos: u64 = match f.call_method0(pyo3::intern!(py, "tell")) {
        Ok(p) => p.extract().ok()?,
        Err(_) => file.position()?,
    };
    Some((file, pos))
}

/// Size of the buffer `drive_readinto` reads into (at least the app's blksize).
const READINTO_BUF: usize = 256 * 1024;

/// Send a file wrapper's content by `readinto` into one reused buffer. `None`: not possible
/// (no readinto, or it returned None) — the caller iterates the wrapper for the rest.
fn drive_readinto<R: Reply>(
    bridge: &Bridge,
    py: Python<'_>,
    head: &RequestHead,
    fw: &FileWrapper,
    reply: &Mutex<R>,
) -> Option<AppEnd> {
    let f = fw.filelike.bind(py);
    let readinto = f.getattr(pyo3::intern!(py, "readinto")).ok()?;
    let buf = PyByteArray::new(py, &vec![0u8; fw.blksize.max(READINTO_BUF)]);
    loop {
        let n = match readinto.call1((&buf,)) {
            Ok(v) if v.is_none() => return None,
            Ok(v) => match v.extract::<usize>() {
                Ok(n) => n,
                Err(_) => return None,
            },
            Err(e) => {
                bridge.log_exception(py, &e, &request_label(head));
                return Some(AppEnd::Failed);
            }
        };
        let mut s = reply.lock_py_attached(py).unwrap();
        let res = if n == 0 {
            s.finish(py)
        } else {
            // SAFETY: the bytearray is ours (no Python code holds it besides the readinto call,
            // which returned); it is read while the GIL is held and not resized.
            let data = unsafe { buf.as_bytes() };
            s.send_copy(py, &data[..n.min(data.len())])
        };
        drop(s);
        match res {
            Ok(()) if n == 0 => return Some(AppEnd::Done),
            Ok(()) => {}
            Err(SendError::ClientGone) => return Some(AppEnd::ClientGone),
            Err(_) => return Some(AppEnd::Failed),
        }
    }
}

pub(super) fn request_label(head: &RequestHead) -> String {
    format!(
        "Error handling request {} {}",
        String::from_utf8_lossy(head.method()),
        String::from_utf8_lossy(head.target())
    )
}

/// How the app's part ends when a block could not be sent (`what` the app did with it:
/// "returned", "yielded"); the app's mistakes are logged.
fn send_failed(
    bridge: &Bridge,
    py: Python<'_>,
    head: &RequestHead,
    e: SendError,
    what: &str,
) -> AppEnd {
    match e {
        SendError::ClientGone => AppEnd::ClientGone,
        SendError::NotBytes(t) => {
            bridge.log_error(
                py,
                &format!(
                    "{}: the app {what} {t}, but a WSGI body must be bytes",
                    request_label(head)
                ),
            );
            AppEnd::Failed
        }
        SendError::NotStarted => {
            bridge.log_error(
                py,
                &format!(
                    "{}: the app returned a body without calling start_response",
                    request_label(head)
                ),
            );
            AppEnd::Failed
        }
        SendError::Finished => AppEnd::Failed,
    }
}

/// The blocks of a body known up front: a list or tuple, or (against PEP 3333, but common)
/// bare bytes, sent as one block instead of being iterated byte by byte. One block (the usual
/// `[body]`) is sent from where it is, without a vector. `None`: not such a body.
fn known_blocks<'py>(
    bridge: &Bridge,
    py: Python<'py>,
    result: &Bound<'py, PyAny>,
) -> Option<Blocks<'py>> {
    let bare = result.is_instance_of::<PyBytes>()
        || result.is_instance_of::<PyByteArray>()
        || result.is_instance_of::<PyMemoryView>();
    if bare && !bridge.warned_bare_bytes.swap(true, Ordering::Relaxed) {
        bridge.log_warning(py, &format!(
            "the app {} returned a bare {} instead of an iterable of bytes; sending it as one block (this warning is shown once)",
            bridge.app_name, type_name(result)
        ));
    }
    if bare {
        Some(Blocks::One(result.clone()))
    } else if let Ok(l) = result.cast::<PyList>() {
        Some(match l.len() {
            1 => Blocks::One(l.get_item(0).expect("index 0 of a list of one")),
            _ => Blocks::Many(l.iter().collect()),
        })
    } else if let Ok(t) = result.cast::<PyTuple>() {
        Some(Blocks::Many(t.iter().collect()))
    } else {
        None
    }
}

/// Send what the app returned through `reply`.
pub(crate) fn drive<R: Reply>(
    bridge: &Bridge,
    py: Python<'_>,
    head: &RequestHead,
    result: &Bound<'_, PyAny>,
    reply: &Mutex<R>,
) -> AppEnd {
    let fail_send = |e: SendError, what: &str| send_failed(bridge, py, head, e, what);

    if let Some(blocks) = known_blocks(bridge, py, result) {
        let mut s = reply.lock_py_attached(py).unwrap();
        return match s.send_all(py, blocks.as_slice()).and_then(|_| s.finish(py)) {
            Ok(()) => AppEnd::Done,
            Err(e) => {
                drop(s);
                fail_send(e, "returned")
            }
        };
    }

    // wsgi.file_wrapper over a regular file: sendfile(2), no Python iteration at all.
    if let Ok(fw) = result.cast::<FileWrapper>() {
        if let Some((file, pos)) = regular_file_range(py, fw.get()) {
            let mut s = reply.lock_py_attached(py).unwrap();
            return match s.send_file(py, &file, pos).and_then(|_| s.finish(py)) {
                Ok(()) => AppEnd::Done,
                Err(e) => {
                    drop(s);
                    fail_send(e, "returned")
                }
            };
        }
    }

    // wsgi.file_wrapper over another file-like (a pipe, a socket file, BytesIO): readinto() one
    // large buffer, reused for every block; falls back to iteration if readinto says None
    // (non-blocking, no data yet) or does not exist.
    if let Ok(fw) = result.cast::<FileWrapper>() {
        if let Some(end) = drive_readinto(bridge, py, head, fw.get(), reply) {
            return end;
        }
    }

    let iter = match result.try_iter() {
        Ok(i) => i,
        Err(e) => {
            bridge.log_exception(
                py,
                &e,
                &format!(
                    "{}: the app's return value is not iterable",
                    request_label(head)
                ),
            );
            return AppEnd::Failed;
        }
    };
    for item in iter {
        let item = match item {
            Ok(i) => i,
            Err(e) => {
                bridge.log_exception(py, &e, &request_label(head));
                return AppEnd::Failed;
            }
        };
        let mut s = reply.lock_py_attached(py).unwrap();
        if let Err(e) = s.send_block(py, &item) {
            drop(s);
            return fail_send(e, "yielded");
        }
    }
    let mut s = reply.lock_py_attached(py).unwrap();
    match s.finish(py) {
        Ok(()) => AppEnd::Done,
        Err(e) => {
            drop(s);
            fail_send(e, "returned")
        }
    }
}

/// Call the app with `environ` and `start` (its `start_response`), `hints` set as
/// `wsgi.early_hints` (given when `--early-hints` is on), and drive its iterable through `reply`;
/// `close()` is called on every path once the app returned something.
pub(crate) fn call_and_drive<R: Reply>(
    bridge: &Bridge,
    py: Python<'_>,
    head: &RequestHead,
    (environ, start, hints): (
        Bound<'_, PyAny>,
        &Bound<'_, PyAny>,
        Option<&Bound<'_, PyAny>>,
    ),
    reply: &Mutex<R>,
) -> AppEnd {
    if let Some(hints) = hints.filter(|_| bridge.config.early_hints) {
        // (No error to expect: the environ is a dict the builder just made.)
        let _ = environ.set_item(pyo3::intern!(py, "wsgi.early_hints"), hints);
    }
    // The environ stays known to this thread until the iterable is closed.
    let _running = Running::mark(&environ);
    let result = match bridge.app.bind(py).call1((environ, start)) {
        Ok(r) => r,
        Err(e) => {
            bridge.log_exception(py, &e, &request_label(head));
            return AppEnd::Failed;
        }
    };
    let end = drive(bridge, py, head, &result, reply);
    // PEP 3333: close() is called whatever happened. (Only exact lists and tuples are known
    // to have none; a subclass may define one. Asking a list raised and formatted an
    // AttributeError per request, a tenth of a hello world's instructions.) Our own file
    // wrapper, which Python cannot subclass, is closed without making a bound method.
    let closed =
        if result.is_exact_instance_of::<PyList>() || result.is_exact_instance_of::<PyTuple>() {
            Ok(())
        } else if let Ok(fw) = result.cast::<FileWrapper>() {
            fw.get().close(py)
        } else {
            match result.getattr(pyo3::intern!(py, "close")) {
                Ok(close) => close.call0().map(drop),
                Err(_) => Ok(()),
            }
        };
    if let Err(e) = closed {
        bridge.log_exception(py, &e, "calling the response iterable's close()");
        return AppEnd::Failed;
    }
    end
}
