//! An endpoint's accept loop ([`accept_loop`]) and one HTTP/3 connection's task, both polled
//! by the event loop: the QUIC handshake within `--header-timeout`, the `h3` connection
//! (SETTINGS, the control streams), then each request stream's head read and made into a
//! `RequestHead` by proto on the connection's task as the stream is accepted (a task of its
//! own only for a head that did not come with the stream), its call (a [`StreamCall`]) queued
//! to run inline on the loop's thread (the streams' queue, `io::streams::inline`) or dispatched to the
//! pool.
//!
//! Limits, each quinn's or `h3`'s own defence set here or in `config.rs`: concurrent request
//! streams (`--http2-max-streams`, as QUIC stream credit), the decoded header section
//! (`--limit-header-bytes`: `h3` answers 431 past it), the windows, handshakes and request
//! heads within `--header-timeout`, the idle connection closed after `--keep-alive`, and
//! address validation: past `--http3-retry-above` handshakes at once, a client whose address
//! is not validated yet is sent a Retry first, so a flood of spoofed Initials costs no
//! handshakes. The handshake itself, and 0-RTT, are `early.rs`'s.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::Poll;
use std::time::Duration;

use bytes::{Buf, Bytes};
use quinn::VarInt;
use sluicegate_proto::forwarded::PeerOrigin;
use sluicegate_proto::BodyFraming;

use super::early::{self, Handshake};
use super::stream::{H3Body, H3Reply, RecvHalf};
use crate::clock::now_ns;
use crate::config::Config;
use crate::io::call_io::{CallBody, CallReply};
use crate::io::streams::inline::Inline;
use crate::io::streams::reply::StreamOut;
use crate::io::streams::tasks;
use crate::io::streams::timer;
use crate::io::streams::{
    LiveStream, LoopView, Stop, StopWatch, StreamCall, StreamCut, StreamRunner, Upper,
};
use crate::io::tls_link::TlsFacts;
use crate::observe::h3_counters::H3Event;
use crate::peer::Peer;

/// `H3_NO_ERROR`: the application close code of a connection ended on purpose.
const H3_NO_ERROR: u32 = 0x100;
/// `H3_REQUEST_CANCELLED` (RFC 9114 §8.1): the close code of a connection whose requests were
/// cut by a stop (each cut stream is reset with it too: their calls had started, so they are
/// not `H3_REQUEST_REJECTED`, which says the app never saw the request, §4.1.1).
const H3_REQUEST_CANCELLED: u32 = 0x10c;

/// What the endpoints' tasks work with.
pub(super) struct Share {
    pub config: Arc<Config>,
    pub ctx: Arc<dyn LoopView>,
    pub runner: Arc<dyn StreamRunner>,
    /// HTTP/2's queue of calls the loop's thread runs (with `--http2` on): a whole request
    /// runs there while the scheduler is in inline mode, as an HTTP/2 stream's does.
    pub inline: Option<Arc<Inline>>,
    pub open: Arc<AtomicUsize>,
}

/// Accept connections on `endpoint` (listener `listener`'s address) until a stop; from a
/// graceful stop's start to its end each new connection is refused at once
/// (`CONNECTION_REFUSED`), so its client goes elsewhere now. An endpoint with no server
/// configuration (what this did before) drops Initials unanswered: a client that came during
/// the drain waited its whole handshake timeout, past the server's exit. The connections open
/// finish on their own tasks.
pub(super) async fn accept_loop(
    endpoint: quinn::Endpoint,
    share: Arc<Share>,
    listener: usize,
    mut stop: StopWatch,
) {
    let mut draining = *stop.borrow() >= Stop::Graceful;
    loop {
        tokio::select! {
            incoming = endpoint.accept() => {
                let Some(mut incoming) = incoming else { break };
                if draining {
                    incoming.refuse();
                    continue;
                }
                let h3 = &share.ctx.counters().h3;
                if h3.handshaking.load(Ordering::Relaxed) >= share.config.http3_retry_above as u64
                    && !incoming.remote_address_validated()
                {
                    match incoming.retry() {
                        Ok(()) => {
                            h3.count(H3Event::Retry);
                            continue;
                        }
                        Err(e) => incoming = e.into_incoming(),
                    }
                }
                let task = serve_one(Arc::clone(&share), incoming, listener, stop.clone());
                tasks::current().spawn(task);
            }
            changed = stop.changed() => {
                let state = *stop.borrow();
                if changed.is_err() || state == Stop::Immediate {
                    endpoint.set_server_config(None);
                    break;
                }
                draining = state >= Stop::Graceful;
            }
        }
    }
}

/// One connection, from the handshake to its close.
async fn serve_one(
    share: Arc<Share>,
    incoming: quinn::Incoming,
    listener: usize,
    mut stop: StopWatch,
) {
    let counters = share.ctx.counters();
    share.open.fetch_add(1, Ordering::SeqCst);
    counters
        .by_request
        .open_connections
        .fetch_add(1, Ordering::Relaxed);
    if let Some((conn, handshake)) = early::handshake(&share.config, &share.ctx, incoming).await {
        // Open once the handshake is done (or 0-RTT serves): a handshake under way is
        // `handshaking`'s.
        counters.h3.open.fetch_add(1, Ordering::Relaxed);
        let (watched, watch_share) = (conn.clone(), Arc::clone(&share));
        tasks::current().spawn(async move {
            let ctx = &watch_share.ctx;
            let timeout = watch_share.config.write_timeout;
            super::progress::watch(watched, &ctx.counters().h3, timeout).await;
        });
        serve_conn(&share, (conn, handshake), listener, &mut stop).await;
        counters.h3.open.fetch_sub(1, Ordering::Relaxed);
    }
    counters
        .by_request
        .open_connections
        .fetch_sub(1, Ordering::Relaxed);
    share.open.fetch_sub(1, Ordering::SeqCst);
}

/// What a connection's streams share.
struct PerConn {
    live: Arc<AtomicUsize>,
    upper: Upper,
    peer: Peer,
    listener: usize,
    conn: quinn::Connection,
    /// The environ's `SSL_*` facts, made for the first request (its ClientHello was read
    /// whole by then, which a 0-RTT connection's first moment does not promise; the client
    /// certificate is known then too: `early.rs` serves no request before the handshake's end
    /// when certificates are asked for).
    tls: OnceLock<Option<Arc<TlsFacts>>>,
    handshake: Handshake,
    /// The answers of the calls dispatched, to reset at a cut ([`PerConn::cut_streams`]);
    /// those whose call is over are dropped as new ones come.
    answers: Mutex<Vec<StreamCut>>,
}

/// Past this many answers kept, the finished ones are dropped from [`PerConn::answers`].
const ANSWERS_PRUNE: usize = 32;

impl PerConn {
    fn tls_facts(&self) -> Option<Arc<TlsFacts>> {
        let made = self.tls.get_or_init(|| super::tls_facts::facts(&self.conn));
        made.clone()
    }

    fn keep_answer(&self, cut: StreamCut) {
        let mut answers = self.answers.lock().unwrap();
        if answers.len() >= ANSWERS_PRUNE {
            answers.retain(|a| !a.released());
        }
        answers.push(cut);
    }

    /// A stop cuts the calls still running: each one's stream is reset with
    /// `H3_REQUEST_CANCELLED` (a send under way on its app thread resets it there). Without
    /// this the connection's close was the only word a client got of its cut requests.
    fn cut_streams(&self) {
        for answer in self.answers.lock().unwrap().drain(..) {
            if !answer.released() {
                answer.cut(false);
            }
        }
    }
}

/// One turn of the loop's task set, so the connection's driver (woken by what this task just
/// did) runs before this task goes on.
async fn next_turn() {
    let mut turned = false;
    std::future::poll_fn(|cx| {
        if turned {
            return Poll::Ready(());
        }
        turned = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await;
}

/// Serve requests until the connection ends: the client's close or GOAWAY, an error, the
/// idle timeout (`--keepalive-timeout` without a request in flight: GOAWAY, then the close),
/// or a stop (GOAWAY, in-flight requests finish; an immediate stop, or the end of the graceful
/// time, closes the connection and counts its requests as cut). After a GOAWAY the connection
/// closes once its last call is over and what it sent is acknowledged ([`until_quiet`]).
async fn serve_conn(
    share: &Arc<Share>,
    (conn, handshake): (quinn::Connection, Handshake),
    listener: usize,
    stop: &mut StopWatch,
) {
    let cfg = &share.config;
    let built = timer::timeout(
        cfg.header_timeout,
        h3::server::builder()
            .max_field_section_size(cfg.limits.max_header_bytes as u64)
            .build::<_, Bytes>(h3_quinn::Connection::new(conn.clone())),
    )
    .await;
    let Ok(Ok(mut h3c)) = built else {
        conn.close(VarInt::from_u32(H3_NO_ERROR), b"");
        return;
    };
    let per = Arc::new(PerConn {
        live: Arc::new(AtomicUsize::new(0)),
        upper: Arc::new(Mutex::new(None)),
        peer: Peer::Ip(conn.remote_address()),
        listener,
        conn: conn.clone(),
        tls: OnceLock::new(),
        handshake,
        answers: Mutex::new(Vec::new()),
    });
    let mut going_away = false;
    // How long the close waits for the last bytes' acknowledgement.
    let mut linger = cfg.keepalive_timeout;
    let mut idle = timer::sleep(cfg.keepalive_timeout);
    // After a GOAWAY: the next look whether the last call is over (made only then, so a
    // busy connection's loop makes no timer per pass).
    let mut quiet_look = None;
    if *stop.borrow() >= Stop::Graceful {
        let _ = h3c.shutdown(0).await;
        going_away = true;
    }
    loop {
        if going_away && quiet_look.is_none() {
            quiet_look = Some(timer::sleep(QUIET_MIN));
        }
        tokio::select! {
            next = h3c.accept() => match next {
                Ok(Some(resolver)) => {
                    take_stream(share, &per, resolver).await;
                    idle.reset(cfg.keepalive_timeout);
                }
                Ok(None) | Err(_) => break,
            },
            // After our GOAWAY, `h3` ends `accept` only once the client sent its own: the
            // connection is done here when its last call is.
            _ = async { quiet_look.as_mut().expect("made above").await }, if quiet_look.is_some() => {
                quiet_look = None;
                if per.live.load(Ordering::SeqCst) == 0 {
                    break;
                }
            }
            _ = &mut idle, if !going_away => {
                idle.reset(cfg.keepalive_timeout);
                if per.live.load(Ordering::SeqCst) == 0 {
                    let _ = h3c.shutdown(0).await;
                    going_away = true;
                }
            }
            changed = stop.changed() => {
                let state = *stop.borrow();
                if changed.is_err() || state == Stop::Immediate {
                    let cut = per.live.load(Ordering::SeqCst) as u64;
                    share.ctx.counters().cut.fetch_add(cut, Ordering::Relaxed);
                    let mut code = H3_NO_ERROR;
                    if cut > 0 {
                        // The resets go out before the close, which drops frames not sent.
                        per.cut_streams();
                        next_turn().await;
                        code = H3_REQUEST_CANCELLED;
                    }
                    conn.close(VarInt::from_u32(code), b"");
                    return;
                }
                linger = share.ctx.graceful_left();
                if !going_away {
                    let _ = h3c.shutdown(0).await;
                    going_away = true;
                }
            }
        }
    }
    // Every request is answered: let the last bytes be acknowledged before the close (a close
    // drops what is unacknowledged), within `linger`.
    tokio::select! {
        _ = conn.closed() => {}
        _ = until_quiet(&conn, linger) => {}
        _ = stop.wait_for(|s| *s == Stop::Immediate) => {}
        () = reject_late(&mut h3c) => {}
    }
    conn.close(VarInt::from_u32(H3_NO_ERROR), b"");
    drop(h3c);
}

/// After the GOAWAY and the last call: a request the client sent before the GOAWAY reached it
/// is reset with `H3_REQUEST_REJECTED` by `h3`'s accept (so the client sends it again
/// elsewhere) rather than left unanswered until the close, which said nothing of it. Never
/// ends.
async fn reject_late(h3c: &mut h3::server::Connection<h3_quinn::Connection, Bytes>) {
    while let Ok(Some(_)) = h3c.accept().await {}
    std::future::pending::<()>().await;
}

/// The shortest look for a quiet connection in [`until_quiet`].
const QUIET_MIN: Duration = Duration::from_millis(50);

/// Wait until the connection sends nothing for four round trips (what was sent is
/// acknowledged: nothing is retransmitted), or `limit` passes. quinn has no event for "every
/// stream's data acknowledged" that the `h3` layer exposes; a connection still sending (data,
/// retransmissions) keeps counting datagrams.
async fn until_quiet(conn: &quinn::Connection, limit: Duration) {
    let until = std::time::Instant::now() + limit;
    let mut sent = conn.stats().udp_tx.datagrams;
    loop {
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        timer::sleep((conn.rtt() * 4).max(QUIET_MIN).min(left)).await;
        let now = conn.stats().udp_tx.datagrams;
        if now == sent {
            return;
        }
        sent = now;
    }
}

type Resolver = h3::server::RequestResolver<h3_quinn::Connection, Bytes>;
type Request3 = h3::server::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;
type Resolved = Result<(http::Request<()>, Request3), h3::error::StreamError>;

/// A request stream just accepted, on the connection's task. Its HEADERS frame usually came
/// with the stream: then its head is read and decoded, and its call started, right here
/// (one look), with no task and no timer of its own; else a task waits for the head within
/// `--header-timeout`.
async fn take_stream(share: &Arc<Share>, per: &Arc<PerConn>, resolver: Resolver) {
    // In flight from here: a stop's GOAWAY waits for it.
    let live = LiveStream::new(&per.live);
    let mut resolving: Pin<Box<dyn Future<Output = Resolved> + Send>> =
        Box::pin(resolver.resolve_request());
    let now = std::future::poll_fn(|cx| Poll::Ready(resolving.as_mut().poll(cx))).await;
    match now {
        // A header section past the limit was answered 431 by `h3`; a malformed one reset.
        Poll::Ready(Ok((request, stream))) => start_stream(share, per, request, stream, live).await,
        Poll::Ready(Err(_)) => {}
        Poll::Pending => {
            let (share, per) = (Arc::clone(share), Arc::clone(per));
            tasks::current().spawn(async move {
                let resolved = timer::timeout(share.config.header_timeout, resolving).await;
                if let Ok(Ok((request, stream))) = resolved {
                    start_stream(&share, &per, request, stream, live).await;
                }
            });
        }
    }
}

/// A request stream whose head came: decoded by proto (refused on its stream if bad), answered
/// here (`--static`, `--health-path`: by a task of the loop), or its call dispatched. Never
/// waits: the one look at the body (`peek`) is a single poll.
async fn start_stream(
    share: &Arc<Share>,
    per: &Arc<PerConn>,
    request: http::Request<()>,
    stream: Request3,
    live: LiveStream,
) {
    let cfg = &share.config;
    let (parts, ()) = request.into_parts();
    let (mut send, mut recv) = stream.split();
    // A request whose FIN came with its head has no body: known now, without a wait.
    let first = std::future::poll_fn(|cx| Poll::Ready(peek(&mut recv, cx))).await;
    let end_of_stream = matches!(first, Peek::End);
    let fields = parts.headers.iter();
    let fields = fields.map(|(n, v)| (n.as_str().as_bytes(), v.as_bytes()));
    if sluicegate_proto::h3::malformed_field(fields, end_of_stream).is_some() {
        // RFC 9114 §4.1.2: a stream error, no answer. (The receiving half's drop stops the
        // client's sending: h3-quinn's `stop_sending` panics while the peek's read is under
        // way.)
        share.ctx.counters().h3.count(H3Event::Stream);
        send.stop_stream(h3::error::Code::H3_MESSAGE_ERROR);
        return;
    }
    let head = sluicegate_proto::h3::request_head(
        crate::io::streams::stream_request(&parts, end_of_stream),
        &cfg.limits,
    );
    share.ctx.counters().h3.count(H3Event::Stream);
    let head = match head {
        Ok(h) => h,
        Err(e) => {
            share.ctx.counters().by_request.loop_answer(e.status());
            let answer = http::Response::builder()
                .status(e.status())
                .body(())
                .expect("a fixed response");
            tasks::current().spawn(async move {
                let _live = live;
                if send.send_response(answer).await.is_ok() {
                    let _ = send.finish().await;
                }
            });
            return;
        }
    };
    // 0-RTT: an idempotent request is served now, any other waits for the handshake.
    let counters = &share.ctx.counters().h3;
    let Some(early_data) = early::admit(&per.handshake, head.method(), counters).await else {
        return;
    };
    // --static and --health-path: answered here, without the app.
    let parsed_at = now_ns();
    let mut framed = None;
    let server = share.ctx.server_header();
    if share.ctx.own_answer(&head, &mut |own| {
        framed = Some(crate::io::streams::own_answer::frame(own, server))
    }) {
        let framed = framed.expect("framed by own_answer");
        let (share, peer_ip) = (Arc::clone(share), per.peer.ip());
        tasks::current().spawn(async move {
            let _live = live;
            let status = framed.status;
            let sent = super::own_answer::send(send, framed, head.is_head).await;
            share
                .ctx
                .account_own(head, peer_ip, status, sent, parsed_at);
        });
        return;
    }
    let reply = H3Reply::new(send, cfg.write_timeout, tasks::current());
    per.keep_answer(reply.cut_handle());
    let unknown_length = head.body == BodyFraming::Chunked;
    let declared = match head.body {
        BodyFraming::Length(n) => Some(n),
        _ => None,
    };
    let body = match first {
        Peek::End => None,
        other => Some(H3Body::new(
            recv,
            &reply,
            head.expect_continue,
            (unknown_length.then_some(cfg.limits.max_body), declared),
            other.into_bytes(),
        )),
    };
    let call = StreamCall {
        head,
        listener: per.listener,
        peer: per.peer.clone(),
        peer_origin: PeerOrigin::Socket,
        tls_facts: per.tls_facts(),
        early_data,
        scheme_https: true,
        body: body.map(|b| CallBody::H3(Box::new(b))),
        reply: CallReply::H3(reply),
        parsed_at: now_ns(),
        upper: Arc::clone(&per.upper),
        _live: live,
    };
    match &share.inline {
        Some(inline) if call.body.is_none() && share.runner.inline_now() => inline.offer(call),
        _ => share.runner.dispatch(call),
    }
}

/// What one look at a request stream's body found.
enum Peek {
    /// The stream ended: no body.
    End,
    /// The first bytes of the body.
    Data(Bytes),
    /// Nothing yet, or an error the first read will see again.
    Later,
}

impl Peek {
    fn into_bytes(self) -> Bytes {
        match self {
            Peek::Data(b) => b,
            _ => Bytes::new(),
        }
    }
}

fn peek(recv: &mut RecvHalf, cx: &mut std::task::Context<'_>) -> Peek {
    match recv.poll_recv_data(cx) {
        Poll::Ready(Ok(None)) => Peek::End,
        Poll::Ready(Ok(Some(mut b))) => Peek::Data(b.copy_to_bytes(b.remaining())),
        _ => Peek::Later,
    }
}
