//! Running one request through the app: [`run_request`] builds `wsgi.input` and the environ,
//! calls the app, drives what it returned (`iterable.rs`), calls its `close()` on every path,
//! gives the body state back to the connection, and decides with the sender whether the
//! connection lives on. Output that the socket did not take by the
//! time the app is done is left in the connection's queue for the event loop, so the app
//! thread is free at once.

use crate::clock::{now_ns, since};
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use sluicegate_proto::forwarded::{Hop, Resolved};
use sluicegate_proto::h1::decode::BodyDecoder;
use sluicegate_proto::{BodyFraming, RequestHead};

use super::app_head::AppHead;
use super::body::BodyState;
use super::bridge::Bridge;
use super::call_setup::{begin, log_end, Watched};
use super::input::Input;
use super::iterable::{call_and_drive, AppEnd};
use super::sender::{Sender, SenderSettings};
use super::start_response::Callables;
use crate::io::conn::{AfterOutput, Conn};
use crate::io::error_answer::{
    error_answer, error_body_len, GATEWAY_TIMEOUT, INTERNAL_ERROR, REQUEST_TIMEOUT,
};
use crate::io::event_loop::Work;
use crate::io::read_ahead::{BodyFailure, LoopEntry};
use crate::io::transport::Transport;
use crate::observe::entry::{KeptEnviron, LogExtras};
use crate::observe::request_end::PendingLog;

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
    let inline = crate::io::inline_call::holds_the_loop();
    conn.requests += 1;
    let transport = conn.transport();
    // TLS: the environ's SSL_* facts, plain values made once per connection by `io`.
    let tls_facts = transport.tls_facts();
    let client_closes = !head.keep_alive;

    let input_obj = request_input(bridge, py, &mut conn, &head, &transport);
    let input = input_obj.as_ref().unwrap_or(&bridge.empty_input);
    let input_any = input.bind(py).clone().into_any();

    // Counted, and watched by --timeout from here until the request is over.
    let hop = Hop::of(conn.peer.ip(), conn.peer_origin);
    let mut watched = begin(
        bridge,
        &head,
        hop,
        uwsgi.as_deref(),
        transport,
        version(&head),
    );
    // After the count: the request that retires the worker ends keep-alive too.
    let keep_alive = head.keep_alive && !bridge.loop_ctx.keep_alive_ending();
    let times = (parsed_at, app_started);
    let framing = (keep_alive, uwsgi.is_some());
    let callables = take_callables(
        bridge, py, &mut conn, &head, &watched, &input_obj, framing, times,
    );

    let (end, logged_environ) = build_and_call(
        bridge,
        py,
        &mut conn,
        &head,
        &input_any,
        watched.forwarded.as_ref(),
        tls_facts.as_deref(),
        &callables,
    );
    let app_done = now_ns();

    let (body_ok, body_answer) = take_body_back(bridge, py, &mut conn, input_obj);
    let called = (&end, logged_environ);
    let answered = end_answer(
        bridge,
        py,
        &mut conn,
        &callables,
        &mut watched,
        called,
        body_answer,
    );
    // Kept for this thread's next request unless the app kept a reference.
    callables.finish(py);
    let keeps = answered.keeps && body_ok;
    conn.after_output = after_output(keeps, body_ok, client_closes);
    if answered.gone {
        conn.out.clear();
    }
    let ended = PendingLog {
        client: watched.client_ip(&conn.peer),
        head,
        status: answered.status,
        body_bytes: answered.sent,
        parsed_at,
        queue: since(parsed_at, app_started),
        app: since(app_started, app_done),
        send_from: answered.send_from.unwrap_or(app_done),
        end: log_end(answered.timed_out, answered.gone, &end),
        inline: Some(inline),
        extras: answered.extras,
    };
    account(bridge, &mut conn, ended, app_done);
    conn
}

/// What the sender says of an answer once the app is done with it (`end_answer`).
struct Answered {
    /// The answer allows another request on the connection (as far as the sender and the app
    /// call know: the body's state is the caller's).
    keeps: bool,
    timed_out: bool,
    /// The client went away, or `--timeout` answered: what is queued is dropped.
    gone: bool,
    status: u16,
    sent: u64,
    /// When the answer's head was queued, if it was.
    send_from: Option<u64>,
    /// What the access log's format names beyond the request ([`log_extras`]).
    extras: Option<Box<LogExtras>>,
}

/// The sender's part once the app is done: the end answered (`answer_app_end`), the
/// `--timeout` watch left, the output given back to the connection (`conn.out`), and what the
/// access log and the connection's next step need.
#[inline(always)]
fn end_answer(
    bridge: &Bridge,
    py: Python<'_>,
    conn: &mut Conn,
    callables: &Callables,
    watched: &mut Watched,
    (end, logged_environ): (&AppEnd, Option<KeptEnviron>),
    body_answer: Option<(u16, &'static str)>,
) -> Answered {
    let mut sender = callables.sr.get().sender().lock_py_attached(py).unwrap();
    answer_app_end(bridge, py, &mut sender, end, body_answer);
    // Leaving the deadline's registry before the socket can be closed (see `wsgi::deadline`).
    let (timed_out, answered_504) = watched.leave(bridge, py);
    let keeps = sender.keeps_alive() && matches!(end, AppEnd::Done) && !timed_out;
    // A 504 answered by the watch: the app's status and bytes never left.
    let (status, sent) = match answered_504 {
        true => (GATEWAY_TIMEOUT.0, error_body_len(GATEWAY_TIMEOUT)),
        false => (sender.status_code(), sender.body_bytes()),
    };
    let answered = Answered {
        keeps,
        timed_out,
        gone: sender.client_gone || timed_out,
        status,
        sent,
        send_from: sender.head_at(),
        extras: log_extras(bridge, sender.app_head(), logged_environ),
    };
    conn.out = sender.end();
    // Written already (the usual small answer): the queue's storage stays with this thread.
    conn.out.release();
    sender.release_request();
    answered
}

/// Build the environ, then [`call_and_keep`].
#[allow(clippy::too_many_arguments)]
fn build_and_call(
    bridge: &Bridge,
    py: Python<'_>,
    conn: &mut Conn,
    head: &RequestHead,
    input: &Bound<'_, PyAny>,
    forwarded: Option<&Resolved>,
    tls_facts: Option<&crate::io::tls_link::TlsFacts>,
    callables: &Callables,
) -> (AppEnd, Option<KeptEnviron>) {
    let built = bridge.environ.build(
        py,
        conn.listener,
        head,
        &conn.peer,
        &mut conn.upper,
        input,
        forwarded,
        tls_facts,
    );
    match built {
        Ok(environ) => call_and_keep(bridge, py, head, environ.into_any(), callables),
        Err(e) => {
            bridge.log_exception(py, &e, "building the environ");
            (AppEnd::Failed, None)
        }
    }
}

/// The request's `start_response` and its sender, with the configuration's settings
/// ([`base_settings`]) and the request's own: keep-alive and `close_delimited` (`framing`),
/// the `--timeout` gate, the body to drain, the `Server-Timing` times.
// Inlined into `run_request`, where these steps were written before they were split out.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn take_callables(
    bridge: &Bridge,
    py: Python<'_>,
    conn: &mut Conn,
    head: &RequestHead,
    watched: &Watched,
    input_obj: &Option<Py<Input>>,
    (keep_alive, close_delimited): (bool, bool),
    (parsed_at, app_started): (u64, u64),
) -> Callables {
    let out = conn.out.spare();
    let settings = SenderSettings {
        keep_alive,
        gate: watched.ticket.as_ref().map(|t| Arc::clone(&t.gate)),
        body: input_obj
            .as_ref()
            .map(|i| (i.clone_ref(py), bridge.config.max_drain)),
        // uwsgi: nginx reads the answer until the connection closes (no chunked coding).
        close_delimited,
        server_timing: bridge
            .config
            .server_timing
            .then_some((parsed_at, app_started)),
        alt_svc: bridge.alt_svc(conn.listener),
        ..base_settings(bridge)
    };
    let loop_ctx = Arc::clone(&bridge.loop_ctx);
    Callables::take(py, conn, out, head, loop_ctx, settings)
}

/// The sender's settings that come from the server's configuration alone.
fn base_settings(bridge: &Bridge) -> SenderSettings {
    SenderSettings {
        keep_alive: false,
        write_timeout: bridge.config.write_timeout,
        high_water: bridge.config.write_high_water,
        server_header: bridge.server_header,
        max_app_headers: bridge.config.limit_response_headers,
        gate: None,
        body: None,
        close_delimited: false,
        server_timing: None,
        alt_svc: None,
    }
}

/// Account the request now if every byte was taken while the app ran (nothing boxed), else
/// leave its line on the connection: the loop accounts it when it has sent the rest (or when
/// the client leaves).
fn account(bridge: &Bridge, conn: &mut Conn, ended: PendingLog, app_done: u64) {
    let ctx = &bridge.loop_ctx;
    if conn.out.is_empty() {
        let log = ctx.settings.access_log.as_deref();
        ended.account_at(log, &ctx.counters.by_request, app_done);
    } else {
        conn.pending_log = Some(Box::new(ended));
    }
}

/// `wsgi.input`: `None` for a body-less request (the environ gets the shared empty input),
/// else a streaming reader that borrows the connection's read buffer for the request.
fn request_input(
    bridge: &Bridge,
    py: Python<'_>,
    conn: &mut Conn,
    head: &RequestHead,
    transport: &Transport,
) -> Option<Py<Input>> {
    let limits = &bridge.config.limits;
    let framing = match head.body {
        BodyFraming::None => return None,
        framing => framing,
    };
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
    Some(Py::new(py, Input::new(Some(Box::new(state)))).expect("allocating wsgi.input"))
}

/// Give the body state back: the connection's buffer (with pipelined bytes after the body).
/// Returns whether the body was consumed, so that the connection can carry another request,
/// and the answer a body error calls for (a body past `--limit-body`, a stalled one).
fn take_body_back(
    bridge: &Bridge,
    py: Python<'_>,
    conn: &mut Conn,
    input: Option<Py<Input>>,
) -> (bool, Option<(u16, &'static str)>) {
    let Some(input) = input else {
        return (true, None);
    };
    let Some(end) = input.get().detach(py, bridge.config.max_drain) else {
        return (false, None);
    };
    let body_answer = match end.failure {
        Some(BodyFailure::Protocol(e)) => Some((e.status(), e.reason())),
        Some(BodyFailure::TimedOut | BodyFailure::TooSlow) => Some(REQUEST_TIMEOUT),
        _ => None,
    };
    conn.rbuf = end.buf;
    (end.consumed, body_answer)
}

/// What the sender does once the app is done: nothing after a clean end, drop the output of a
/// client that went away, and after a failure, cut a response already started or else answer
/// with an error (a body error gets its own status).
fn answer_app_end(
    bridge: &Bridge,
    py: Python<'_>,
    sender: &mut Sender,
    end: &AppEnd,
    body_answer: Option<(u16, &'static str)>,
) {
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
                // Nothing was sent: a clean error answer.
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
}

/// What the connection does once its output is written.
fn after_output(keeps: bool, body_ok: bool, client_closes: bool) -> AfterOutput {
    if keeps {
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
    }
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
    let end = call_and_drive(
        bridge,
        py,
        head,
        (
            environ.clone(),
            callables.start.bind(py),
            Some(callables.hints.bind(py)),
        ),
        callables.sr.get().sender(),
    );
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

/// The request line's protocol, for `--timeout`'s registry.
fn version(head: &RequestHead) -> &'static [u8] {
    if head.version == sluicegate_proto::Version::Http10 {
        b" HTTP/1.0"
    } else {
        b" HTTP/1.1"
    }
}
