//! Running one request through the app: [`run_request`] builds `wsgi.input` and the environ,
//! calls the app, drives what it returned (a list or tuple sent as one known-length body, a
//! file wrapper sent with `sendfile(2)` or `readinto`, any other iterable block by block),
//! calls its `close()` on every path, gives the body state back to the connection, and decides
//! with the sender whether the connection lives on. Output that the socket did not take by the
//! time the app is done is left in the connection's queue for the event loop, so the app
//! thread is free at once.

use crate::clock::{now_ns, since};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyMemoryView, PyTuple};
use sluicegate_proto::forwarded::{self, Hop, Resolved};
use sluicegate_proto::h1::decode::BodyDecoder;
use sluicegate_proto::{BodyFraming, RequestHead};

use super::app_head::AppHead;
use super::body::BodyState;
use super::body_block::SendError;
use super::bridge::{type_name, Bridge};
use super::file_wrapper::FileWrapper;
use super::input::Input;
use super::sender::SenderSettings;
use super::start_response::{Callables, StartResponse};
use crate::io::conn::AfterOutput;
use crate::io::error_answer::{error_answer, GATEWAY_TIMEOUT, INTERNAL_ERROR, REQUEST_TIMEOUT};
use crate::io::event_loop::Work;
use crate::io::file_body::RegularFile;
use crate::io::read_ahead::{BodyFailure, LoopEntry};
use crate::observe::entry::{KeptEnviron, LogExtras};
use crate::observe::request_end::PendingLog;
use crate::observe::timings::End as LogEnd;

/// How the app's part of a request ended.
enum AppEnd {
    Done,
    /// The app raised (or returned something unusable); the error is logged.
    Failed,
    /// The client went away mid-response: nothing to log as a server error.
    ClientGone,
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

/// Run one request on the current thread (inline on the loop thread or on a pool thread).
/// Returns the connection, with output the socket did not take yet left in `conn.out`, and
/// `after_output` set to close when the connection must not carry another request.
pub fn run_request(bridge: &Bridge, py: Python<'_>, work: Work) -> Box<crate::io::conn::Conn> {
    let Work {
        mut conn,
        head,
        uwsgi,
        parsed_at,
        ..
    } = work;
    let app_started = now_ns();
    let inline = super::stream_hook::in_inline_call();
    conn.requests += 1;
    bridge.counters().requests.fetch_add(1, Ordering::Relaxed);
    let transport = conn.transport();
    // TLS: the environ's SSL_* facts, plain values made once per connection by `io`.
    let tls_facts = transport.tls_facts();
    let keep_alive = head.keep_alive && !bridge.loop_ctx.keep_alive_ending();
    let client_closes = !head.keep_alive;

    // wsgi.input: the shared empty input for body-less requests, else a streaming reader that
    // borrows the connection's read buffer for the request.
    let limits = &bridge.config.limits;
    let input_obj: Option<Py<Input>> = match head.body {
        BodyFraming::None => None,
        framing => {
            let raw = conn.rbuf.take().unwrap_or_default();
            let decoder = BodyDecoder::new(framing, limits.max_body, limits.max_header_bytes);
            let state = BodyState::new(
                transport.clone(),
                raw,
                decoder,
                head.expect_continue,
                bridge.config.read_timeout,
                bridge.config.body_pace,
                conn.registered.then(|| LoopEntry {
                    ctx: Arc::clone(&bridge.loop_ctx),
                    token: conn.token,
                }),
            );
            Some(Py::new(py, Input::new(Some(state))).expect("allocating wsgi.input"))
        }
    };
    let input_any = match &input_obj {
        Some(i) => i.bind(py).clone().into_any(),
        None => bridge.empty_input.bind(py).clone().into_any(),
    };

    // --timeout: the call is watched from here until the request is over.
    let ticket = bridge
        .deadlines
        .as_ref()
        .map(|d| d.enter(transport, request_line(&head)));
    let out = conn.out.spare();
    let callables = Callables::take(
        py,
        &conn,
        out,
        &head,
        Arc::clone(&bridge.loop_ctx),
        SenderSettings {
            keep_alive,
            write_timeout: bridge.config.write_timeout,
            high_water: bridge.config.write_high_water,
            server_header: bridge.server_header,
            max_app_headers: bridge.config.limit_response_headers,
            gate: ticket.as_ref().map(|t| Arc::clone(&t.gate)),
            body: input_obj
                .as_ref()
                .map(|i| (i.clone_ref(py), bridge.config.max_drain)),
            // uwsgi: nginx reads the answer until the connection closes (no chunked coding).
            close_delimited: uwsgi.is_some(),
            server_timing: bridge
                .config
                .server_timing
                .then_some((parsed_at, app_started)),
        },
    );
    let sr = &callables.sr;

    let forwarded = forwarded_facts(
        bridge,
        Hop::of(conn.peer.ip(), conn.peer_origin),
        &head,
        uwsgi.as_deref(),
    );
    let (end, logged_environ) = match bridge.environ.build(
        py,
        conn.listener,
        &head,
        &conn.peer,
        &mut conn.upper,
        &input_any,
        forwarded.as_deref(),
        tls_facts.as_deref(),
    ) {
        Ok(environ) => call_and_keep(bridge, py, &head, environ.into_any(), &callables),
        Err(e) => {
            bridge.log_exception(py, &e, "building the environ");
            (AppEnd::Failed, None)
        }
    };
    let app_done = now_ns();

    // Give the body state back: the connection's buffer (with pipelined bytes after the body),
    // and learn whether the body was consumed, so the connection can carry another request.
    let mut body_ok = true;
    let mut body_answer = None;
    if let Some(input) = input_obj {
        if let Some(mut st) = input.get().detach() {
            body_answer = match st.failure {
                Some(BodyFailure::Protocol(e)) => Some((e.status(), e.reason())),
                Some(BodyFailure::TimedOut | BodyFailure::TooSlow) => Some(REQUEST_TIMEOUT),
                _ => None,
            };
            if !st.complete() {
                body_ok = if st.failure.is_some() || (st.continue_due && !st.continue_sent) {
                    // Never sent 100 Continue: the client may not send the body; don't wait.
                    false
                } else {
                    st.drain(py, bridge.config.max_drain)
                };
            }
            conn.rbuf = Some(st.raw);
        } else {
            body_ok = false;
        }
    }

    let mut sender = sr.get().inner.lock().unwrap();
    match end {
        AppEnd::Done => {}
        AppEnd::ClientGone => sender.client_gone = true,
        AppEnd::Failed => {
            if sender.headers_sent() {
                sender.abort();
            } else if !sender.claim_head() {
                // --timeout answered already.
                sender.client_gone = true;
            } else {
                // Nothing was sent: a clean error answer. A body error gets its own status.
                let answer = body_answer.unwrap_or(INTERNAL_ERROR);
                sender.out.clear();
                sender
                    .out
                    .push_owned(error_answer(answer, bridge.server_header));
                sender.abort();
                sender.set_app_head(AppHead::server_answer(answer.0, answer.1));
                let _ = sender.flush_local(py);
            }
        }
    }
    // Leaving the deadline's registry before the socket can be closed (see `wsgi::deadline`).
    let (timed_out, answered_504) = match (ticket, &bridge.deadlines) {
        (Some(t), Some(d)) => {
            let answered = t.gate.timed_out();
            (d.leave(py, t), answered)
        }
        _ => (false, false),
    };
    let keeps = sender.keeps_alive() && body_ok && matches!(end, AppEnd::Done) && !timed_out;
    let (status, sent) = if answered_504 {
        (GATEWAY_TIMEOUT.0, 0)
    } else {
        (sender.status_code(), sender.body_bytes())
    };
    let gone = sender.client_gone || timed_out;
    let send_from = sender.head_at().unwrap_or(app_done);
    let extras = log_extras(bridge, sender.app_head(), logged_environ);
    conn.out = sender.end();
    // Written already (the usual small answer): the queue's storage stays with this thread.
    conn.out.release();
    sender.release_request();
    drop(sender);
    // Kept for this thread's next request unless the app kept a reference.
    callables.finish(py);
    conn.after_output = if keeps {
        AfterOutput::KeepAlive
    } else if !body_ok {
        // The client may still be sending the body nobody read: a plain close would answer
        // its next bytes with a reset, which can destroy the answer before it is read (RFC 9112
        // §9.6). Half-close, and read and drop what comes until the client closes.
        AfterOutput::CloseLingering
    } else if client_closes {
        AfterOutput::CloseAsAsked
    } else {
        AfterOutput::Close
    };
    if gone {
        conn.out.clear();
    }
    let client = forwarded
        .as_ref()
        .and_then(|f| f.client)
        .map(|(ip, _)| ip)
        .or_else(|| conn.peer.ip());
    let log_end = if timed_out {
        LogEnd::Timeout
    } else if gone {
        LogEnd::ClientGone
    } else if matches!(end, AppEnd::Failed) {
        LogEnd::Error
    } else {
        LogEnd::Ok
    };
    let queue = since(parsed_at, app_started);
    let app = since(app_started, app_done);
    let ctx = &bridge.loop_ctx;
    let ended = PendingLog {
        head,
        client,
        status,
        body_bytes: sent,
        parsed_at,
        queue,
        app,
        send_from,
        end: log_end,
        inline: Some(inline),
        extras,
    };
    if conn.out.is_empty() {
        // Every byte was taken while the app ran: accounted now (nothing boxed).
        let log = ctx.settings.access_log.as_deref();
        ended.account_at(log, &ctx.counters.by_request, app_done);
    } else {
        // The loop sends the rest: accounted when it has (or when the client leaves).
        conn.pending_log = Some(Box::new(ended));
    }
    conn
}

/// [`call_and_drive`], then the environ variables the access log's format names, as the app
/// left them (see [`log_environ`]).
fn call_and_keep(
    bridge: &Bridge,
    py: Python<'_>,
    head: &RequestHead,
    environ: Bound<'_, PyAny>,
    callables: &Callables,
) -> (AppEnd, Option<KeptEnviron>) {
    let end = call_and_drive(bridge, py, head, environ.clone(), callables);
    (end, log_environ(bridge, &environ))
}

/// What the access log's format names beyond the request (gunicorn's `{name}o`, `{name}e`):
/// kept only for such a format.
fn log_extras(
    bridge: &Bridge,
    app_head: &crate::wsgi::app_head::AppHead,
    environ: Option<KeptEnviron>,
) -> Option<Box<LogExtras>> {
    let log = bridge.loop_ctx.settings.access_log.as_deref()?;
    if !log.wants_extras() {
        return None;
    }
    let extras = LogExtras::of(app_head.headers());
    Some(Box::new(match environ {
        Some(kept) => extras.with_environ(kept),
        None => extras,
    }))
}

/// The environ variables the access log's format names (gunicorn's `{name}e`, looked up
/// lowercased as gunicorn does), as text, after the app's call; None when it names none.
fn log_environ(bridge: &Bridge, environ: &Bound<'_, PyAny>) -> Option<KeptEnviron> {
    let names = bridge
        .loop_ctx
        .settings
        .access_log
        .as_deref()?
        .environ_names();
    if names.is_empty() {
        return None;
    }
    let dict = environ.cast::<pyo3::types::PyDict>().ok()?;
    let mut kept = Vec::new();
    for (key, value) in dict.iter() {
        let Ok(key) = key.str() else { continue };
        let key = key.to_string().to_lowercase();
        if names.contains(&key) {
            let is_str = value.is_instance_of::<pyo3::types::PyString>();
            let text = value.str().map(|s| s.to_string()).unwrap_or_default();
            kept.push((key, text, is_str));
        }
    }
    Some(kept)
}

/// Call the app and drive its iterable; `close()` is called on every path once the app
/// returned something.
fn call_and_drive(
    bridge: &Bridge,
    py: Python<'_>,
    head: &RequestHead,
    environ: Bound<'_, PyAny>,
    callables: &Callables,
) -> AppEnd {
    let sr = &callables.sr;
    if bridge.config.early_hints {
        // (No error to expect: the environ is a dict the builder just made.)
        let key = pyo3::intern!(py, "wsgi.early_hints");
        let _ = environ.set_item(key, callables.hints.bind(py));
    }
    let result = match bridge
        .app
        .bind(py)
        .call1((environ, callables.start.bind(py)))
    {
        Ok(r) => r,
        Err(e) => {
            bridge.log_exception(py, &e, &request_label(head));
            return AppEnd::Failed;
        }
    };
    let end = drive(bridge, py, head, &result, sr);
    // PEP 3333: close() is called whatever happened. (Only exact lists and tuples are known
    // to have none; a subclass may define one.)
    if !result.is_exact_instance_of::<PyList>() && !result.is_exact_instance_of::<PyTuple>() {
        if let Ok(close) = result.getattr(pyo3::intern!(py, "close")) {
            if let Err(e) = close.call0() {
                bridge.log_exception(py, &e, "calling the response iterable's close()");
                return AppEnd::Failed;
            }
        } else {
            // No close attribute: the getattr error is expected and dropped.
        }
    }
    end
}

/// For a file wrapper over a regular file: our own descriptor for it, the position the app left
/// it at (its `tell()`, which accounts for Python's buffering), and the bytes from there to the
/// end. `None` means "iterate it in Python instead" (pipes, sockets, BytesIO, errors).
pub(crate) fn regular_file_range(
    py: Python<'_>,
    fw: &FileWrapper,
) -> Option<(std::fs::File, u64, u64)> {
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
    file.range_from(pos)
}

/// Size of the buffer `drive_readinto` reads into (at least the app's blksize).
const READINTO_BUF: usize = 256 * 1024;

/// Send a file wrapper's content by `readinto` into one reused buffer. `None`: not possible
/// (no readinto, or it returned None) — the caller iterates the wrapper for the rest.
fn drive_readinto(
    bridge: &Bridge,
    py: Python<'_>,
    head: &RequestHead,
    fw: &FileWrapper,
    sr: &StartResponse,
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
        let mut s = sr.inner.lock().unwrap();
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

/// What this request's forwarding facts are (`--forwarded-allow-ips`; the decision is
/// proto's): a uwsgi request's from nginx's own variables, never the forwarding headers it
/// passes through unchanged; an HTTP request's from its forwarding headers. None: the hop is
/// not trusted, or said nothing. Values that do not parse are counted.
fn forwarded_facts(
    bridge: &Bridge,
    hop: Hop,
    head: &RequestHead,
    uwsgi: Option<&sluicegate_proto::uwsgi::UwsgiFacts>,
) -> Option<Box<Resolved>> {
    let (trust, family) = bridge.config.forwarding.as_ref()?;
    if let Some(facts) = uwsgi {
        return forwarded::trusted(Some(trust), hop).then(|| Box::new(facts.resolved()));
    }
    let r = forwarded::forwarded(head, hop, Some(trust), *family)?;
    if r.malformed > 0 {
        bridge
            .counters()
            .forwarded_malformed
            .fetch_add(u64::from(r.malformed), Ordering::Relaxed);
    }
    Some(Box::new(r))
}

/// "METHOD TARGET VERSION", as the client sent it (lossy for non-UTF-8 bytes). Built every
/// app call while calls are registered (the control socket's default): one allocation of the
/// exact size and copies, not `format!`, which cost about 600 instructions a request more
/// (callgrind, hello world).
fn request_line(head: &RequestHead) -> String {
    let (method, target) = (head.method(), head.target());
    let version: &[u8] = if head.version == sluicegate_proto::Version::Http10 {
        b" HTTP/1.0"
    } else {
        b" HTTP/1.1"
    };
    let mut line = Vec::with_capacity(method.len() + target.len() + 1 + version.len());
    line.extend_from_slice(method);
    line.push(b' ');
    line.extend_from_slice(target);
    line.extend_from_slice(version);
    String::from_utf8(line).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

fn request_label(head: &RequestHead) -> String {
    format!(
        "Error handling request {} {}",
        String::from_utf8_lossy(head.method()),
        String::from_utf8_lossy(head.target())
    )
}

fn drive(
    bridge: &Bridge,
    py: Python<'_>,
    head: &RequestHead,
    result: &Bound<'_, PyAny>,
    sr: &Py<StartResponse>,
) -> AppEnd {
    let sr = sr.get();
    let fail_send = |e: SendError, what: &str| -> AppEnd {
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
    };

    // Known-length fast paths: a list or tuple, or (against PEP 3333, but common) bare bytes,
    // sent as one block instead of being iterated byte by byte.
    let bare = result.is_instance_of::<PyBytes>()
        || result.is_instance_of::<PyByteArray>()
        || result.is_instance_of::<PyMemoryView>();
    if bare && !bridge.warned_bare_bytes.swap(true, Ordering::Relaxed) {
        bridge.log_warning(py, &format!(
            "the app {} returned a bare {} instead of an iterable of bytes; sending it as one block (this warning is shown once)",
            bridge.app_name, type_name(result)
        ));
    }
    // One block (the usual `[body]`) is sent from where it is, without a vector.
    let seq: Option<Blocks<'_>> = if bare {
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
    };
    if let Some(blocks) = seq {
        let mut s = sr.inner.lock().unwrap();
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
        if let Some((file, offset, len)) = regular_file_range(py, fw.get()) {
            let mut s = sr.inner.lock().unwrap();
            return match s
                .send_file(py, file, offset, len)
                .and_then(|_| s.finish(py))
            {
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
        if let Some(end) = drive_readinto(bridge, py, head, fw.get(), sr) {
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
        let mut s = sr.inner.lock().unwrap();
        if let Err(e) = s.send_block(py, &item) {
            drop(s);
            return fail_send(e, "yielded");
        }
    }
    let mut s = sr.inner.lock().unwrap();
    match s.finish(py) {
        Ok(()) => AppEnd::Done,
        Err(e) => {
            drop(s);
            fail_send(e, "returned")
        }
    }
}
