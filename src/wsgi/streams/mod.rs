//! Running one HTTP/2 or HTTP/3 stream through the app ([`run_stream`]): the stream's
//! `RequestHead` (made by proto from its HPACK or QPACK fields) builds the environ the HTTP/1.1
//! way (`EnvironBuilder::build`: headers, forwarding, TLS facts), then the stream differences:
//! `SERVER_PROTOCOL` `HTTP/2` or `HTTP/3` (the head's version), `wsgi.input` (the one
//! `Input`) over the stream's DATA frames (`body_source::StreamInput` over
//! `io::streams::reply::StreamIn`), and `:scheme` `https` on h2c honoured only from a peer
//! trusted as forwarding headers are. The app is called with the one `start_response`
//! (`start_response::StartResponse`) and its iterable driven by the bridge's one driver
//! (`iterable::call_and_drive`), both over the stream's `Response` (`response.rs`, a `Reply`
//! over `io::streams::reply::StreamOut`); the request is counted and logged as any other (the
//! access log says `HTTP/2` or `HTTP/3`).
//!
//! A stream runs on the loop's thread when the scheduler is in inline mode and its request is
//! whole, else on a pool thread, through the same inline path, pool and admission as HTTP/1.1
//! requests (`server::drive`), so blocking streams run side by side.

pub(crate) mod response;

use std::sync::{Arc, Mutex};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::PyDict;
use sluicegate_proto::forwarded::{self, Hop, Resolved};
use sluicegate_proto::{RequestHead, Version};

use response::Response;

use crate::clock::{now_ns, since};
use crate::io::error_answer::{INTERNAL_ERROR, REQUEST_TIMEOUT};
use crate::io::read_ahead::BodyFailure;
use crate::io::streams::{StreamCall, Upper};
use crate::io::tls_link::TlsFacts;
use crate::observe::request_end::Finished;
use crate::peer::Peer;
use crate::wsgi::body_source::StreamInput;
use crate::wsgi::bridge::Bridge;
use crate::wsgi::call_setup::{begin, log_end, Watched};
use crate::wsgi::input::Input;
use crate::wsgi::iterable::{call_and_drive, AppEnd};
use crate::wsgi::start_response::{Callables, Sink};

/// Whether a stream's `:scheme` https is believed: on a plain connection, from a hop of either
/// list (--forwarded-allow-ips, --forwarded-for-ips), as X-Forwarded-Proto is.
fn believed_https(bridge: &Bridge, hop: Hop, scheme_https: bool, tls: bool) -> bool {
    let trust = bridge.config.forwarding.as_ref().map(|(t, _)| t);
    let whole = bridge.config.forwarded_for.as_ref();
    scheme_https && !tls && (forwarded::trusted(trust, hop) || forwarded::trusted(whole, hop))
}

/// What the environ and the log take of a stream's call, once its body and reply are out.
struct Facts<'a> {
    head: &'a RequestHead,
    listener: usize,
    peer: &'a Peer,
    upper: &'a Upper,
    tls_facts: Option<&'a TlsFacts>,
    hop: Hop,
    early_data: bool,
    scheme_https: bool,
}

/// When the call's parts began and ended (`clock::now_ns`), and whether it ran inline.
struct Times {
    parsed_at: u64,
    app_started: u64,
    app_done: u64,
    inline: bool,
}

/// Run one stream's app call on this thread (the GIL held): set up (`wsgi.input`, the
/// `--timeout` watch, the response), call the app ([`call_app`]), then end it ([`finish`]:
/// the failure answer, the watch left, the count and the log line).
pub fn run_stream(bridge: &Bridge, py: Python<'_>, call: StreamCall) {
    let StreamCall {
        head,
        listener,
        peer,
        peer_origin,
        tls_facts,
        early_data,
        scheme_https,
        body,
        reply,
        parsed_at,
        upper,
        _live,
    } = call;
    let app_started = now_ns();
    // Inline on the loop's thread? (the access log's timings say so)
    let inline = crate::io::inline_call::holds_the_loop();
    let body_input = body.map(|b| {
        let source = StreamInput::new(b, bridge.config.read_timeout);
        Bound::new(py, Input::new(Some(Box::new(source)))).expect("allocating wsgi.input")
    });
    let facts = Facts {
        head: &head,
        listener,
        peer: &peer,
        upper: &upper,
        tls_facts: tls_facts.as_deref(),
        hop: Hop::of(peer.ip(), peer_origin),
        early_data,
        scheme_https,
    };
    // Counted, and watched by --timeout: past it, the stream is answered 504 (or reset) and
    // the connection's other streams go on.
    let cut = reply.cut();
    let watched = begin(bridge, &head, facts.hop, None, cut, protocol(&head).0);
    let gate = watched.ticket.as_ref().map(|t| Arc::clone(&t.gate));
    let mut resp = Response::new(bridge, reply, gate, head.is_head);
    resp.alt_svc = (head.version == Version::Http2)
        .then(|| bridge.alt_svc(listener))
        .flatten();
    let callables = Callables::new(py, Sink::Stream(Mutex::new(resp)));
    let input = match &body_input {
        Some(i) => i.clone().into_any(),
        None => bridge.empty_input.bind(py).clone().into_any(),
    };
    let end = call_app(bridge, py, &facts, &callables, &input, &watched);
    let times = Times {
        parsed_at,
        app_started,
        app_done: now_ns(),
        inline,
    };
    // The call is over: the stream's body is let go even if the app kept `wsgi.input`. The
    // reply still holds the stream, so a client still sending gets the answer first, then
    // RST_STREAM(NO_ERROR) when the reply goes (RFC 9113 §8.1).
    let body_failure = body_input
        .as_ref()
        .and_then(|i| i.get().detach(py, 0))
        .and_then(|end| end.failure);
    finish(
        bridge,
        py,
        &facts,
        &callables,
        (end, body_failure),
        watched,
        times,
    );
    // Let go unless the app kept one of them (then its reference keeps the stream's reply).
    callables.discard();
}

/// Build the environ and call the app, its iterable driven to the end.
fn call_app(
    bridge: &Bridge,
    py: Python<'_>,
    facts: &Facts<'_>,
    callables: &Callables,
    input: &Bound<'_, PyAny>,
    watched: &Watched,
) -> AppEnd {
    let built = build_environ(
        bridge,
        py,
        (facts.listener, facts.head, facts.peer, facts.upper),
        input,
        watched.forwarded.as_ref(),
        facts.tls_facts,
    );
    match built {
        Ok(env) => {
            let tls = facts.tls_facts.is_some();
            let https = believed_https(bridge, facts.hop, facts.scheme_https, tls);
            let version = (facts.head.version, protocol(facts.head).1);
            stream_keys(&env, version, facts.early_data, https);
            let (start, hints) = (callables.start.bind(py), callables.hints.bind(py));
            let resp = callables.sr.get().response();
            call_and_drive(
                bridge,
                py,
                facts.head,
                (env.into_any(), start, Some(hints)),
                resp,
            )
        }
        Err(e) => {
            bridge.log_exception(py, &e, "building the environ");
            AppEnd::Failed
        }
    }
}

/// The call's end: the failure answer if the app failed (`body_failure`: how its body
/// ended), the `--timeout` watch left, the request counted and logged.
fn finish(
    bridge: &Bridge,
    py: Python<'_>,
    facts: &Facts<'_>,
    callables: &Callables,
    (end, body_failure): (AppEnd, Option<BodyFailure>),
    mut watched: Watched,
    times: Times,
) {
    let mut r = callables.sr.get().response().lock_py_attached(py).unwrap();
    if matches!(end, AppEnd::Failed) {
        r.fail(py, failure_answer(body_failure));
    }
    let (timed_out, answered_504) = watched.leave(bridge, py);
    if answered_504 {
        // The watcher's 504 (`io::streams::cut`) has no body: none of the app's was sent.
        r.status = 504;
        r.body_bytes = 0;
    }
    let log_end = log_end(timed_out, r.gone, &end);
    let client = watched.client_ip(facts.peer);
    let ctx = &bridge.loop_ctx;
    let log = ctx.settings.access_log.as_deref();
    Finished {
        head: facts.head,
        client,
        status: r.status,
        body_bytes: r.body_bytes,
        parsed_at: times.parsed_at,
        queue: since(times.parsed_at, times.app_started),
        app: since(times.app_started, times.app_done),
        send_from: r.head_at.unwrap_or(times.app_done),
        end: log_end,
        inline: Some(times.inline),
        extras: None,
    }
    .account(log, &ctx.counters.by_request, now_ns());
}

/// The environ's keys a stream's request has beyond the template's: `SERVER_PROTOCOL`; on
/// HTTP/3 `sluicegate.early_data` (RFC 8470's question, for the app: could this request be a
/// replay?); an h2c stream whose trusted `:scheme` said `https`, the scheme.
fn stream_keys(
    env: &Bound<'_, PyDict>,
    (version, protocol): (Version, &str),
    early_data: bool,
    https: bool,
) {
    let py = env.py();
    let _ = env.set_item(intern!(py, "SERVER_PROTOCOL"), protocol);
    if version == Version::Http3 {
        let _ = env.set_item(intern!(py, "sluicegate.early_data"), early_data);
    }
    if https {
        let _ = env.set_item(intern!(py, "wsgi.url_scheme"), "https");
        let _ = env.set_item("HTTPS", "on");
    }
}
/// The stream's protocol: its label in the access log and `--timeout`'s log, and
/// `SERVER_PROTOCOL`.
fn protocol(head: &RequestHead) -> (&'static [u8], &'static str) {
    match head.version {
        Version::Http3 => (b" HTTP/3", "HTTP/3"),
        _ => (b" HTTP/2", "HTTP/2"),
    }
}

/// Build the stream's environ with the connection's peer strings, unless another of its
/// streams holds them on another thread (then made for this stream alone).
fn build_environ<'py>(
    bridge: &Bridge,
    py: Python<'py>,
    (listener, head, peer, upper): (usize, &RequestHead, &Peer, &Upper),
    input: &Bound<'py, PyAny>,
    forwarded: Option<&Resolved>,
    tls_facts: Option<&TlsFacts>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut shared_cache = upper.try_lock().ok();
    let mut own_cache = None;
    let cache = match shared_cache.as_deref_mut() {
        Some(c) => c,
        None => &mut own_cache,
    };
    bridge
        .environ
        .build(py, listener, head, peer, cache, input, forwarded, tls_facts)
}

/// The answer to a failed call that sent nothing: as on HTTP/1.1, 408 for a body that stalled
/// past `--read-timeout`, 413 for a body past `--limit-body`, else 500.
fn failure_answer(body_failure: Option<BodyFailure>) -> (u16, &'static str) {
    match body_failure {
        Some(BodyFailure::TimedOut | BodyFailure::TooSlow) => REQUEST_TIMEOUT,
        Some(BodyFailure::Protocol(e)) => (e.status(), e.reason()),
        _ => INTERNAL_ERROR,
    }
}
