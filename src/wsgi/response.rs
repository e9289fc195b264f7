//! Running one request through the app and sending its response.
//!
//! [`Sender`] turns the app's head and body blocks into bytes on the socket: the head is
//! encoded when the first non-empty block (or the end of the body) arrives, framing is chosen
//! then (the app's Content-Length, a computed one for lists and tuples, chunked on HTTP/1.1,
//! close-delimited on HTTP/1.0), and a known-length response leaves in one `writev` with small
//! bodies copied next to the head (one TCP segment) and large `bytes` bodies written from the
//! Python object's own buffer, without a copy and without the GIL.
//!
//! [`run_request`] calls the app, drives the iterable, calls its `close()` on every path, gives
//! the body state back to the connection, and decides whether the connection lives on. Output
//! that the socket did not take by the time the app is done is left in the connection's queue
//! for the event loop, so the app thread is free at once.

use std::cell::Cell;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyMemoryView, PyTuple};
use sluicegate_proto::h1::decode::BodyDecoder;
use sluicegate_proto::h1::encode::{
    chunk_header, encode_error_response, encode_response_head, ResponseFraming, ResponseHead,
    CHUNK_END, LAST_CHUNK,
};
use sluicegate_proto::{BodyFraming, RequestHead, Version};

use super::file_wrapper::FileWrapper;
use super::input::{BodyFailure, BodyState, Input};
use super::start_response::{type_name, AppHead, StartResponse};
use super::Bridge;
use crate::http_date::http_date;
use crate::io::conn::Conn;
use crate::io::event_loop::{LoopCtx, Work};
use crate::io::out_queue::{OutQueue, SharedBytes, CORK_MIN};
use crate::io::shared_out::SharedOut;

/// Bodies up to this size are copied next to the head so head and body leave in one segment;
/// larger `bytes` blocks are sent from the Python object's buffer (no copy).
const COPY_MAX: usize = 16 * 1024;

/// Writes of at least this many pending bytes release the GIL for the syscall.
const DETACH_WRITE_MIN: u64 = 64 * 1024;

/// Why a block could not be sent.
#[derive(Debug)]
pub enum SendError {
    NotBytes(String),
    NotStarted,
    Finished,
    ClientGone,
}

/// A Python `bytes` object queued for writing. It is immutable and kept alive by `_owner`, so
/// its buffer stays valid and unchanged until the segment is dropped.
struct PyBytesChunk {
    _owner: Py<PyBytes>,
    ptr: *const u8,
    len: usize,
}

// SAFETY: the pointed-to memory belongs to an immutable bytes object that `_owner` keeps alive;
// reading it from another thread without the GIL is sound because nothing can mutate it, and
// PyO3 defers the decref of a Py dropped without the GIL.
unsafe impl Send for PyBytesChunk {}

impl SharedBytes for PyBytesChunk {
    fn bytes(&self) -> &[u8] {
        // SAFETY: see the type's comment: ptr/len describe the live, immutable bytes buffer.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// Per-thread hook the scheduler sets around an inline call: called once when the response
/// turns out to stream (a generator's second block), so the event loop moves to another thread
/// that can send blocks while this one keeps producing them. (Function pointer + context, so
/// the bridge need not know the scheduler.)
type StreamHook = (fn(*const ()), *const ());

thread_local! {
    static STREAM_HOOK: Cell<Option<StreamHook>> = const { Cell::new(None) };
}

/// Set (or clear, with None) the current thread's stream hook.
pub fn set_stream_hook(hook: Option<StreamHook>) {
    STREAM_HOOK.with(|h| h.set(hook));
}

/// Is this thread in an inline call that still holds the event loop (its hook not fired)?
fn holds_the_loop() -> bool {
    STREAM_HOOK.with(|h| h.get().is_some())
}

fn fire_stream_hook() {
    if let Some((f, ctx)) = STREAM_HOOK.with(|h| h.take()) {
        f(ctx);
    }
}

/// Sends one response on a socket borrowed from the connection for the request.
///
/// The first block and whole known-length bodies are written by the app thread itself (one
/// writev, no hand-off). From a generator's second block on, blocks go to a queue shared with
/// the event loop, which writes whatever has piled up whenever the socket is writable, while
/// the app thread goes on producing; past the high-water mark the app thread waits.
pub struct Sender {
    fd: RawFd,
    token: usize,
    ctx: Arc<LoopCtx>,
    version: Version,
    is_head: bool,
    /// The request allows keep-alive (and the server is not shutting down).
    keep_alive: bool,
    write_timeout: Duration,
    high_water: u64,
    server_header: &'static [u8],
    app: AppHead,
    headers_sent: bool,
    framing: ResponseFraming,
    /// Body bytes accepted so far (without chunk framing), for Content-Length checks and logs.
    body_bytes: u64,
    /// Non-empty blocks handed over so far.
    blocks: u64,
    /// Output not yet written, while the app thread writes itself.
    pub out: OutQueue,
    /// Output shared with the event loop, once the response streams.
    shared: Option<Arc<SharedOut>>,
    /// The request is over: write() refuses, the socket belongs to the connection again.
    finished: bool,
    /// A write failed or timed out: the client is gone.
    pub client_gone: bool,
}

/// A body block the app produced, seen as bytes. Only `bytes` is referenced without a copy:
/// it is immutable, and dropping it needs no GIL (PyO3 defers the decref). A `bytearray` or
/// `memoryview` is copied once: its buffer could change under us, and releasing a held
/// `Py_buffer` takes the GIL, which the event loop thread must never wait for.
enum Block<'py> {
    Bytes(Bound<'py, PyBytes>),
    Other(Vec<u8>),
}

impl Block<'_> {
    fn as_slice(&self) -> &[u8] {
        match self {
            Block::Bytes(b) => b.as_bytes(),
            Block::Other(v) => v,
        }
    }
}

fn as_block<'py>(o: &Bound<'py, PyAny>) -> Result<Block<'py>, SendError> {
    if let Ok(b) = o.cast::<PyBytes>() {
        return Ok(Block::Bytes(b.clone()));
    }
    if let Ok(b) = o.cast::<PyByteArray>() {
        return Ok(Block::Other(b.to_vec()));
    }
    if o.is_instance_of::<PyMemoryView>() {
        // tobytes() copies once, also from a strided view.
        if let Ok(b) = o.call_method0("tobytes") {
            if let Ok(b) = b.cast_into::<PyBytes>() {
                return Ok(Block::Bytes(b));
            }
        }
    }
    Err(SendError::NotBytes(type_name(o)))
}

/// Where a block's bytes go: copied (small) or referenced (large, no copy).
fn queue_block(out: &mut OutQueue, block: Block<'_>, take: usize) {
    let small = take <= COPY_MAX;
    match block {
        Block::Bytes(b) if !small => {
            let ptr = b.as_bytes().as_ptr();
            out.push_shared(Box::new(PyBytesChunk {
                _owner: b.unbind(),
                ptr,
                len: take,
            }));
        }
        b => out.push_copy(&b.as_slice()[..take]),
    }
}

/// Queue body bytes into `out` with the framing in force, respecting a declared Content-Length
/// (bytes beyond it are dropped, as the client would misread them). A free function so the
/// streaming path can fill the shared queue while it holds the queue's lock.
fn queue_body(
    framing: ResponseFraming,
    body_bytes: &mut u64,
    out: &mut OutQueue,
    block: Block<'_>,
) {
    let mut take = block.as_slice().len();
    match framing {
        ResponseFraming::NoBody => return,
        ResponseFraming::Length(n) => {
            take = take.min(n.saturating_sub(*body_bytes) as usize);
        }
        _ => {}
    }
    if take == 0 {
        return;
    }
    *body_bytes += take as u64;
    let chunked = framing == ResponseFraming::Chunked;
    if chunked && take <= COPY_MAX {
        // Small blocks extend the open chunk (one chunk per batch the socket takes).
        out.push_chunk_data(&block.as_slice()[..take]);
        return;
    }
    if chunked {
        let mut hdr = [0u8; 18];
        out.push_copy(chunk_header(take, &mut hdr));
    }
    queue_block(out, block, take);
    if chunked {
        out.push_copy(CHUNK_END);
    }
}

/// Per-request settings of a Sender.
pub struct SenderSettings {
    pub keep_alive: bool,
    pub write_timeout: Duration,
    pub high_water: u64,
    pub server_header: &'static [u8],
}

impl Sender {
    pub fn new(
        conn: &Conn,
        head: &RequestHead,
        ctx: Arc<LoopCtx>,
        settings: SenderSettings,
    ) -> Sender {
        Sender {
            fd: conn.stream.fd(),
            token: conn.token,
            ctx,
            version: head.version,
            is_head: head.is_head,
            keep_alive: settings.keep_alive,
            write_timeout: settings.write_timeout,
            high_water: settings.high_water,
            server_header: settings.server_header,
            app: AppHead::default(),
            headers_sent: false,
            framing: ResponseFraming::NoBody,
            body_bytes: 0,
            blocks: 0,
            out: OutQueue::new(),
            shared: None,
            finished: false,
            client_gone: false,
        }
    }

    pub fn headers_sent(&self) -> bool {
        self.headers_sent
    }
    pub fn app_head(&self) -> &AppHead {
        &self.app
    }
    pub fn set_app_head(&mut self, head: AppHead) {
        self.app = head;
    }
    pub fn status_code(&self) -> u16 {
        self.app.status_code
    }
    pub fn body_bytes(&self) -> u64 {
        self.body_bytes
    }
    /// The connection may carry another request after this response.
    pub fn keeps_alive(&self) -> bool {
        self.keep_alive
            && !self.app.wants_close
            && !self.client_gone
            && self.framing != ResponseFraming::CloseDelimited
    }

    /// Status codes whose responses never have a body.
    fn bodiless_status(&self) -> bool {
        let c = self.app.status_code;
        (100..200).contains(&c) || c == 204 || c == 304
    }

    /// Encode the head into `buf`, choosing the framing. `known_len` is the body length when
    /// the whole body is known (list/tuple or end of iteration).
    fn encode_head(&mut self, buf: &mut Vec<u8>, known_len: Option<u64>) {
        self.framing = if self.is_head || self.bodiless_status() {
            ResponseFraming::NoBody
        } else if let Some(n) = self.app.content_length {
            ResponseFraming::Length(n)
        } else if let Some(n) = known_len {
            ResponseFraming::Length(n)
        } else if self.version == Version::Http11 {
            ResponseFraming::Chunked
        } else {
            ResponseFraming::CloseDelimited
        };
        // A HEAD answer carries the Content-Length a GET would have, when it is known.
        let mut extra_len = None;
        if self.is_head && self.app.content_length.is_none() {
            extra_len = known_len;
        }
        let mut pairs: Vec<(&[u8], &[u8])> = Vec::with_capacity(self.app.hidx.len() + 1);
        pairs.extend(self.app.headers());
        let mut len_buf = [0u8; 20];
        if let Some(n) = extra_len {
            let s = fmt_u64(n, &mut len_buf);
            pairs.push((b"Content-Length", s));
        }
        let date = http_date();
        encode_response_head(
            buf,
            &ResponseHead {
                version: self.version,
                status: &self.app.status,
                headers: &pairs,
                framing: self.framing,
                keep_alive: self.keeps_alive(),
                date: &date,
                server: self.server_header,
            },
        );
        self.headers_sent = true;
    }

    /// Queue the head if it was not sent yet. `body_room`: capacity reserved after it, since
    /// small body bytes are copied onto the same buffer (one writev, one segment).
    fn queue_head(&mut self, q: &mut OutQueue, known_len: Option<u64>, body_room: usize) {
        if !self.headers_sent {
            let mut head = Vec::with_capacity(512 + body_room);
            self.encode_head(&mut head, known_len);
            q.push_owned(head);
        }
    }

    /// Queue body bytes into `out` with the framing in force.
    fn queue_body(&mut self, out: &mut OutQueue, block: Block<'_>) {
        queue_body(self.framing, &mut self.body_bytes, out, block);
    }

    /// Head (if not sent yet) and one block into a fresh queue.
    fn encode_block(&mut self, block: Block<'_>) -> OutQueue {
        let mut q = OutQueue::new();
        self.queue_head(&mut q, None, block.as_slice().len().min(COPY_MAX));
        self.queue_body(&mut q, block);
        q
    }

    /// Send one block now (PEP 3333: never held back for the next one). Empty blocks send
    /// nothing, not even the head.
    pub fn send_block(&mut self, py: Python<'_>, data: &Bound<'_, PyAny>) -> Result<(), SendError> {
        if self.finished {
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
        if self.blocks == 1 && self.shared.is_none() {
            // The first block: written here, at once, usually in one writev with the head.
            let mut q = self.encode_block(block);
            self.out.append(&mut q);
            self.flush_local(py)?;
            if self.out.is_empty() {
                return Ok(());
            }
            // The socket did not take it all: the loop sends the rest (the thread moves on).
            self.start_sharing();
            over = self.out_backlog() > self.high_water;
        } else {
            // The response streams: from now on the loop sends what piles up, in one writev per
            // writable socket, while this thread goes on producing.
            if self.shared.is_none() {
                self.start_sharing();
            }
            let shared = self.shared.as_ref().unwrap();
            let mut st = shared.state.lock().unwrap();
            if st.failed {
                drop(st);
                return self.gone();
            }
            // Framing and (small) data are copied onto the queue's tail: no allocation per block.
            queue_body(self.framing, &mut self.body_bytes, &mut st.queue, block);
            let wake = !st.loop_owns;
            st.loop_owns = true;
            over = SharedOut::backlog(&st) > self.high_water;
            drop(st);
            if wake {
                self.ctx.request_flush(self.token, Arc::clone(shared));
            }
        }
        let shared = self.shared.as_ref().unwrap();
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
        fire_stream_hook();
        let rest = std::mem::take(&mut self.out);
        let shared = Arc::new(SharedOut::new(self.fd, rest, self.high_water / 2));
        self.ctx.request_flush(self.token, Arc::clone(&shared));
        self.shared = Some(shared);
    }

    fn out_backlog(&self) -> u64 {
        match &self.shared {
            Some(s) => SharedOut::backlog(&s.state.lock().unwrap()),
            None => self.out.pending(),
        }
    }

    /// Add to the shared queue and make sure the loop will write it.
    fn push_shared(&mut self, q: &mut OutQueue) -> Result<(), SendError> {
        let shared = Arc::clone(self.shared.as_ref().unwrap());
        let mut st = shared.state.lock().unwrap();
        if st.failed {
            drop(st);
            return self.gone();
        }
        st.queue.append(q);
        let wake = !st.loop_owns;
        st.loop_owns = true;
        drop(st);
        if wake {
            self.ctx.request_flush(self.token, shared);
        }
        Ok(())
    }

    /// Send a whole body known up front (list/tuple/bare bytes): head, then every block, in one
    /// writev. Nothing waits: what the socket does not take now is left for the event loop.
    pub fn send_all(
        &mut self,
        py: Python<'_>,
        blocks: &[Bound<'_, PyAny>],
    ) -> Result<(), SendError> {
        if !self.app.started {
            return Err(SendError::NotStarted);
        }
        let mut parsed = Vec::with_capacity(blocks.len());
        let mut total = 0u64;
        for b in blocks {
            let blk = as_block(b)?;
            total += blk.as_slice().len() as u64;
            parsed.push(blk);
        }
        let small: usize = parsed
            .iter()
            .map(|b| b.as_slice().len())
            .filter(|&n| n <= COPY_MAX)
            .sum();
        // No TCP_CORK here, unlike a large file: the body's 1 MiB writes already fill whole
        // segments, and corking a 64 MiB `[bytes]` cost more server CPU (18.9–19.4 ms against
        // 16.8–17.4 ms per response, interleaved, 5 rounds).
        let mut q = OutQueue::new();
        self.queue_head(&mut q, Some(total), small);
        for blk in parsed {
            self.queue_body(&mut q, blk);
        }
        self.blocks += 1;
        self.push_final(py, q)
    }

    /// Send `len` bytes of a regular file from `offset` with sendfile(2) (wsgi.file_wrapper).
    /// The file's length is the body's unless the app set a Content-Length.
    pub fn send_file(
        &mut self,
        py: Python<'_>,
        file: std::fs::File,
        offset: u64,
        len: u64,
    ) -> Result<(), SendError> {
        if !self.app.started {
            return Err(SendError::NotStarted);
        }
        let mut q = OutQueue::new();
        self.queue_head(&mut q, Some(len), 0);
        let take = match self.framing {
            ResponseFraming::NoBody => 0,
            ResponseFraming::Length(n) => len.min(n.saturating_sub(self.body_bytes)),
            _ => len,
        };
        if take > 0 {
            let chunked = self.framing == ResponseFraming::Chunked;
            if chunked {
                let mut hdr = [0u8; 18];
                q.push_copy(chunk_header(take as usize, &mut hdr));
            }
            q.push_file(file, offset, take);
            if chunked {
                q.push_copy(CHUNK_END);
            }
            self.body_bytes += take;
            if take >= CORK_MIN {
                // Head and file leave corked, in full segments (the head waits for the file's
                // first bytes anyway: it carries MSG_MORE).
                let mut corked = OutQueue::new();
                corked.push_cork(true);
                corked.append(&mut q);
                corked.push_cork(false);
                q = corked;
            }
        }
        self.blocks += 1;
        self.push_final(py, q)
    }

    /// The iterable is exhausted: send the head if nothing was sent (empty body), the last
    /// chunk if chunked; nothing waits.
    pub fn finish(&mut self, py: Python<'_>) -> Result<(), SendError> {
        let mut q = OutQueue::new();
        self.queue_head(&mut q, Some(0), 0);
        if self.framing == ResponseFraming::Chunked {
            q.push_static(LAST_CHUNK);
        }
        if let ResponseFraming::Length(n) = self.framing {
            if self.body_bytes < n {
                // The app declared more than it sent: the client must not see it as complete.
                self.app.wants_close = true;
            }
        }
        self.push_final(py, q)
    }

    /// Queue the last output without waiting for the socket.
    fn push_final(&mut self, py: Python<'_>, mut q: OutQueue) -> Result<(), SendError> {
        if self.shared.is_some() {
            return self.push_shared(&mut q);
        }
        // The connection closes after this answer (no keep-alive asked, or the app closes it):
        // the FIN leaves in the answer's last segment (see `OutQueue::closing`).
        q.closing = !self.keeps_alive();
        self.out.append(&mut q);
        if self.out.pending() >= DETACH_WRITE_MIN && holds_the_loop() {
            // An inline call on the loop's thread: the loop writes this as soon as the call
            // returns, which is just as soon. Written here, the copy would run inside the
            // call, and the watchdog, seeing a call outlast its tick, would go back to looking
            // every 250 µs all through a stream of large responses (see `SPARSE_GAP` in
            // `server::scheduler` for what those wake-ups cost).
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
    fn flush_local(&mut self, py: Python<'_>) -> Result<(), SendError> {
        if self.out.is_empty() {
            return Ok(());
        }
        let res = if self.out.pending() >= DETACH_WRITE_MIN {
            let (out, fd) = (&mut self.out, self.fd);
            py.detach(|| out.write_fd(fd))
        } else {
            self.out.write_fd(self.fd)
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
        self.finished = true;
        if let Some(shared) = self.shared.take() {
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

fn fmt_u64(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}

/// How the app's part of a request ended.
enum AppEnd {
    Done,
    /// The app raised (or returned something unusable); the error is logged.
    Failed,
    /// The client went away mid-response: nothing to log as a server error.
    ClientGone,
}

/// Run one request on the current thread (inline on the loop thread or on a pool thread).
/// Returns the connection, with output the socket did not take yet left in `conn.out`, and
/// `close_after_write` set when the connection must not carry another request.
pub fn run_request(bridge: &Bridge, py: Python<'_>, work: Work) -> Box<crate::io::conn::Conn> {
    let Work { mut conn, head, .. } = work;
    conn.requests += 1;
    bridge.counters.requests.fetch_add(1, Ordering::Relaxed);
    let fd = conn.stream.fd();
    let keep_alive = head.keep_alive && !bridge.loop_ctx.shutting_down();

    // wsgi.input: the shared empty input for body-less requests, else a streaming reader that
    // borrows the connection's read buffer for the request.
    let limits = &bridge.config.limits;
    let input_obj: Option<Py<Input>> = match head.body {
        BodyFraming::None => None,
        framing => {
            let raw = conn.rbuf.take().unwrap_or_default();
            let decoder = BodyDecoder::new(framing, limits.max_body, limits.max_header_bytes);
            let state = BodyState::new(
                fd,
                raw,
                decoder,
                head.expect_continue,
                bridge.config.read_timeout,
            );
            Some(Py::new(py, Input::new(Some(state))).expect("allocating wsgi.input"))
        }
    };
    let input_any = match &input_obj {
        Some(i) => i.bind(py).clone().into_any(),
        None => bridge.empty_input.bind(py).clone().into_any(),
    };

    let sender = Sender::new(
        &conn,
        &head,
        Arc::clone(&bridge.loop_ctx),
        SenderSettings {
            keep_alive,
            write_timeout: bridge.config.write_timeout,
            high_water: bridge.config.write_high_water,
            server_header: bridge.server_header,
        },
    );
    let sr = Py::new(py, StartResponse::new(sender)).expect("allocating start_response");

    let end = match bridge.environ.build(
        py,
        conn.listener,
        &head,
        &conn.peer,
        &mut conn.upper,
        &input_any,
    ) {
        Ok(environ) => call_and_drive(bridge, py, &head, environ.into_any(), &sr),
        Err(e) => {
            bridge.log_exception(py, &e, "building the environ");
            AppEnd::Failed
        }
    };

    // Give the body state back: the connection's buffer (with pipelined bytes after the body),
    // and learn whether the body was consumed, so the connection can carry another request.
    let mut body_ok = true;
    let mut body_error_status = None;
    if let Some(input) = input_obj {
        if let Some(mut st) = input.get().detach() {
            if let Some(BodyFailure::Protocol(e)) = st.failure {
                body_error_status = Some(e);
            }
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
            } else {
                // Nothing was sent: a clean error answer. A body error gets its own status.
                let (status, reason) = match body_error_status {
                    Some(e) => (e.status(), e.reason()),
                    None => (500, "Internal Server Error"),
                };
                let mut buf = Vec::with_capacity(256);
                encode_error_response(
                    &mut buf,
                    status,
                    reason,
                    false,
                    &http_date(),
                    bridge.server_header,
                );
                sender.out.clear();
                sender.out.push_owned(buf);
                sender.abort();
                sender.set_app_head(AppHead {
                    started: true,
                    status: format!("{status} {reason}").into_bytes(),
                    status_code: status,
                    ..AppHead::default()
                });
                let _ = sender.flush_local(py);
            }
        }
    }
    let keeps = sender.keeps_alive() && body_ok && matches!(end, AppEnd::Done);
    let status = sender.status_code();
    let sent = sender.body_bytes();
    let gone = sender.client_gone;
    conn.out = sender.end();
    drop(sender);
    conn.close_after_write = !keeps;
    if gone {
        conn.out.clear();
    }
    if let Some(log) = &bridge.access_log {
        log.write(&head, &conn.peer, status, sent);
    }
    conn
}

/// Call the app and drive its iterable; `close()` is called on every path once the app
/// returned something.
fn call_and_drive(
    bridge: &Bridge,
    py: Python<'_>,
    head: &RequestHead,
    environ: Bound<'_, PyAny>,
    sr: &Py<StartResponse>,
) -> AppEnd {
    let result = match bridge.app.bind(py).call1((environ, sr.bind(py))) {
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
fn regular_file_range(py: Python<'_>, fw: &FileWrapper) -> Option<(std::fs::File, u64, u64)> {
    let f = fw.filelike.bind(py);
    let fd: i32 = f
        .call_method0(pyo3::intern!(py, "fileno"))
        .ok()?
        .extract()
        .ok()?;
    // SAFETY: an all-zero stat is a valid out-parameter; fstat fills it or fails.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd comes from the app's file object and is open; st is a valid out-pointer.
    if unsafe { libc::fstat(fd, &mut st) } != 0 || (st.st_mode & libc::S_IFMT) != libc::S_IFREG {
        return None;
    }
    let pos: u64 = match f.call_method0(pyo3::intern!(py, "tell")) {
        Ok(p) => p.extract().ok()?,
        // SAFETY: lseek on an open descriptor, no memory involved.
        Err(_) => u64::try_from(unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) }).ok()?,
    };
    let size = st.st_size as u64;
    // SAFETY: dup of an open descriptor; the result is checked and owned by the File below.
    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        return None;
    }
    // SAFETY: `dup` is a fresh descriptor that nothing else owns.
    let file = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(dup) };
    Some((file, pos.min(size), size.saturating_sub(pos)))
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
    let seq: Option<Vec<Bound<'_, PyAny>>> = if bare {
        Some(vec![result.clone()])
    } else if let Ok(l) = result.cast::<PyList>() {
        Some(l.iter().collect())
    } else if let Ok(t) = result.cast::<PyTuple>() {
        Some(t.iter().collect())
    } else {
        None
    };
    if let Some(blocks) = seq {
        let mut s = sr.inner.lock().unwrap();
        return match s.send_all(py, &blocks).and_then(|_| s.finish(py)) {
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
