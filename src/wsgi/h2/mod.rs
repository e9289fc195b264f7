//! Running one HTTP/2 stream through the app ([`run_stream`]): the stream's `RequestHead`
//! (made by proto from its HPACK fields) builds the environ the HTTP/1.1 way
//! (`EnvironBuilder::build`: headers, forwarding, TLS facts), then the HTTP/2 differences:
//! `SERVER_PROTOCOL` `HTTP/2`, `wsgi.input` over the stream's DATA frames, and `:scheme`
//! `https` on h2c honoured only from a peer trusted as forwarding headers are. The app's
//! answer goes out through `response.rs`; `close()` is called on every path; the request is
//! counted and logged as any other (the access log says `HTTP/2`).
//!
//! Runs on the thread that drives the HTTP/2 connections when the scheduler is in inline mode
//! (`server::h2_inline`), else on a pool thread, through the same pool and admission as
//! HTTP/1.1 requests (`server::drive`), so blocking streams run side by side.

mod objects;
mod response;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::types::{PyList, PyTuple};
use sluicegate_proto::forwarded::{self, Hop, Resolved};
use sluicegate_proto::RequestHead;

use objects::block_bytes;
pub use objects::{H2Input, H2StartResponse};
use response::Response;

use crate::clock::{now_ns, since};
use crate::io::error_answer::{INTERNAL_ERROR, REQUEST_TIMEOUT};
use crate::io::h2::{StreamCall, Upper};
use crate::io::read_ahead::BodyFailure;
use crate::io::tls_link::TlsFacts;
use crate::io::transport::Cut;
use crate::observe::request_end::Finished;
use crate::observe::timings::End as LogEnd;
use crate::peer::Peer;
use crate::wsgi::bridge::Bridge;
use crate::wsgi::driver::{client_ip, leave_watch};
use crate::wsgi::file_wrapper::FileWrapper;
use crate::wsgi::iterable::AppEnd;

/// File bodies are read in blocks of this size, without the GIL.
const FILE_BLOCK: usize = 256 * 1024;

/// Run one stream's app call on this thread (the GIL held); `inline`: on the loop
/// (the access log's timings say so).
pub fn run_stream(bridge: &Bridge, py: Python<'_>, call: StreamCall, inline: bool) {
    let StreamCall {
        head,
        listener,
        peer,
        peer_origin,
        tls_facts,
        scheme_https,
        body,
        reply,
        parsed_at,
        upper,
        _live,
    } = call;
    let app_started = now_ns();
    bridge.counters().requests.fetch_add(1, Ordering::Relaxed);
    let body_input = body.map(|b| {
        Bound::new(py, H2Input::new(b, bridge.config.read_timeout)).expect("allocating wsgi.input")
    });
    let input = match &body_input {
        Some(i) => i.clone().into_any(),
        None => bridge.empty_input.bind(py).clone().into_any(),
    };
    let hop = Hop::of(peer.ip(), peer_origin);
    let trust = bridge.config.forwarding.as_ref();
    let forwarded = trust
        .and_then(|(t, family)| forwarded::forwarded(&head, hop, Some(t), *family).map(Box::new));
    // --timeout: the call is watched; past it, the stream is answered 504 (or reset) and
    // the connection's other streams go on.
    let ticket = bridge
        .deadlines
        .as_ref()
        .map(|d| d.enter(Cut::Stream(reply.cut_handle()), request_line(&head)));
    let gate = ticket.as_ref().map(|t| Arc::clone(&t.gate));
    let resp = Arc::new(Mutex::new(Response::new(bridge, reply, gate, head.is_head)));
    let built = build_environ(
        bridge,
        py,
        (listener, &head, &peer, &upper),
        &input,
        forwarded.as_deref(),
        tls_facts.as_deref(),
    );
    let end = match built {
        Ok(env) => {
            let _ = env.set_item(intern!(py, "SERVER_PROTOCOL"), intern!(py, "HTTP/2"));
            let trusted = forwarded::trusted(trust.map(|(t, _)| t), hop);
            if scheme_https && tls_facts.is_none() && trusted {
                let _ = env.set_item(intern!(py, "wsgi.url_scheme"), "https");
                let _ = env.set_item("HTTPS", "on");
            }
            let sr = Bound::new(
                py,
                H2StartResponse {
                    resp: Arc::clone(&resp),
                },
            )
            .expect("allocating start_response");
            call_and_drive(bridge, py, &head, env.into_any(), sr.into_any(), &resp)
        }
        Err(e) => {
            bridge.log_exception(py, &e, "building the environ");
            AppEnd::Failed
        }
    };
    let app_done = now_ns();
    // The call is over: the stream's body is let go even if the app kept `wsgi.input`. The
    // reply still holds the stream, so a client still sending gets the answer first, then
    // RST_STREAM(NO_ERROR) when the reply goes (RFC 9113 §8.1).
    let body_failure = body_input.as_ref().and_then(|i| i.get().detach());
    let mut r = resp.lock().unwrap();
    if matches!(end, AppEnd::Failed) {
        r.fail(py, failure_answer(body_failure));
    }
    let (timed_out, answered_504) = leave_watch(bridge, py, ticket);
    if answered_504 {
        r.status = 504;
    }
    let log_end = match end {
        _ if timed_out => LogEnd::Timeout,
        _ if r.gone => LogEnd::ClientGone,
        end => end.log_end(),
    };
    let client = client_ip(forwarded.as_deref(), &peer);
    let ctx = &bridge.loop_ctx;
    let log = ctx.settings.access_log.as_deref();
    Finished {
        head: &head,
        client,
        status: r.status,
        body_bytes: r.body_bytes,
        parsed_at,
        queue: since(parsed_at, app_started),
        app: since(app_started, app_done),
        send_from: r.head_at.unwrap_or(app_done),
        end: log_end,
        inline: Some(inline),
        extras: None,
    }
    .account(log, &ctx.counters.by_request, now_ns());
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

/// "METHOD TARGET HTTP/2", for `--timeout`'s registry.
fn request_line(head: &RequestHead) -> String {
    format!(
        "{} {} HTTP/2",
        String::from_utf8_lossy(head.method()),
        String::from_utf8_lossy(head.target())
    )
}

fn label(head: &sluicegate_proto::RequestHead) -> String {
    format!(
        "Error handling request {} {} (HTTP/2)",
        String::from_utf8_lossy(head.method()),
        String::from_utf8_lossy(head.target())
    )
}

/// Call the app, send what it returns, and call its `close()` on every path.
fn call_and_drive(
    bridge: &Bridge,
    py: Python<'_>,
    head: &sluicegate_proto::RequestHead,
    environ: Bound<'_, PyAny>,
    sr: Bound<'_, PyAny>,
    resp: &Arc<Mutex<Response>>,
) -> AppEnd {
    if bridge.config.early_hints {
        if let Ok(hints) = sr.getattr(intern!(py, "early_hints")) {
            let _ = environ.set_item(intern!(py, "wsgi.early_hints"), hints);
        }
    }
    let result = match bridge.app.bind(py).call1((environ, sr)) {
        Ok(r) => r,
        Err(e) => {
            bridge.log_exception(py, &e, &label(head));
            return AppEnd::Failed;
        }
    };
    let end = drive(bridge, py, head, &result, resp);
    // A list or a tuple has no `close()`: asking for it raised and formatted an
    // AttributeError per request, a tenth of a hello world's instructions (callgrind).
    if result.is_exact_instance_of::<PyList>() || result.is_exact_instance_of::<PyTuple>() {
        return end;
    }
    if let Ok(close) = result.getattr(intern!(py, "close")) {
        if let Err(e) = close.call0() {
            bridge.log_exception(py, &e, &label(head));
            return AppEnd::Failed;
        }
    }
    end
}

/// The app returned without calling `start_response`: logged, the call failed.
fn not_started(bridge: &Bridge, py: Python<'_>, head: &RequestHead) -> AppEnd {
    let e = pyo3::exceptions::PyAssertionError::new_err(
        "the app returned without calling start_response",
    );
    bridge.log_exception(py, &e, &label(head));
    AppEnd::Failed
}

/// A known-length body (a list or a tuple of blocks): the total is the Content-Length
/// unless the app gave one.
fn send_known(
    bridge: &Bridge,
    py: Python<'_>,
    head: &RequestHead,
    blocks: &[Bound<'_, PyAny>],
    resp: &Arc<Mutex<Response>>,
) -> AppEnd {
    let mut datas = Vec::with_capacity(blocks.len());
    for b in blocks {
        match block_bytes(b) {
            Ok(d) => datas.push(d),
            Err(e) => {
                bridge.log_exception(py, &e, &label(head));
                return AppEnd::Failed;
            }
        }
    }
    let mut r = resp.lock().unwrap();
    if !r.app.started {
        return not_started(bridge, py, head);
    }
    if r.app.content_length.is_none() && !r.head_sent() {
        let total: u64 = datas.iter().map(|d| d.len() as u64).sum();
        r.app.content_length = Some(total);
    }
    let n = datas.len();
    if n == 0 {
        return match r.finish(py) {
            Ok(()) => AppEnd::Done,
            Err(_) => AppEnd::ClientGone,
        };
    }
    for (i, d) in datas.into_iter().enumerate() {
        if r.send(py, d, i + 1 == n).is_err() {
            return AppEnd::ClientGone;
        }
    }
    AppEnd::Done
}

/// A file wrapper over a regular file: read in large blocks without the GIL.
fn send_file(
    bridge: &Bridge,
    py: Python<'_>,
    head: &RequestHead,
    (file, offset, len): (std::fs::File, u64, u64),
    resp: &Arc<Mutex<Response>>,
) -> AppEnd {
    let mut r = resp.lock().unwrap();
    if !r.app.started {
        return not_started(bridge, py, head);
    }
    if r.app.content_length.is_none() {
        r.app.content_length = Some(len);
    }
    let want = r.app.content_length.unwrap_or(len).min(len);
    let mut at = 0u64;
    while at < want {
        let n = (want - at).min(FILE_BLOCK as u64) as usize;
        let mut buf = vec![0u8; n];
        let read =
            py.detach(|| std::os::unix::fs::FileExt::read_exact_at(&file, &mut buf, offset + at));
        if read.is_err() {
            r.fail(py, INTERNAL_ERROR);
            return AppEnd::Failed;
        }
        at += n as u64;
        if r.send(py, bytes::Bytes::from(buf), at == want).is_err() {
            return AppEnd::ClientGone;
        }
    }
    if want == 0 && r.finish(py).is_err() {
        return AppEnd::ClientGone;
    }
    AppEnd::Done
}

fn drive(
    bridge: &Bridge,
    py: Python<'_>,
    head: &sluicegate_proto::RequestHead,
    result: &Bound<'_, PyAny>,
    resp: &Arc<Mutex<Response>>,
) -> AppEnd {
    let not_started = || not_started(bridge, py, head);
    // A known-length body: a list or a tuple of blocks.
    let known: Option<Vec<Bound<'_, PyAny>>> = if let Ok(l) = result.cast::<PyList>() {
        Some(l.iter().collect())
    } else {
        result.cast::<PyTuple>().ok().map(|t| t.iter().collect())
    };
    if let Some(blocks) = known {
        return send_known(bridge, py, head, &blocks, resp);
    }
    // wsgi.file_wrapper over a regular file: read in large blocks without the GIL.
    if let Ok(fw) = result.cast::<FileWrapper>() {
        if let Some((file, offset, len)) = crate::wsgi::iterable::regular_file_range(py, fw.get()) {
            return send_file(bridge, py, head, (file, offset, len), resp);
        }
    }
    // Any other iterable: block by block, each sent as it comes.
    let iter = match result.try_iter() {
        Ok(i) => i,
        Err(e) => {
            bridge.log_exception(py, &e, &label(head));
            return AppEnd::Failed;
        }
    };
    for item in iter {
        let data = match item.and_then(|i| block_bytes(&i)) {
            Ok(d) => d,
            Err(e) => {
                bridge.log_exception(py, &e, &label(head));
                return AppEnd::Failed;
            }
        };
        let mut r = resp.lock().unwrap();
        if !r.app.started {
            return not_started();
        }
        if r.send(py, data, false).is_err() {
            return AppEnd::ClientGone;
        }
    }
    let mut r = resp.lock().unwrap();
    if !r.app.started {
        return not_started();
    }
    match r.finish(py) {
        Ok(()) => AppEnd::Done,
        Err(_) => AppEnd::ClientGone,
    }
}
