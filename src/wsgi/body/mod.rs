//! A request body as the bridge reads it ([`BodyState`]): decoded (Content-Length or chunked)
//! by the proto crate's `BodyDecoder` straight from the connection's read buffer, which it
//! borrows for the duration of the request and gives back afterwards with any pipelined bytes
//! that followed the body. It never reads past the body: for Content-Length bodies it asks the
//! connection for at most the bytes still due. Waiting for bytes happens with the GIL released,
//! bounded by the read timeout and the body's pace ([`BodyPace`]: `--min-body-rate` on average
//! after a grace period, `--body-timeout`). `Expect: 100-continue` is answered on the first
//! read, not before. Every byte comes through the I/O layer (`io::transport`, and
//! `io::read_ahead` for a large body: the read-ahead hand-over is `ahead.rs`, the `bytes` it
//! lends the reader `lent.rs`).
//!
//! The Python object over it, `wsgi.input`, is `wsgi::input`.

mod ahead;
mod lent;

use std::time::{Duration, Instant};

use pyo3::exceptions::PyTimeoutError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use sluicegate_proto::h1::response::CONTINUE_100;
use sluicegate_proto::h1::BodyDecoder;
use sluicegate_proto::ProtoError;

use super::body_source::{BodyEnd, BodySource};
use super::errors::{BodyError, ClientDisconnected};
use crate::config::BodyPace;
use crate::io::read_ahead::{Block, BodyFailure, LoopEntry, ReadAhead};
use crate::io::read_buf::ReadBuf;
use crate::io::transport::Transport;
use lent::LentBytes;

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

/// Room in the caller's buffer from which a Content-Length body is read from the socket
/// straight into it; less goes through the read buffer (one larger read serves several small
/// ones).
const DIRECT_READ_MIN: usize = 16 * 1024;

/// Body-reading state; moved in for the request and taken back after it.
pub struct BodyState {
    /// The request's connection, read through the I/O layer.
    pub transport: Transport,
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
    /// The reader thread of a large Content-Length body (`io::read_ahead`), once started, and the
    /// block taken from it that the app is reading (`ahead_block.data()[ahead_pos..]`).
    ahead: Option<ReadAhead<LentBytes>>,
    ahead_block: Block<LentBytes>,
    ahead_pos: usize,
    ahead_started: bool,
    /// The `bytes` lent to the reader thread (`ahead.rs`): their size (the app's `read(n)`),
    /// how many of that size are lent and not yet returned to the app, and what goes to the
    /// reader with the next block asked of it (`io::read_ahead::Lend`).
    lend_size: usize,
    lent_out: usize,
    to_lend: Vec<LentBytes>,
    lend_left: u64,
    lend_replace: bool,
    /// The connection's entry in the loop's epoll set, if it has one (for the reader thread).
    loop_entry: Option<LoopEntry>,
}

impl BodyState {
    pub fn new(
        transport: Transport,
        raw: ReadBuf,
        decoder: BodyDecoder,
        expect_continue: bool,
        read_timeout: Duration,
        pace: BodyPace,
        loop_entry: Option<LoopEntry>,
    ) -> BodyState {
        BodyState {
            transport,
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
            ahead_block: Block::default(),
            ahead_pos: 0,
            lend_size: 0,
            lent_out: 0,
            to_lend: Vec::new(),
            lend_left: 0,
            lend_replace: false,
            ahead_started: false,
            loop_entry,
        }
    }

    pub(super) fn pending_len(&self) -> usize {
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

    pub(super) fn fail(&mut self, f: BodyFailure) -> BodyFailure {
        self.failure = Some(f);
        f
    }

    /// Read more raw bytes into the read buffer, never past the end of a Content-Length body.
    fn read_socket(&mut self, py: Python<'_>) -> Result<(), BodyFailure> {
        self.recv(py, None).map(|_| ())
    }

    /// Read what the connection has (through `io::transport`, waiting for it with the GIL
    /// released, bounded by the read timeout and the pace), into `dst` when given (the caller
    /// caps it to the body), else into the read buffer. Returns the bytes read (never 0).
    fn recv(&mut self, py: Python<'_>, dst: Option<&mut [u8]>) -> Result<usize, BodyFailure> {
        if self.continue_due {
            self.continue_due = false;
            self.continue_sent = true;
            self.transport
                .send_all(CONTINUE_100, self.read_timeout)
                .map_err(|_| self.fail(BodyFailure::Disconnected))?;
        }
        let transport = &self.transport;
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
            let n = transport.read_some(into)?;
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
                        match transport.wait_readable(wait) {
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
                    self.transport.raise_receive_buffer(UPLOAD_RECEIVE_BUFFER);
                }
                Ok(n)
            }
            Err(f) => Err(self.fail(f)),
        }
    }

    /// Decoded bytes still to come, when known (a Content-Length body): what waits decoded,
    /// plus what the decoder has not seen yet.
    pub(crate) fn known_left(&self) -> Option<u64> {
        self.decoder
            .remaining()
            .map(|left| left + self.pending_len() as u64)
    }

    /// Fill `dst` with the body's next bytes; returns how many (fewer only where the body
    /// ends). One copy at most: decoded bytes that wait go first, then what the read buffer
    /// holds is decoded straight into `dst`; then a Content-Length body with room left of at
    /// least [`DIRECT_READ_MIN`] is read from the socket straight into `dst`, where the
    /// kernel's copy is the only one. Anything else comes through the read buffer.
    pub(crate) fn read_into(
        &mut self,
        py: Python<'_>,
        dst: &mut [u8],
    ) -> Result<usize, BodyFailure> {
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
            if self.ahead.is_some() || self.ahead_pos < self.ahead_block.len {
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
    pub(crate) fn readline(
        &mut self,
        py: Python<'_>,
        limit: Option<usize>,
    ) -> Result<Vec<u8>, BodyFailure> {
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

impl BodySource for BodyState {
    fn read_into(&mut self, py: Python<'_>, dst: &mut [u8]) -> Result<usize, BodyFailure> {
        BodyState::read_into(self, py, dst)
    }

    fn take_whole<'py>(
        &mut self,
        py: Python<'py>,
        n: usize,
    ) -> Result<Option<Bound<'py, PyBytes>>, BodyFailure> {
        BodyState::take_whole(self, py, n)
    }

    fn readline(&mut self, py: Python<'_>, limit: Option<usize>) -> Result<Vec<u8>, BodyFailure> {
        BodyState::readline(self, py, limit)
    }

    fn known_left(&self) -> Option<u64> {
        BodyState::known_left(self)
    }

    fn drainable(&self, max: u64) -> bool {
        BodyState::drainable(self, max)
    }

    fn to_pyerr(&self, f: BodyFailure) -> PyErr {
        to_pyerr(f, self)
    }

    /// The rest of the body is drained (at most `max_drain` bytes) unless it failed or the
    /// client was never told to send it (`100 Continue` not sent); the read buffer goes back
    /// to the connection with any pipelined bytes that followed.
    fn end(mut self: Box<Self>, py: Python<'_>, max_drain: u64) -> BodyEnd {
        // The failure the app met (a drain's own does not change the answer).
        let failure = self.failure;
        let mut consumed = true;
        if !self.complete() {
            consumed = if self.failure.is_some() || (self.continue_due && !self.continue_sent) {
                false
            } else {
                self.drain(py, max_drain)
            };
        }
        BodyEnd {
            consumed,
            failure,
            buf: Some(self.raw),
        }
    }
}

pub(crate) fn to_pyerr(f: BodyFailure, st: &BodyState) -> PyErr {
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
