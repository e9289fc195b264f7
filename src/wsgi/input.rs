//! `wsgi.input`: the request body as a file-like object that streams from the socket.
//!
//! The body is decoded (Content-Length or chunked) by the proto crate's `BodyDecoder` straight
//! from the connection's read buffer, which this object borrows for the duration of the request
//! and gives back afterwards with any pipelined bytes that followed the body. It never reads
//! past the body: for Content-Length bodies it asks the socket for at most the bytes still due.
//! Waiting for the socket happens with the GIL released, bounded by the read timeout. A body cut
//! short by the client raises `ClientDisconnected` in the app, never a short read that looks
//! like the end. `Expect: 100-continue` is answered on the first read, not before.
//!
//! `read(n)` fills one `bytes` of its final size in place, and `readinto` the caller's buffer;
//! a Content-Length body is read from the socket straight into them, and a large one ahead of
//! the app by a thread of its own (`read_ahead`), so the client keeps sending while the app
//! works.
//!
//! Progress alone does not keep a body alive ([`BodyPace`]): a client must also keep up
//! `--min-body-rate` on average after a grace period, and finish within `--body-timeout` if set,
//! or the app's read raises `TimeoutError` (and the client gets 408 if nothing was sent).

use std::os::fd::RawFd;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyTimeoutError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use sluicegate_proto::h1::response::CONTINUE_100;
use sluicegate_proto::h1::BodyDecoder;
use sluicegate_proto::ProtoError;

use super::read_ahead::{LoopEntry, Next, Pacing, ReadAhead, Until};
use crate::io::read_buf::ReadBuf;
use crate::io::stream::{read_fd, send_all_fd, wait_fd};
use crate::{BodyError, ClientDisconnected};

/// The largest the read buffer grows to while a body streams in (fewer syscalls for uploads).
const BODY_READ_BUF_MAX: usize = 256 * 1024;

/// A body that has brought this many bytes is a large upload: its socket's receive buffer is
/// raised to [`UPLOAD_RECEIVE_BUFFER`] once.
const LARGE_UPLOAD: u64 = 256 * 1024;

/// The receive buffer of a large upload's socket. The kernel sizes receive buffers by what the
/// reader takes per round trip, which on a fast link (loopback, a LAN, a proxy on the same
/// host) stays small: the client then stops sending whenever the app works on what it read
/// (hashing, parsing, writing to disk), and the upload takes the app's time plus the
/// transfer's. With room for a MiB, the client keeps sending meanwhile (S8: 64 MiB read and
/// hashed in 65 → 50 ms). It costs memory only while bytes wait in it, for connections that
/// upload, up to twice this (the kernel's bookkeeping).
const UPLOAD_RECEIVE_BUFFER: usize = 1024 * 1024;

/// A Content-Length body with at least this much still to come, once it has brought
/// [`LARGE_UPLOAD`], is read ahead of the app on a thread of its own (`read_ahead`); so is any
/// chunked body that has brought [`LARGE_UPLOAD`] (its length is unknown).
const READ_AHEAD_FROM: u64 = 1024 * 1024;

/// Room in the caller's buffer from which a Content-Length body is read from the socket
/// straight into it; less goes through the read buffer (one larger read serves several small
/// ones).
const DIRECT_READ_MIN: usize = 16 * 1024;

/// A `read(n)` of a chunked body (whose length is unknown) fills a `bytes` of `n` in place up
/// to this size, and shrinks it with one copy if the body ends first; larger ones grow a
/// buffer instead of reserving `n` up front.
const CHUNKED_IN_PLACE_MAX: usize = 1024 * 1024;

/// Why reading the body stopped for good.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyFailure {
    /// The client closed or reset before the body was complete.
    Disconnected,
    /// No bytes for the read timeout.
    TimedOut,
    /// Slower than `--min-body-rate`, or longer than `--body-timeout`.
    TooSlow,
    /// Invalid framing or too large: the answer the server should give if it still can.
    Protocol(ProtoError),
}

/// How fast a body must come (`--min-body-rate`, `--body-timeout`), as Kestrel's
/// `MinRequestBodyDataRate`: after `GRACE`, the bytes received must average at least
/// `min_rate` per second since the body began, and the whole body must be in within `total`.
/// A client sending one byte a second makes progress, and is still cut.
#[derive(Clone, Copy, Debug)]
pub struct BodyPace {
    pub min_rate: u64,
    pub total: Option<Duration>,
}

impl BodyPace {
    /// How long the rate is not judged, from the body's start (slow start, a client's pause).
    pub const GRACE: Duration = Duration::from_secs(5);

    /// When the body fails if no more bytes come, having `received` raw bytes since `started`.
    pub(super) fn deadline(&self, started: Instant, received: u64) -> Option<Instant> {
        let by_rate = (self.min_rate > 0).then(|| {
            let owed = Duration::from_secs_f64(received as f64 / self.min_rate as f64);
            started + Self::GRACE + owed
        });
        let total = self.total.map(|t| started + t);
        match (by_rate, total) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Body-reading state; moved in for the request and taken back after it.
pub struct BodyState {
    pub fd: RawFd,
    pub raw: ReadBuf,
    pub decoder: BodyDecoder,
    /// Decoded bytes not yet returned to the app: `pending[pending_pos..]`.
    pending: Vec<u8>,
    pending_pos: usize,
    /// Bytes of `100 Continue` still to send before the first socket read.
    pub continue_due: bool,
    pub continue_sent: bool,
    pub read_timeout: Duration,
    pace: BodyPace,
    started: Instant,
    /// Raw bytes read from the socket by this object (for the pace).
    read_bytes: u64,
    pub failure: Option<BodyFailure>,
    /// The reader thread of a large Content-Length body (`read_ahead`), once started, and the
    /// block taken from it that the app is reading (`ahead_block[ahead_pos..]`).
    ahead: Option<ReadAhead>,
    ahead_block: Vec<u8>,
    ahead_pos: usize,
    ahead_started: bool,
    /// The connection's entry in the loop's epoll set, if it has one (for the reader thread).
    loop_entry: Option<LoopEntry>,
}

impl BodyState {
    pub fn new(
        fd: RawFd,
        raw: ReadBuf,
        decoder: BodyDecoder,
        expect_continue: bool,
        read_timeout: Duration,
        pace: BodyPace,
        loop_entry: Option<LoopEntry>,
    ) -> BodyState {
        BodyState {
            fd,
            raw,
            decoder,
            pending: Vec::new(),
            pending_pos: 0,
            continue_due: expect_continue,
            continue_sent: false,
            read_timeout,
            pace,
            started: Instant::now(),
            read_bytes: 0,
            failure: None,
            ahead: None,
            ahead_block: Vec::new(),
            ahead_pos: 0,
            ahead_started: false,
            loop_entry,
        }
    }

    fn pending_len(&self) -> usize {
        self.pending.len() - self.pending_pos
    }

    /// Decode what the raw buffer holds into `pending`. Returns Err on a framing error.
    fn decode_buffered(&mut self) -> Result<(), ProtoError> {
        loop {
            if self.decoder.is_done() {
                return Ok(());
            }
            let step = self.decoder.decode(self.raw.filled())?;
            if step.consumed == 0 && step.data.is_empty() {
                return Ok(());
            }
            if self.pending_pos == self.pending.len() {
                self.pending.clear();
                self.pending_pos = 0;
            }
            self.pending.extend_from_slice(step.data);
            self.raw.consume(step.consumed);
        }
    }

    /// Make at least one more decoded byte available, or learn that the body is complete.
    /// Returns Ok(false) at the end of the body. Waits on the socket with the GIL released.
    fn fill(&mut self, py: Python<'_>) -> Result<bool, BodyFailure> {
        self.settle_ahead();
        loop {
            if self.pending_len() > 0 {
                return Ok(true);
            }
            if let Some(f) = self.failure {
                return Err(f);
            }
            self.decode_buffered()
                .map_err(|e| self.fail(BodyFailure::Protocol(e)))?;
            if self.pending_len() > 0 {
                return Ok(true);
            }
            if self.decoder.is_done() {
                return Ok(false);
            }
            self.read_socket(py)?;
        }
    }

    fn fail(&mut self, f: BodyFailure) -> BodyFailure {
        self.failure = Some(f);
        f
    }

    /// Read more raw bytes into the read buffer, never past the end of a Content-Length body.
    fn read_socket(&mut self, py: Python<'_>) -> Result<(), BodyFailure> {
        self.recv(py, None).map(|_| ())
    }

    /// Read what the socket has (waiting for it with the GIL released, bounded by the read
    /// timeout and the pace), into `dst` when given (the caller caps it to the body), else into
    /// the read buffer. Returns the bytes read (never 0).
    fn recv(&mut self, py: Python<'_>, dst: Option<&mut [u8]>) -> Result<usize, BodyFailure> {
        if self.continue_due {
            self.continue_due = false;
            self.continue_sent = true;
            send_all_fd(self.fd, CONTINUE_100, self.read_timeout)
                .map_err(|_| self.fail(BodyFailure::Disconnected))?;
        }
        let fd = self.fd;
        // The read timeout, or less when the pace's deadline comes first.
        let pace_deadline = self.pace.deadline(self.started, self.read_bytes);
        let cap = match self.decoder.remaining() {
            Some(left) => (left as usize).saturating_sub(self.raw.len()).max(1),
            None => usize::MAX,
        };
        let read_timeout = self.read_timeout;
        let raw = &mut self.raw;
        let mut dst = dst;
        let read_once = move |raw: &mut ReadBuf, dst: &mut Option<&mut [u8]>| {
            let into: &mut [u8] = match dst.as_deref_mut() {
                Some(d) => d,
                None => {
                    let spare = raw.spare(BODY_READ_BUF_MAX);
                    let want = spare.len().min(cap);
                    &mut spare[..want]
                }
            };
            let n = read_fd(fd, into)?;
            if dst.is_none() {
                raw.commit(n);
            }
            crate::observe::counters::BYTES_IN
                .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
            Ok::<usize, std::io::Error>(n)
        };
        // First with the interpreter held: during an upload the bytes are usually there
        // already, and copying them costs less than letting the GIL go and taking it back.
        let res = match read_once(raw, &mut dst) {
            Ok(0) => Err(BodyFailure::Disconnected),
            Ok(n) => Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                py.detach(|| -> Result<usize, BodyFailure> {
                    loop {
                        let (wait, failure) = match pace_deadline {
                            Some(d) => {
                                let left = d.saturating_duration_since(Instant::now());
                                if left < read_timeout {
                                    (left, BodyFailure::TooSlow)
                                } else {
                                    (read_timeout, BodyFailure::TimedOut)
                                }
                            }
                            None => (read_timeout, BodyFailure::TimedOut),
                        };
                        if wait.is_zero() {
                            return Err(failure);
                        }
                        match wait_fd(fd, false, wait) {
                            Ok(true) => {}
                            Ok(false) => return Err(failure),
                            Err(_) => return Err(BodyFailure::Disconnected),
                        }
                        match read_once(raw, &mut dst) {
                            Ok(0) => return Err(BodyFailure::Disconnected),
                            Ok(n) => return Ok(n),
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                            Err(_) => return Err(BodyFailure::Disconnected),
                        }
                    }
                })
            }
            Err(_) => Err(BodyFailure::Disconnected),
        };
        match res {
            Ok(n) => {
                let before = self.read_bytes;
                self.read_bytes += n as u64;
                if before < LARGE_UPLOAD && self.read_bytes >= LARGE_UPLOAD {
                    crate::io::stream::set_receive_buffer(self.fd, UPLOAD_RECEIVE_BUFFER);
                }
                Ok(n)
            }
            Err(f) => Err(self.fail(f)),
        }
    }

    /// Decoded bytes still to come, when known (a Content-Length body): what waits decoded,
    /// plus what the decoder has not seen yet.
    fn known_left(&self) -> Option<u64> {
        self.decoder
            .remaining()
            .map(|left| left + self.pending_len() as u64)
    }

    /// Stop the reader thread, if one runs, and keep what it read as decoded bytes waiting
    /// (`pending`): the ways of reading other than `read_into` (lines, draining) go on from
    /// there, through the read buffer.
    fn settle_ahead(&mut self) {
        if self.ahead.is_none() && self.ahead_pos == self.ahead_block.len() {
            return;
        }
        let (blocks, end) = match self.ahead.take() {
            Some(ahead) => ahead.finish(),
            None => (Vec::new(), None),
        };
        let current = std::mem::take(&mut self.ahead_block);
        let rest = current[self.ahead_pos..].to_vec();
        self.ahead_pos = 0;
        if self.pending_pos == self.pending.len() {
            self.pending.clear();
            self.pending_pos = 0;
        }
        for block in std::iter::once(rest).chain(blocks) {
            if let Err(e) = self.decode_block(&block) {
                self.failure = Some(BodyFailure::Protocol(e));
                return;
            }
        }
        if let Some(Err(f)) = end {
            if !self.decoder.is_done() {
                self.failure = Some(f);
            }
        }
    }

    /// Decode a block the reader thread read into `pending`; what follows the body's end (a
    /// chunked body's reader reads past it) goes back to the read buffer.
    fn decode_block(&mut self, block: &[u8]) -> Result<(), ProtoError> {
        let mut at = 0;
        while at < block.len() && !self.decoder.is_done() {
            let step = self.decoder.decode(&block[at..])?;
            self.pending.extend_from_slice(step.data);
            at += step.consumed;
        }
        if at < block.len() {
            self.raw.append(&block[at..]);
        }
        Ok(())
    }

    /// The body's decoder is done while the reader thread has run: stop it, and give what it
    /// read past the body's end (a pipelined request after a chunked body) to the read buffer.
    fn end_ahead(&mut self) {
        let rest = std::mem::take(&mut self.ahead_block);
        if self.ahead_pos < rest.len() {
            self.raw.append(&rest[self.ahead_pos..]);
        }
        self.ahead_pos = 0;
        if let Some(ahead) = self.ahead.take() {
            let (blocks, _) = ahead.finish();
            for block in blocks {
                self.raw.append(&block);
            }
        }
    }

    /// Start reading ahead when a body has shown itself large, if it has not started already
    /// (once per body): a Content-Length body with at least [`READ_AHEAD_FROM`] still to come,
    /// or a chunked body (its reader finds the end with a copy of the decoder).
    fn maybe_read_ahead(&mut self) {
        if self.ahead_started
            || self.read_bytes < LARGE_UPLOAD
            || self.continue_due
            || !self.raw.is_empty()
            || self.pending_len() > 0
            || self.decoder.is_done()
        {
            return;
        }
        let until = match self.decoder.remaining() {
            Some(left) if left < READ_AHEAD_FROM => return,
            Some(left) => Until::Bytes(left),
            None => Until::BodyEnd(Box::new(self.decoder.clone())),
        };
        self.ahead_started = true;
        self.ahead = ReadAhead::start(
            self.fd,
            until,
            Pacing {
                read_timeout: self.read_timeout,
                pace: self.pace,
                started: self.started,
                read_before: self.read_bytes,
            },
            self.loop_entry.take(),
        );
    }

    /// Decode the reader thread's next bytes into `dst` (waiting for them with the GIL
    /// released); returns how many (0 after framing only, or at the body's end).
    fn take_ahead(&mut self, py: Python<'_>, dst: &mut [u8]) -> Result<usize, BodyFailure> {
        loop {
            if self.ahead_pos < self.ahead_block.len() {
                // No more input than `dst` has room: the data a step returns is a slice of its
                // input, so it always fits (a Content-Length step returns its input as it is).
                let end = (self.ahead_pos + dst.len()).min(self.ahead_block.len());
                let step = match self.decoder.decode(&self.ahead_block[self.ahead_pos..end]) {
                    Ok(step) => step,
                    Err(e) => return Err(self.fail(BodyFailure::Protocol(e))),
                };
                let n = step.data.len();
                dst[..n].copy_from_slice(step.data);
                self.ahead_pos += step.consumed;
                if self.decoder.is_done() {
                    self.end_ahead();
                }
                return Ok(n);
            }
            let Some(ahead) = self.ahead.as_ref() else {
                return Ok(0);
            };
            match ahead.next_block() {
                Next::Block(block) => {
                    let used = std::mem::replace(&mut self.ahead_block, block);
                    ahead.give_back(used);
                    self.ahead_pos = 0;
                }
                Next::Done => {
                    self.ahead = None;
                    return Ok(0);
                }
                Next::Failed(f) => {
                    self.ahead = None;
                    return Err(self.fail(f));
                }
                Next::Empty => py.detach(|| ahead.wait()),
            }
        }
    }

    /// Fill `dst` with the body's next bytes; returns how many (fewer only where the body
    /// ends). One copy at most: decoded bytes that wait go first, then what the read buffer
    /// holds is decoded straight into `dst`; then a Content-Length body with room left of at
    /// least [`DIRECT_READ_MIN`] is read from the socket straight into `dst`, where the
    /// kernel's copy is the only one. Anything else comes through the read buffer.
    fn read_into(&mut self, py: Python<'_>, dst: &mut [u8]) -> Result<usize, BodyFailure> {
        let waiting = &self.pending[self.pending_pos..];
        let mut at = waiting.len().min(dst.len());
        dst[..at].copy_from_slice(&waiting[..at]);
        self.pending_pos += at;
        while at < dst.len() {
            if let Some(f) = self.failure {
                return Err(f);
            }
            if self.decoder.is_done() {
                break;
            }
            if !self.raw.is_empty() {
                let step = match self.decoder.decode(self.raw.filled()) {
                    Ok(step) => step,
                    Err(e) => return Err(self.fail(BodyFailure::Protocol(e))),
                };
                if step.consumed > 0 || !step.data.is_empty() {
                    let take = step.data.len().min(dst.len() - at);
                    dst[at..at + take].copy_from_slice(&step.data[..take]);
                    if take < step.data.len() {
                        // `dst` is full: the rest waits (nothing else does: it was taken first).
                        self.pending.clear();
                        self.pending_pos = 0;
                        self.pending.extend_from_slice(&step.data[take..]);
                    }
                    at += take;
                    let consumed = step.consumed;
                    self.raw.consume(consumed);
                    continue;
                }
            }
            if self.ahead.is_some() || self.ahead_pos < self.ahead_block.len() {
                // Each call makes progress: decoded bytes, framing consumed, the next block,
                // or the reader's end (the decoder is done then, or the socket is read again).
                at += self.take_ahead(py, &mut dst[at..])?;
                continue;
            }
            // Nothing buffered: read ahead, or (Content-Length) straight into `dst`.
            if self.raw.is_empty() {
                self.maybe_read_ahead();
                if self.ahead.is_some() {
                    continue;
                }
            }
            if let (Some(left), true) = (self.decoder.remaining(), self.raw.is_empty()) {
                let room = dst.len() - at;
                if room >= DIRECT_READ_MIN {
                    let want = room.min(usize::try_from(left).unwrap_or(usize::MAX));
                    let n = self.recv(py, Some(&mut dst[at..at + want]))?;
                    // The decoder counts them; a Content-Length decoder gives them back as
                    // they are, so there is nothing to copy.
                    match self.decoder.decode(&dst[at..at + n]) {
                        Ok(step) => debug_assert!(step.consumed == n && step.data.len() == n),
                        Err(e) => return Err(self.fail(BodyFailure::Protocol(e))),
                    }
                    at += n;
                    continue;
                }
            }
            self.read_socket(py)?;
        }
        Ok(at)
    }

    /// One line including its '\n' (or up to `limit` bytes, or to the end of the body).
    fn readline(&mut self, py: Python<'_>, limit: Option<usize>) -> Result<Vec<u8>, BodyFailure> {
        self.take(py, limit, true)
    }

    /// Decoded bytes up to `limit` or the end of the body, and with `to_newline`, up to and
    /// including the first '\n'. (`read(n)` does not come here: it fills its `bytes` in
    /// place, `Input::read`.)
    fn take(
        &mut self,
        py: Python<'_>,
        limit: Option<usize>,
        to_newline: bool,
    ) -> Result<Vec<u8>, BodyFailure> {
        let mut out = Vec::new();
        loop {
            let want = match limit {
                Some(l) if out.len() >= l => break,
                Some(l) => l - out.len(),
                None => usize::MAX,
            };
            if !self.fill(py)? {
                break;
            }
            let avail = &self.pending[self.pending_pos..];
            let upto = avail.len().min(want);
            if to_newline {
                if let Some(i) = memchr_nl(&avail[..upto]) {
                    out.extend_from_slice(&avail[..=i]);
                    self.pending_pos += i + 1;
                    break;
                }
            }
            out.extend_from_slice(&avail[..upto]);
            self.pending_pos += upto;
        }
        Ok(out)
    }

    /// Read and drop the rest of the body, at most `max` bytes. True when the body ended.
    pub fn drain(&mut self, py: Python<'_>, max: u64) -> bool {
        let mut dropped = 0u64;
        loop {
            if self.failure.is_some() {
                return false;
            }
            match self.fill(py) {
                Ok(false) => return true,
                Ok(true) => {
                    dropped += self.pending_len() as u64;
                    self.pending_pos = self.pending.len();
                    if dropped > max {
                        return false;
                    }
                }
                Err(_) => return false,
            }
        }
    }

    /// Everything of the body (decoded or raw) is consumed.
    pub fn complete(&self) -> bool {
        self.decoder.is_done() && self.pending_len() == 0
    }

    /// Could the rest of the body be drained after the response (at most `max` bytes), so
    /// the connection can carry another request? Decided when the response head is made, so
    /// the head says `Connection: close` when it cannot (RFC 9112 §9.6): an unread chunked
    /// body (its length is unknown), one longer than `max`, a failed one, or one the client
    /// may never send (`Expect: 100-continue` not answered).
    pub fn drainable(&self, max: u64) -> bool {
        if self.complete() {
            return true;
        }
        if self.failure.is_some() || (self.continue_due && !self.continue_sent) {
            return false;
        }
        match self.decoder.remaining() {
            Some(left) => left + self.pending_len() as u64 <= max,
            None => false,
        }
    }
}

fn memchr_nl(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

fn to_pyerr(f: BodyFailure, st: &BodyState) -> PyErr {
    match f {
        BodyFailure::Disconnected => ClientDisconnected::new_err(format!(
            "client disconnected before the request body was complete ({} bytes received)",
            st.decoder.received()
        )),
        BodyFailure::TimedOut => PyTimeoutError::new_err("timed out reading the request body"),
        BodyFailure::TooSlow => PyTimeoutError::new_err(format!(
            "the request body came too slowly (--min-body-rate {} bytes/s after {} s, \
             --body-timeout {}; {} bytes received)",
            st.pace.min_rate,
            BodyPace::GRACE.as_secs(),
            st.pace
                .total
                .map_or("off".to_string(), |t| format!("{}s", t.as_secs_f64())),
            st.decoder.received()
        )),
        BodyFailure::Protocol(e) => BodyError::new_err(format!("invalid request body: {e}")),
    }
}

/// The `wsgi.input` object. Holds the body state for the request; afterwards it is detached
/// and reads return b"" (an app that kept it cannot read the next request's bytes).
#[pyclass(module = "sluicegate._core", name = "Input", frozen)]
pub struct Input {
    state: Mutex<Option<BodyState>>,
}

impl Input {
    pub fn new(state: Option<BodyState>) -> Input {
        Input {
            state: Mutex::new(state),
        }
    }

    /// Take the body state back at the end of the request.
    pub fn detach(&self) -> Option<BodyState> {
        self.state.lock().unwrap().take()
    }

    /// See `BodyState::drainable`; true once detached or for a body-less request.
    pub fn drainable(&self, max: u64) -> bool {
        match self.state.try_lock() {
            Ok(g) => g.as_ref().is_none_or(|st| st.drainable(max)),
            // Another thread is reading it right now: not finished, so do not promise.
            Err(_) => false,
        }
    }

    fn with_state<T>(
        &self,
        py: Python<'_>,
        empty: T,
        f: impl FnOnce(&mut BodyState, Python<'_>) -> Result<T, BodyFailure>,
    ) -> PyResult<T> {
        // The lock is held while waiting on the socket with the GIL released; only a second
        // thread reading the same input concurrently would wait on it (it never holds the GIL
        // while waiting for this lock: see `lock_released`).
        let mut guard = lock_released(py, &self.state);
        match guard.as_mut() {
            None => Ok(empty),
            Some(st) => f(st, py).map_err(|e| to_pyerr(e, st)),
        }
    }
}

/// Lock a mutex without holding the GIL while waiting for it (avoids a lock-order deadlock with
/// a thread that holds the mutex and waits for the GIL).
fn lock_released<'a, T: Send>(py: Python<'_>, m: &'a Mutex<T>) -> std::sync::MutexGuard<'a, T> {
    loop {
        match m.try_lock() {
            Ok(g) => return g,
            Err(std::sync::TryLockError::Poisoned(p)) => return p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => py.detach(std::thread::yield_now),
        }
    }
}

/// `read()` (or a large `read(n)`) of a chunked body, whose length nobody knows: the body is
/// gathered in blocks of [`GATHER_BLOCK`], then copied into one `bytes` of its size, each block
/// freed once copied. A buffer that doubled would hold up to twice the body and then be copied
/// whole; this peaks at the body and one block (the new `bytes`'s pages only become resident
/// as they are written).
fn read_unknown_length<'py>(
    py: Python<'py>,
    st: &mut BodyState,
    limit: Option<usize>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    let mut total = 0usize;
    loop {
        let want = limit.map_or(GATHER_BLOCK, |l| (l - total).min(GATHER_BLOCK));
        if want == 0 {
            break;
        }
        let mut block = vec![0u8; want];
        let got = st.read_into(py, &mut block).map_err(|e| to_pyerr(e, st))?;
        block.truncate(got);
        total += got;
        if got > 0 {
            blocks.push(block);
        }
        if got < want {
            break;
        }
    }
    let (bytes, _) = new_bytes_filled(py, total, |buf| {
        let mut at = 0;
        for block in blocks.drain(..) {
            buf[at..at + block.len()].copy_from_slice(&block);
            at += block.len();
        }
        Ok(at)
    })
    .map_err(|e| e.into_pyerr(st))?;
    Ok(bytes)
}

/// See [`read_unknown_length`].
const GATHER_BLOCK: usize = 1024 * 1024;

/// Why filling a new `bytes` failed.
enum FillError {
    NoMemory(PyErr),
    Body(BodyFailure),
}

impl FillError {
    fn into_pyerr(self, st: &BodyState) -> PyErr {
        match self {
            FillError::NoMemory(e) => e,
            FillError::Body(f) => to_pyerr(f, st),
        }
    }
}

/// A new `bytes` of `size`, filled by `fill` (which returns how many bytes it wrote, at most
/// `size`; the rest stays zero). Unlike `PyBytes::new_with`, the buffer is not zeroed first:
/// for a 64 MiB upload that pass alone costs milliseconds.
fn new_bytes_filled<'py>(
    py: Python<'py>,
    size: usize,
    fill: impl FnOnce(&mut [u8]) -> Result<usize, BodyFailure>,
) -> Result<(Bound<'py, PyBytes>, usize), FillError> {
    let len = pyo3::ffi::Py_ssize_t::try_from(size)
        .map_err(|_| FillError::NoMemory(pyo3::exceptions::PyMemoryError::new_err(size)))?;
    // SAFETY: a null source asks CPython for an uninitialised bytes object of `len` bytes; the
    // result is a new reference (or null with an exception set, taken below).
    let raw = unsafe { pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), len) };
    if raw.is_null() {
        return Err(FillError::NoMemory(PyErr::fetch(py)));
    }
    // SAFETY: `raw` is a new, owned, non-null reference to a bytes object.
    let bytes = unsafe { Bound::from_owned_ptr(py, raw).cast_into_unchecked::<PyBytes>() };
    // SAFETY: the object's buffer holds `size` bytes and nothing else can reach the object yet
    // (it is only ours until returned), so writing to it, even with the GIL released, races
    // with nobody.
    let buf = unsafe {
        std::slice::from_raw_parts_mut(pyo3::ffi::PyBytes_AsString(raw) as *mut u8, size)
    };
    match fill(buf) {
        Ok(got) => {
            // Whatever `fill` left unwritten must not show old heap contents.
            buf[got..].fill(0);
            Ok((bytes, got))
        }
        Err(f) => Err(FillError::Body(f)),
    }
}

impl Input {
    #[cfg(not(feature = "abi3"))]
    fn fill_buffer(&self, py: Python<'_>, dst: &mut [u8]) -> PyResult<usize> {
        let mut guard = lock_released(py, &self.state);
        match guard.as_mut() {
            None => Ok(0),
            Some(st) => st.read_into(py, dst).map_err(|e| to_pyerr(e, st)),
        }
    }
}

fn size_arg(size: Option<isize>) -> Option<usize> {
    match size {
        Some(n) if n >= 0 => Some(n as usize),
        _ => None,
    }
}

#[pymethods]
impl Input {
    /// `read(n)` makes one `bytes` of its final size and fills it in place (see
    /// [`BodyState::read_into`]); only `read()` of a chunked body, whose size nobody knows,
    /// grows a buffer first.
    #[pyo3(signature = (size=None))]
    fn read<'py>(&self, py: Python<'py>, size: Option<isize>) -> PyResult<Bound<'py, PyBytes>> {
        let limit = size_arg(size);
        let mut guard = lock_released(py, &self.state);
        let Some(st) = guard.as_mut() else {
            return Ok(PyBytes::new(py, b""));
        };
        let size = match (limit, st.known_left()) {
            (Some(l), Some(left)) => Some(l.min(usize::try_from(left).unwrap_or(usize::MAX))),
            (None, Some(left)) => Some(usize::try_from(left).unwrap_or(usize::MAX)),
            (Some(l), None) if l <= CHUNKED_IN_PLACE_MAX => Some(l),
            _ => None,
        };
        let Some(size) = size else {
            return read_unknown_length(py, st, limit);
        };
        let (bytes, got) = new_bytes_filled(py, size, |buf| st.read_into(py, buf))
            .map_err(|e| e.into_pyerr(st))?;
        if got == size {
            Ok(bytes)
        } else {
            // The body ended first (a chunked body): the bytes read, in a `bytes` of their
            // size.
            Ok(PyBytes::new(py, &bytes.as_bytes()[..got]))
        }
    }

    /// `readinto(b)`: up to `len(b)` bytes of the body written straight into the caller's
    /// writable, C-contiguous buffer (fewer only where the body ends); returns how many. The
    /// buffer stays exported while it is written, so the app cannot resize it meanwhile (a
    /// `bytearray` raises `BufferError`). The abi3 build's limited API has no buffer protocol
    /// before 3.11: there the bytes come by one more copy.
    fn readinto(&self, py: Python<'_>, b: &Bound<'_, PyAny>) -> PyResult<usize> {
        #[cfg(not(feature = "abi3"))]
        {
            let view = pyo3::buffer::PyBuffer::<u8>::get(b)?;
            if view.readonly() || !view.is_c_contiguous() {
                return Err(pyo3::exceptions::PyTypeError::new_err(
                    "readinto() needs a writable, contiguous buffer",
                ));
            }
            // SAFETY: the buffer is exported (and so cannot be resized or freed) while `view`
            // lives, writable and contiguous, of `len_bytes()` bytes.
            let dst = unsafe {
                std::slice::from_raw_parts_mut(view.buf_ptr() as *mut u8, view.len_bytes())
            };
            self.fill_buffer(py, dst)
        }
        #[cfg(feature = "abi3")]
        {
            // memoryview(b).cast("B")[:n] = data: any writable buffer, counted in bytes (a
            // read-only one raises TypeError on the assignment).
            let view = pyo3::types::PyMemoryView::from(b)?.call_method1("cast", ("B",))?;
            let size = view.len()?;
            let data = self.read(py, Some(size as isize))?;
            let n = data.as_bytes().len();
            view.set_item(pyo3::types::PySlice::new(py, 0, n as isize, 1), data)?;
            Ok(n)
        }
    }

    #[pyo3(signature = (size=None))]
    fn readline<'py>(&self, py: Python<'py>, size: Option<isize>) -> PyResult<Bound<'py, PyBytes>> {
        let v = self.with_state(py, Vec::new(), |st, py| st.readline(py, size_arg(size)))?;
        Ok(PyBytes::new(py, &v))
    }

    #[pyo3(signature = (hint=None))]
    fn readlines<'py>(&self, py: Python<'py>, hint: Option<isize>) -> PyResult<Bound<'py, PyList>> {
        let hint = size_arg(hint).filter(|&h| h > 0);
        let lines = PyList::empty(py);
        let mut total = 0usize;
        loop {
            let line = self.readline(py, None)?;
            let n = line.as_bytes().len();
            if n == 0 {
                break;
            }
            lines.append(line)?;
            total += n;
            if hint.is_some_and(|h| total >= h) {
                break;
            }
        }
        Ok(lines)
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let line = self.readline(py, None)?;
        Ok(if line.as_bytes().is_empty() {
            None
        } else {
            Some(line)
        })
    }

    fn readable(&self) -> bool {
        true
    }

    fn close(&self) {}

    #[getter]
    fn closed(&self) -> bool {
        false
    }

    fn fileno(&self) -> PyResult<i32> {
        Err(PyValueError::new_err("wsgi.input has no file descriptor"))
    }
}
