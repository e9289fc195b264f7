//! Sending one response: [`Sender`] turns the app's head and body blocks into bytes on the
//! socket. The head is encoded when the first non-empty block (or the end of the body)
//! arrives, with the framing proto decides then (`h1::response::choose_framing`: the app's
//! Content-Length, a computed one for lists and tuples, chunked on HTTP/1.1, close-delimited on
//! HTTP/1.0); a known-length response leaves in one `writev` with small bodies copied next to
//! the head (one TCP segment) and large `bytes` bodies written from the Python object's own
//! buffer, without a copy and without the GIL. A streaming response moves to a queue shared
//! with the event loop (`io::shared_out`), with backpressure.
//!
//! Its lifecycle is [`Stage`]: one enum, its transitions in the methods below. The head
//! (keep-alive, encoding, the `--timeout` gate) is `head.rs`; a `103 Early Hints` before it,
//! `hints.rs`; a body known whole up front (a list, a file), `known.rs`. Every write goes
//! through the I/O layer (`io::transport`).

use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use sluicegate_proto::h1::encode::{ResponseFraming, LAST_CHUNK};
use sluicegate_proto::{RequestHead, Version};

use crate::io::conn::Conn;
use crate::io::event_loop::LoopCtx;
use crate::io::inline_call::{fire_stream_hook, holds_the_loop, Settle};
use crate::io::out_queue::OutQueue;
use crate::io::shared_out::SharedOut;
use crate::io::tls_writer::TLS_WRITER_MIN;
use crate::io::transport::Transport;
use crate::wsgi::app_head::AppHead;
use crate::wsgi::body_block::{as_block, queue_body, Block, SendError, COPY_MAX, STREAM_COPY_MAX};
use crate::wsgi::deadline::HeadGate;
use crate::wsgi::input::Input;

mod head;
pub mod hints;
mod known;

/// Writes of at least this many pending bytes release the GIL for the syscall.
const DETACH_WRITE_MIN: u64 = 64 * 1024;

/// Sends one response on a socket borrowed from the connection for the request.
///
/// The first block and whole known-length bodies are written by the app thread itself (one
/// writev, no hand-off). From a generator's second block on, blocks go to a queue shared with
/// the event loop, which writes whatever has piled up whenever the socket is writable, while
/// the app thread goes on producing; past the high-water mark the app thread waits.
pub struct Sender {
    /// The request's connection, written through the I/O layer.
    transport: Transport,
    token: usize,
    ctx: Arc<LoopCtx>,
    version: Version,
    is_head: bool,
    /// The request allows keep-alive (and the server is not shutting down).
    keep_alive: bool,
    write_timeout: Duration,
    high_water: u64,
    max_app_headers: usize,
    server_header: &'static [u8],
    /// With `--timeout`: claimed before the head is encoded; lost if the watcher answered 504.
    gate: Option<Arc<HeadGate>>,
    body: Option<(Py<Input>, u64)>,
    server_timing: Option<(u64, u64)>,
    /// `--http3`: the `Alt-Svc` value of the request's TLS listener.
    alt_svc: Option<&'static [u8]>,
    /// When the head was encoded (`clock::now_ns`): the first byte was ready (the access
    /// log's send time).
    head_at: Option<u64>,
    app: AppHead,
    /// A buffer for the head, from a previous response (see `head_buffer`).
    head_spare: Vec<u8>,
    stage: Stage,
    framing: ResponseFraming,
    /// Body bytes accepted so far (without chunk framing), for Content-Length checks and logs.
    body_bytes: u64,
    /// Non-empty blocks handed over so far.
    blocks: u64,
    /// Output not yet written, while the app thread writes itself (stages `Unsent`, `Direct`).
    pub out: OutQueue,
    /// A write failed or timed out: the client is gone. (An outcome, not a stage: it can
    /// happen in any stage, and the stages still run their course so that `end` hands the
    /// connection back.)
    pub client_gone: bool,
}

/// Where a response is in its life. Moves only forward:
/// `Unsent -> Direct -> Streaming -> Ended`, skipping any of the middle ones.
enum Stage {
    /// Nothing encoded yet: start_response may still change the head (exc_info).
    Unsent,
    /// The head is encoded; the app thread writes on the socket itself, from `Sender::out`.
    /// Only it writes the fd in this stage: the connection is away from the loop.
    Direct,
    /// The response streams: blocks go to a queue shared with the event loop, which writes
    /// the fd (see `SharedOut` for who may write it until `detach`).
    Streaming(Arc<SharedOut>),
    /// The request is over: `write()` refuses, the socket belongs to the connection again.
    Ended,
}

/// The version whose rules the response follows: the request's, or HTTP/1.0's for an answer
/// framed as the uwsgi protocol needs (`SenderSettings::close_delimited`).
fn response_version(head: &RequestHead, settings: &SenderSettings) -> Version {
    if settings.close_delimited {
        Version::Http10
    } else {
        head.version
    }
}

/// Per-request settings of a Sender.
pub struct SenderSettings {
    pub keep_alive: bool,
    pub write_timeout: Duration,
    pub high_water: u64,
    /// `--limit-response-headers`: checked by start_response (`app_head::parse_head`).
    pub max_app_headers: usize,
    pub server_header: &'static [u8],
    /// With `--timeout`: the call's head gate (`wsgi::deadline`).
    pub gate: Option<Arc<HeadGate>>,
    /// Frame the response as HTTP/1.0 does (Content-Length when known, else until the
    /// connection closes; never chunked): the uwsgi protocol's answers.
    pub close_delimited: bool,
    /// The request's body and `--max-drain`: a head made while the rest of the body could
    /// not be drained says `Connection: close`.
    pub body: Option<(Py<Input>, u64)>,
    /// `--server-timing`: when the request was parsed and the app called.
    pub server_timing: Option<(u64, u64)>,
    /// `--http3`: the `Alt-Svc` value that advertises it (the request's TLS listener's).
    pub alt_svc: Option<&'static [u8]>,
}

impl Sender {
    /// `out` is where the response's bytes wait (the connection's empty queue, whose storage
    /// is reused: see `OutQueue::spare`).
    pub fn new(
        conn: &Conn,
        out: OutQueue,
        head: &RequestHead,
        ctx: Arc<LoopCtx>,
        settings: SenderSettings,
    ) -> Sender {
        Sender {
            transport: conn.transport(),
            token: conn.token,
            ctx,
            version: response_version(head, &settings),
            is_head: head.is_head,
            keep_alive: settings.keep_alive,
            write_timeout: settings.write_timeout,
            high_water: settings.high_water,
            max_app_headers: settings.max_app_headers,
            server_header: settings.server_header,
            gate: settings.gate,
            body: settings.body,
            server_timing: settings.server_timing,
            alt_svc: settings.alt_svc,
            head_at: None,
            app: AppHead::default(),
            head_spare: Vec::new(),
            stage: Stage::Unsent,
            framing: ResponseFraming::NoBody,
            body_bytes: 0,
            blocks: 0,
            out,
            client_gone: false,
        }
    }

    /// Make this sender, whose request is over, the sender of another one, in place: as
    /// `new` would make it, but without building the struct elsewhere and moving it in, and
    /// with this one's head buffer kept for the new head (`head_buffer`). (Every field is
    /// named below, so a field added to `Sender` must be given its value here too.)
    pub fn renew(
        &mut self,
        conn: &Conn,
        out: OutQueue,
        head: &RequestHead,
        ctx: Arc<LoopCtx>,
        settings: SenderSettings,
    ) {
        let Sender {
            transport,
            token,
            ctx: ctx_slot,
            version,
            is_head,
            keep_alive,
            write_timeout,
            high_water,
            max_app_headers,
            server_header,
            gate,
            body,
            server_timing,
            alt_svc,
            head_at,
            app,
            head_spare,
            stage,
            framing,
            body_bytes,
            blocks,
            out: out_slot,
            client_gone,
        } = self;
        *transport = conn.transport();
        *token = conn.token;
        *ctx_slot = ctx;
        *version = response_version(head, &settings);
        *is_head = head.is_head;
        *keep_alive = settings.keep_alive;
        *write_timeout = settings.write_timeout;
        *high_water = settings.high_water;
        *max_app_headers = settings.max_app_headers;
        *server_header = settings.server_header;
        *gate = settings.gate;
        *body = settings.body;
        *server_timing = settings.server_timing;
        *alt_svc = settings.alt_svc;
        *head_at = None;
        *head_spare = app.take_buffer();
        *app = AppHead::default();
        *stage = Stage::Unsent;
        *framing = ResponseFraming::NoBody;
        *body_bytes = 0;
        *blocks = 0;
        *out_slot = out;
        *client_gone = false;
    }

    pub fn headers_sent(&self) -> bool {
        !matches!(self.stage, Stage::Unsent)
    }

    /// The shared queue, once the response streams.
    fn shared(&self) -> Option<&Arc<SharedOut>> {
        match &self.stage {
            Stage::Streaming(s) => Some(s),
            _ => None,
        }
    }
    /// The largest header section the app may give (`--limit-response-headers`).
    pub fn max_app_headers(&self) -> usize {
        self.max_app_headers
    }
    pub fn app_head(&self) -> &AppHead {
        &self.app
    }
    pub fn set_app_head(&mut self, head: AppHead) {
        self.app = head;
    }
    /// The request is over: let go of what belongs to it alone (its body reader and its
    /// `--timeout` gate), as the sender may be kept for a later request (`renew`).
    pub fn release_request(&mut self) {
        self.body = None;
        self.gate = None;
    }
    /// An empty buffer for the head start_response builds (`app_head::parse_head`): the one
    /// a previous response on this thread left (`renew`), else a new one.
    pub fn head_buffer(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.head_spare)
    }

    pub fn status_code(&self) -> u16 {
        self.app.status_code
    }
    pub fn body_bytes(&self) -> u64 {
        self.body_bytes
    }
    /// When the head was encoded (None: nothing was sent).
    pub fn head_at(&self) -> Option<u64> {
        self.head_at
    }
    /// Queue body bytes into `out` with the framing in force.
    fn queue_body(&mut self, out: &mut OutQueue, block: Block<'_>) {
        queue_body(self.framing, &mut self.body_bytes, out, block, COPY_MAX);
    }

    /// Head (if not sent yet) and one block into a fresh queue.
    fn encode_block(&mut self, block: Block<'_>) -> Result<OutQueue, SendError> {
        let mut q = OutQueue::new();
        self.queue_head(&mut q, None, block.as_slice().len().min(COPY_MAX))?;
        self.queue_body(&mut q, block);
        Ok(q)
    }

    /// Send one block now (PEP 3333: never held back for the next one). Empty blocks send
    /// nothing, not even the head.
    pub fn send_block(&mut self, py: Python<'_>, data: &Bound<'_, PyAny>) -> Result<(), SendError> {
        if matches!(self.stage, Stage::Ended) {
            return Err(SendError::Finished);
        }
        if !self.app.started {
            return Err(SendError::NotStarted);
        }
        let block = as_block(data)?;
        self.send_parsed(py, block)
    }

    /// Send bytes the server read itself (wsgi.file_wrapper over a non-regular file): copied
    /// once into the output queue, so the read buffer can be reused at once.
    pub fn send_copy(&mut self, py: Python<'_>, data: &[u8]) -> Result<(), SendError> {
        if !self.app.started {
            return Err(SendError::NotStarted);
        }
        self.send_parsed(py, Block::Other(data.to_vec()))
    }

    fn send_parsed(&mut self, py: Python<'_>, block: Block<'_>) -> Result<(), SendError> {
        if block.as_slice().is_empty() {
            return Ok(());
        }
        if self.client_gone {
            return Err(SendError::ClientGone);
        }
        self.blocks += 1;
        let over;
        if self.blocks == 1 && self.shared().is_none() {
            // The first block: written here, at once, usually in one writev with the head;
            // by the loop where the response streams anyway (its declared length is not all
            // sent) and other calls wait for the GIL this thread holds (`start_crowded`). A
            // body complete in its first block (Django's and Flask's answers) is written here,
            // in one write: handed to the loop, the shared queue's setup and the loop's wake-up
            // would cost it more than the send.
            let mut q = self.encode_block(block)?;
            self.out.append(&mut q);
            let streams = matches!(self.framing, ResponseFraming::Length(n) if self.body_bytes < n);
            if holds_the_loop() || !streams || !crate::wsgi::pool::start_crowded() {
                self.flush_local(py)?;
                if self.out.is_empty() {
                    return Ok(());
                }
            }
            // Left to the loop, or the socket did not take it all: the loop sends the rest
            // (the thread moves on).
            self.start_sharing();
            over = self.out_backlog() > self.high_water;
        } else {
            // The response streams: from now on the loop sends what piles up, in one writev per
            // writable socket, while this thread goes on producing.
            if self.shared().is_none() {
                self.start_sharing();
            }
            let Stage::Streaming(shared) = &self.stage else {
                unreachable!("start_sharing moved the response to Streaming")
            };
            let mut st = shared.state.lock().unwrap();
            if st.failed() {
                drop(st);
                return self.gone();
            }
            // Framing and small data are copied onto the queue's tail (no allocation per block);
            // a `bytes` block of more than 4 KiB is referenced, not copied.
            queue_body(
                self.framing,
                &mut self.body_bytes,
                &mut st.queue,
                block,
                STREAM_COPY_MAX,
            );
            let wake = st.hand_to_loop();
            over = SharedOut::backlog(&st) > self.high_water;
            drop(st);
            if wake {
                self.ctx.request_flush(self.token, Arc::clone(shared));
            }
        }
        let Stage::Streaming(shared) = &self.stage else {
            unreachable!("both branches above leave the response Streaming")
        };
        // Backpressure: past the high-water mark, wait (GIL released) for the loop to drain.
        if over {
            let (shared, t) = (Arc::clone(shared), self.write_timeout);
            if !py.detach(move || shared.wait_drained(t)) {
                return self.gone();
            }
        }
        Ok(())
    }

    /// From now on the event loop writes this response: hand it what is queued, and (in an
    /// inline call) move the loop to another thread so that it can.
    fn start_sharing(&mut self) {
        let rest = std::mem::take(&mut self.out);
        let shared = Arc::new(SharedOut::new(&self.transport, rest, self.high_water));
        fire_stream_hook(Arc::clone(&shared) as Arc<dyn Settle>);
        self.ctx.request_flush(self.token, Arc::clone(&shared));
        self.stage = Stage::Streaming(shared);
    }

    fn out_backlog(&self) -> u64 {
        match self.shared() {
            Some(s) => SharedOut::backlog(&s.state.lock().unwrap()),
            None => self.out.pending(),
        }
    }

    /// Add to the shared queue and make sure the loop will write it.
    fn push_shared(&mut self, q: &mut OutQueue) -> Result<(), SendError> {
        let shared = Arc::clone(self.shared().unwrap());
        let mut st = shared.state.lock().unwrap();
        if st.failed() {
            drop(st);
            return self.gone();
        }
        if q.is_empty() {
            // Nothing to add (the end of a Content-Length body that streamed): asked anyway, a
            // loop that had written everything (nobody holding the queue) got an `eventfd`
            // write and a wake-up for nothing, once per such response (S5's app).
            return Ok(());
        }
        st.queue.append(q);
        let wake = st.hand_to_loop();
        drop(st);
        if wake {
            self.ctx.request_flush(self.token, shared);
        }
        Ok(())
    }

    /// The iterable is exhausted: send the head if nothing was sent (empty body), the last
    /// chunk if chunked; nothing waits.
    pub fn finish(&mut self, py: Python<'_>) -> Result<(), SendError> {
        if matches!(self.stage, Stage::Direct) && self.framing != ResponseFraming::Chunked {
            // The usual end of a known-length body sent by `send_all`: nothing to add.
            self.check_declared_length();
            self.out.closing |= !self.keeps_alive();
            return self.flush_pending(py);
        }
        let mut q = self.out.spare();
        self.queue_head(&mut q, Some(0), 0)?;
        if self.framing == ResponseFraming::Chunked {
            q.push_static(LAST_CHUNK);
        }
        self.check_declared_length();
        self.push_final(py, q)
    }

    /// At the end of the body: if the app declared more than it sent, the client must not see
    /// the response as complete (the connection closes after it).
    fn check_declared_length(&mut self) {
        if let ResponseFraming::Length(n) = self.framing {
            if self.body_bytes < n {
                self.app.wants_close = true;
            }
        }
    }

    /// Queue the last output without waiting for the socket.
    fn push_final(&mut self, py: Python<'_>, mut q: OutQueue) -> Result<(), SendError> {
        if self.shared().is_some() {
            return self.push_shared(&mut q);
        }
        // The connection closes after this answer (no keep-alive asked, or the app closes it):
        // the FIN leaves in the answer's last segment (see `OutQueue::closing`).
        q.closing = !self.keeps_alive();
        self.out.append(&mut q);
        self.flush_pending(py)
    }

    /// Write what `out` holds now, unless it is large and this is an inline call.
    fn flush_pending(&mut self, py: Python<'_>) -> Result<(), SendError> {
        let pending = self.out.pending();
        let tls = matches!(self.transport, Transport::Tls(_));
        let after_call = pending >= TLS_WRITER_MIN && (tls || !self.out.has_file());
        if (pending >= DETACH_WRITE_MIN || after_call) && holds_the_loop() {
            // An inline call on the loop's thread: the loop writes this as soon as the call
            // returns, which is just as soon (from `TLS_WRITER_MIN` on, a TLS answer goes to
            // the writer thread instead, `io::tls_writer`). Written here, the copy would run
            // inside the call, and the watchdog, seeing a call outlast its tick, would go back
            // to looking every 250 µs all through a stream of large responses (see `SPARSE_GAP`
            // in `server::scheduler` for what those wake-ups cost).
            return Ok(());
        }
        self.flush_local(py)
    }

    /// The response must end without looking complete (error after the head was sent): no last
    /// chunk, and the connection closes.
    pub fn abort(&mut self) {
        self.app.wants_close = true;
        self.keep_alive = false;
    }

    /// Write what the socket takes now, at most one chunk (`WRITE_CHUNK`), and leave the rest
    /// to the event loop: the app thread never waits for a client, and an inline call never
    /// holds the loop for a long copy.
    pub fn flush_local(&mut self, py: Python<'_>) -> Result<(), SendError> {
        if self.out.is_empty() {
            return Ok(());
        }
        let res = if self.out.pending() >= DETACH_WRITE_MIN {
            let (out, transport) = (&mut self.out, &self.transport);
            py.detach(|| transport.write_some(out))
        } else {
            self.transport.write_some(&mut self.out)
        };
        match res {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(()),
            Err(_) => self.gone(),
        }
    }

    fn gone(&mut self) -> Result<(), SendError> {
        self.client_gone = true;
        self.out.clear();
        Err(SendError::ClientGone)
    }

    /// The request is over: the socket goes back to its connection, with what is left to write.
    pub fn end(&mut self) -> OutQueue {
        if let Stage::Streaming(shared) = std::mem::replace(&mut self.stage, Stage::Ended) {
            let (mut rest, failed) = shared.detach();
            if failed {
                self.client_gone = true;
            }
            rest.append(&mut self.out);
            return rest;
        }
        std::mem::take(&mut self.out)
    }
}
