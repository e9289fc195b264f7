//! One HTTP/2 connection's task ([`serve_one`]), polled by the event loop: the `h2` handshake (our SETTINGS, the client's
//! preface, within `--header-timeout`), then accepting streams, each decoded into a
//! `RequestHead` by proto and queued to run inline (`inline.rs`) or dispatched to the pool as
//! a [`StreamCall`]. Polling `accept` is
//! also what drives the connection's I/O: frames in, the app threads' DATA out.
//!
//! Limits, each the `h2` crate's own defence set here by name: concurrent streams
//! (`--http2-max-streams`), the decoded header list (`--limit-header-bytes`: a CONTINUATION
//! flood or HPACK bomb ends in a stream error or GOAWAY, never unbounded memory), the windows
//! and send buffer below, and the crate's rapid-reset and local-reset caps (defaults).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;

use bytes::Bytes;
use sluicegate_proto::h2::request_head;
use sluicegate_proto::BodyFraming;

use super::open_streams::OpenStreams;
use super::own_answer;
use super::parked::{Parking, ServerParking};
use super::socket_io::SocketIo;
use super::stream::{StreamBody, StreamReply};
use crate::clock::now_ns;
use crate::io::call_io::{CallBody, CallReply};
use crate::io::conn::Conn;
use crate::io::streams::reply::StreamOut;
use crate::io::streams::Inline;
use crate::io::streams::{tasks, timer};
use crate::io::streams::{LiveStream, LoopView, Stop, StopWatch, StreamCall, StreamRunner, Upper};

/// What the connections' tasks work with.
pub(super) struct ThreadShare {
    pub config: Arc<crate::config::Config>,
    pub runner: Arc<dyn StreamRunner>,
    /// Streams to run inline.
    pub inline: Arc<Inline>,
    /// Connections being served (the thread ends at a stop once none is left).
    pub open: Arc<AtomicUsize>,
    /// Response bytes parked, and threads waiting past that, across the server (`parked.rs`).
    pub parked: Arc<ServerParking>,
}

/// A stream's receive window: the most request body the server buffers for one stream the
/// app has not read yet (flow control gives it back as the app reads).
const STREAM_WINDOW: u32 = 1024 * 1024;
/// The connection's receive window: several streams' worth, so one slow reader does not
/// stall the uploads of the others.
const CONNECTION_WINDOW: u32 = 8 * 1024 * 1024;
/// The most response bytes the `h2` crate buffers per stream before the window takes them.
const SEND_BUFFER: usize = 1024 * 1024;

/// One connection, from the handshake to its close.
pub(super) async fn serve_one(
    hub: Arc<ThreadShare>,
    ctx: Arc<dyn LoopView>,
    mut conn: Box<Conn>,
    ready: Arc<crate::io::streams::tasks::Readiness>,
    mut stop: StopWatch,
) {
    let cfg = Arc::clone(&hub.config);
    let prefix = conn
        .rbuf
        .take()
        .map(|b| b.filled().to_vec())
        .unwrap_or_default();
    if let Ok(io) = SocketIo::new(conn.stream.fd(), conn.tls.clone(), prefix, ready) {
        let mut builder = h2::server::Builder::new();
        builder
            .max_concurrent_streams(cfg.http2_max_streams)
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .max_header_list_size(u32::try_from(cfg.limits.max_header_bytes).unwrap_or(u32::MAX))
            .max_send_buffer_size(SEND_BUFFER);
        let handshake = timer::timeout(cfg.header_timeout, builder.handshake::<_, Bytes>(io));
        if let Ok(Ok(h2c)) = handshake.await {
            streams(&hub, &ctx, &mut conn, h2c, &mut stop).await;
        }
    }
    ctx.counters()
        .by_request
        .open_connections
        .fetch_sub(1, Ordering::Relaxed);
    hub.open.fetch_sub(1, Ordering::SeqCst);
    drop(conn);
}

/// Accept streams until the connection ends: the client's GOAWAY or close, an error, the idle
/// timeout (`--keepalive-timeout` without a stream in flight) or a stop (GOAWAY, in-flight
/// streams finish; an immediate stop, or the end of the graceful time, resets them:
/// [`cut_streams`]).
async fn streams(
    hub: &Arc<ThreadShare>,
    ctx: &Arc<dyn LoopView>,
    conn: &mut Conn,
    mut h2c: h2::server::Connection<SocketIo, Bytes>,
    stop: &mut StopWatch,
) {
    let cfg = &hub.config;
    let per_conn = PerConn {
        live: Arc::new(AtomicUsize::new(0)),
        tls_facts: conn.tls.as_ref().and_then(|l| l.facts()),
        upper: Arc::new(std::sync::Mutex::new(conn.upper.take())),
        park: Arc::new(Parking::new(
            cfg.write_timeout,
            usize::try_from(cfg.write_high_water).unwrap_or(usize::MAX),
            Arc::clone(&hub.parked),
            cfg.threads_max,
        )),
    };
    let (live, park) = (&per_conn.live, &per_conn.park);
    let mut going_away = false;
    let mut open = OpenStreams::new();
    if *stop.borrow() >= Stop::Graceful {
        h2c.graceful_shutdown();
        going_away = true;
    }
    if *stop.borrow() == Stop::Immediate {
        return;
    }
    let mut idle = timer::sleep(cfg.keepalive_timeout);
    loop {
        tokio::select! {
            next = h2c.accept() => match next {
                Some(Ok((request, respond))) => {
                    take_stream(hub, ctx, conn, &per_conn, &mut open, request, respond);
                    idle.reset(cfg.keepalive_timeout);
                }
                Some(Err(_)) | None => break,
            },
            _ = &mut idle => {
                idle.reset(cfg.keepalive_timeout);
                if live.load(Ordering::SeqCst) == 0 && park.parked() == 0 {
                    if going_away {
                        // GOAWAY sent a keep-alive timeout ago and the client neither closed
                        // nor opened anything: close.
                        break;
                    }
                    h2c.graceful_shutdown();
                    going_away = true;
                }
            }
            // A parked answer got no window for --write-timeout (its stream is reset): if none
            // of the connection's moved for as long, the client is not reading: close.
            _ = std::future::poll_fn(|cx| park.poll_stalled(cx)) => {
                if park.stalled_now() {
                    open.cancel_all();
                    flush(&mut h2c).await;
                    break;
                }
            }
            changed = stop.changed() => {
                let state = *stop.borrow();
                if changed.is_err() {
                    break;
                }
                if state == Stop::Immediate {
                    if !going_away {
                        h2c.graceful_shutdown();
                    }
                    cut_streams(ctx, &mut h2c, &mut open).await;
                    break;
                }
                if !going_away {
                    h2c.graceful_shutdown();
                    going_away = true;
                }
            }
        }
    }
}

/// What a connection's streams share.
struct PerConn {
    /// Its streams in flight (the idle timer waits for none).
    live: Arc<AtomicUsize>,
    tls_facts: Option<Arc<crate::io::tls_link::TlsFacts>>,
    upper: Upper,
    park: Arc<Parking>,
}

/// A stream the client opened: its head decoded by proto (refused on its stream if bad),
/// answered here (`--static`, `--health-path`), or queued to run inline or on the pool.
fn take_stream(
    hub: &Arc<ThreadShare>,
    ctx: &Arc<dyn LoopView>,
    conn: &mut Conn,
    per_conn: &PerConn,
    open: &mut OpenStreams,
    request: http::Request<h2::RecvStream>,
    respond: h2::server::SendResponse<Bytes>,
) {
    conn.requests += 1;
    let (parts, body) = request.into_parts();
    let end_of_stream = body.is_end_stream();
    let head = request_head(
        crate::io::streams::stream_request(&parts, end_of_stream),
        &hub.config.limits,
    );
    let head = match head {
        Ok(h) => h,
        Err(e) => {
            ctx.counters().by_request.loop_answer(e.status());
            let mut reply = StreamReply::new(respond, &per_conn.park);
            let _ = reply.send_head(e.status(), std::iter::empty(), true);
            return;
        }
    };
    // --static and --health-path: answered here, without the app.
    let parsed_at = now_ns();
    let mut framed = None;
    let server = ctx.server_header();
    if ctx.own_answer(&head, &mut |own| {
        framed = Some(crate::io::streams::own_answer::frame(own, server))
    }) {
        let framed = framed.expect("framed by own_answer");
        let (view, client) = (Arc::clone(ctx), conn.peer.ip());
        tasks::current().spawn(async move {
            let status = framed.status;
            let sent = own_answer::send(respond, framed).await;
            view.account_own(head, client, status, sent, parsed_at);
        });
        return;
    }
    let reply = StreamReply::new(respond, &per_conn.park);
    open.add(reply.watch());
    let expect_continue = head.expect_continue;
    // A body without a content-length is held to --limit-body as it comes.
    let unknown_length = head.body == BodyFraming::Chunked;
    let call = StreamCall {
        head,
        listener: conn.listener,
        peer: conn.peer.clone(),
        peer_origin: conn.peer_origin,
        tls_facts: per_conn.tls_facts.clone(),
        early_data: false,
        scheme_https: parts.uri.scheme_str() == Some("https"),
        body: (!end_of_stream).then(|| {
            CallBody::H2(StreamBody::new(
                body,
                expect_continue.then(|| reply.interim()),
                unknown_length.then_some(hub.config.limits.max_body),
            ))
        }),
        reply: CallReply::H2(reply),
        parsed_at: now_ns(),
        upper: Arc::clone(&per_conn.upper),
        _live: LiveStream::new(&per_conn.live),
    };
    // A whole request runs inline while the scheduler says so (`inline.rs`);
    // one with a body to wait for goes to the pool, as on HTTP/1.1.
    if call.body.is_none() && hub.runner.inline_now() {
        hub.inline.offer(call);
    } else {
        hub.runner.dispatch(call);
    }
}

/// Reset every stream still open (`RST_STREAM(CANCEL)`, after the GOAWAY sent when the stop
/// began), count them as cut, and let the connection write the resets before it closes (the
/// calls still hold their streams, so it would not close by itself).
async fn cut_streams(
    ctx: &Arc<dyn LoopView>,
    h2c: &mut h2::server::Connection<SocketIo, Bytes>,
    open: &mut OpenStreams,
) {
    let cut = open.cancel_all();
    ctx.counters().cut.fetch_add(cut as u64, Ordering::Relaxed);
    flush(h2c).await;
}

/// Let the connection write what was just queued (resets): one poll drives it until it waits,
/// when what the socket takes is written.
async fn flush(h2c: &mut h2::server::Connection<SocketIo, Bytes>) {
    std::future::poll_fn(|cx| {
        let _ = h2c.poll_closed(cx);
        Poll::Ready(())
    })
    .await;
}
