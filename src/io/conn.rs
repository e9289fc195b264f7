//! One client connection: its socket, pending bytes, and where it is in its lifecycle.
//!
//! A connection is owned by exactly one thread at a time: by the event loop while it waits for
//! bytes or finishes writing, and by the thread running the app for the duration of a request
//! (it is then "away" from the loop's table). Moving a `Box<Conn>` is the whole hand-off.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use sluicegate_proto::forwarded::PeerOrigin;
use sluicegate_proto::h1::HeadParser;
use sluicegate_proto::RequestHead;

use super::out_queue::OutQueue;
use super::read_buf::ReadBuf;
use super::stream::Stream;
use super::tls_link::TlsLink;
use super::transport::Transport;
use crate::peer::Peer;

/// What a connection speaks, from its listener (`--bind proxy:…`, `uwsgi:…`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    Http,
    /// HTTP once a PROXY protocol header has been read (then `Http`).
    ProxyThenHttp,
    /// One uwsgi packet (nginx's `uwsgi_pass`), answered in HTTP, then closed.
    Uwsgi,
    /// The `--metrics-bind` listener's: one HTTP request answered with a page of
    /// `observe::metrics_http`, then closed; never the app's, never counted as the app's.
    Metrics,
}

/// Where a connection is in its lifecycle while the event loop owns it. (While the app runs,
/// the loop's table marks the connection as away instead.)
pub enum Phase {
    /// Between requests with no bytes pending. Deadline: header timeout for a new connection,
    /// keep-alive timeout after a response.
    Idle,
    /// Part of a request head has arrived. Deadline: header timeout, counted from the first
    /// byte, so a client trickling bytes does not extend it.
    ReadingHead,
    /// The head is parsed and a small body is being buffered so the app can be called without
    /// ever blocking on the socket. Deadline: read timeout, renewed by each read that brings
    /// body bytes (then 408).
    ReadingBody(Box<RequestHead>),
    /// The app is done but output is left; the loop finishes it. Deadline: write timeout,
    /// renewed by every successful write.
    Writing,
    /// An error answer was sent and our side shut down; input is discarded until the client
    /// closes (so the answer is not destroyed by a reset) or the linger time ends.
    Lingering,
}

/// What happens once a connection's output is written. Only moves towards closing: a
/// connection that must close never becomes reusable again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterOutput {
    /// Wait for the next request (keep-alive).
    KeepAlive,
    /// Close: half-close first if unread input is buffered (see `EventLoop::finish_close`).
    Close,
    /// Close, as the client asked (`Connection: close`, or HTTP/1.0 without keep-alive), with
    /// its whole request read: it promised to send nothing more (RFC 9112 §9.6), so a plain
    /// `close` is enough. The kernel puts the FIN on the answer's held-back last segment
    /// itself; nginx closes so too. (Saves the half-close's system call on every
    /// one-request connection.)
    CloseAsAsked,
    /// Close, then linger: the client may still be sending (an error answer, an unread request
    /// body), and input arriving after a plain close would make the kernel send a reset that
    /// destroys the answer before the client reads it.
    CloseLingering,
}

impl AfterOutput {
    /// Close after the output (keeping a lingering close lingering).
    pub fn close(&mut self) {
        if *self == AfterOutput::KeepAlive {
            *self = AfterOutput::Close;
        }
    }

    pub fn closes(self) -> bool {
        self != AfterOutput::KeepAlive
    }
}

pub struct Conn {
    pub stream: Stream,
    /// The event loop's key for this connection.
    pub token: usize,
    /// Index of the listener it arrived on (SERVER_NAME/SERVER_PORT, environ template).
    pub listener: usize,
    pub peer: Peer,
    /// How `peer` was learned (from the socket, or from a PROXY header), for the trust
    /// decision (`proto::forwarded::Hop`).
    pub peer_origin: PeerOrigin,
    pub wire: Wire,
    /// Received bytes not yet consumed; `None` while nothing is pending.
    pub rbuf: Option<ReadBuf>,
    pub parser: HeadParser,
    pub phase: Phase,
    /// Output not yet written.
    pub out: OutQueue,
    /// What happens once `out` is written.
    pub after_output: AfterOutput,
    /// When the current phase times out.
    pub deadline: Option<Instant>,
    /// Requests answered on this connection.
    pub requests: u64,
    /// In the loop's epoll set (registration is lazy: see `event_loop`).
    pub registered: bool,
    /// The peer's strings the bridge makes at the connection's first request and sets in
    /// every environ (REMOTE_ADDR, REMOTE_PORT, `SSL_*`). The I/O layer only holds them.
    pub upper: Option<Box<dyn crate::peer::PeerCache>>,
    /// Set by the loop when the socket became readable while an app thread had the connection
    /// (shared with the loop's note of it, so the thread that gives the connection back knows
    /// whether the loop must be woken for it: see `LoopCtx::return_conn`).
    pub woke_away: Arc<AtomicBool>,
    /// The access log line of the response still being sent (`observe::request_end`).
    pub pending_log: Option<Box<crate::observe::request_end::PendingLog>>,
    /// The TLS session of a connection to a TLS listener (`io::tls_link`); `None` in
    /// plaintext, where every path below is the plain system call.
    pub tls: Option<Arc<TlsLink>>,
}

impl Conn {
    /// The connection as the thread that runs its request reads and writes it
    /// (`io::transport`).
    #[inline]
    pub fn transport(&self) -> Transport {
        match &self.tls {
            None => Transport::Plain(self.stream.fd()),
            Some(link) => Transport::Tls(Arc::clone(link)),
        }
    }

    /// One write of the output queue: to the socket, or encrypted through the TLS session.
    #[inline]
    pub fn write_out(&mut self) -> std::io::Result<usize> {
        match &self.tls {
            None => self.out.write_to(&self.stream),
            Some(link) => link.write_some(&mut self.out),
        }
    }

    /// Output is left to write: queued, or (TLS) ciphertext the socket did not take yet.
    #[inline]
    pub fn has_output(&self) -> bool {
        !self.out.is_empty() || self.tls.as_ref().is_some_and(|t| t.has_output())
    }

    /// Bytes wait inside the TLS session (decrypted, or read and not yet decrypted): the
    /// loop reads again without waiting for readiness (edge-triggered epoll gives no new
    /// edge for them).
    #[inline]
    pub fn tls_input_waits(&self) -> bool {
        self.tls.as_ref().is_some_and(|t| t.has_input())
    }

    pub fn new(stream: Stream, token: usize, listener: usize, peer: Peer) -> Conn {
        Conn {
            stream,
            token,
            listener,
            peer,
            peer_origin: PeerOrigin::Socket,
            wire: Wire::Http,
            rbuf: None,
            parser: HeadParser::new(),
            phase: Phase::Idle,
            out: OutQueue::new(),
            after_output: AfterOutput::KeepAlive,
            deadline: None,
            requests: 0,
            registered: false,
            woke_away: Arc::new(AtomicBool::new(false)),
            upper: None,
            pending_log: None,
            tls: None,
        }
    }

    /// Bytes already received and not consumed.
    pub fn buffered(&self) -> &[u8] {
        self.rbuf.as_ref().map(|b| b.filled()).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    /// A connection's own footprint matters with 10,000 idle keep-alive connections: 288 bytes
    /// in a release build, 304 in a test build (with the 8-byte `woke_away` pointer of the
    /// pool's quiet returns, plus its 24-byte flag allocation; and the connection's `wire` and the
    /// 8-byte pointer to a pending access log line), and 8 more for the TLS session pointer.
    /// This catches accidental growth.
    #[test]
    fn conn_stays_small() {
        let size = std::mem::size_of::<super::Conn>();
        eprintln!("size_of::<Conn>() = {size}");
        assert!(size <= 312, "Conn grew to {size} bytes");
    }
}
