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

use crate::io::read_buf::ReadBuf;
use crate::io::stream::{read_fd, send_all_fd, wait_fd};
use crate::{BodyError, ClientDisconnected};

/// The largest the read buffer grows to while a body streams in (fewer syscalls for uploads).
const BODY_READ_BUF_MAX: usize = 256 * 1024;

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
    fn deadline(&self, started: Instant, received: u64) -> Option<Instant> {
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
}

impl BodyState {
    pub fn new(
        fd: RawFd,
        raw: ReadBuf,
        decoder: BodyDecoder,
        expect_continue: bool,
        read_timeout: Duration,
        pace: BodyPace,
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

    /// Read more raw bytes, never past the end of a Content-Length body.
    fn read_socket(&mut self, py: Python<'_>) -> Result<(), BodyFailure> {
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
        let res = py.detach(|| -> Result<usize, BodyFailure> {
            loop {
                let spare = raw.spare(BODY_READ_BUF_MAX);
                let want = spare.len().min(cap);
                let e = match read_fd(fd, &mut spare[..want]) {
                    Ok(0) => return Err(BodyFailure::Disconnected),
                    Ok(n) => {
                        raw.commit(n);
                        crate::metrics::BYTES_IN
                            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
                        return Ok(n);
                    }
                    Err(e) => e,
                };
                match e.kind() {
                    std::io::ErrorKind::WouldBlock => {
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
                            Ok(true) => continue,
                            Ok(false) => return Err(failure),
                            Err(_) => return Err(BodyFailure::Disconnected),
                        }
                    }
                    _ => return Err(BodyFailure::Disconnected),
                }
            }
        });
        match res {
            Ok(n) => {
                self.read_bytes += n as u64;
                Ok(())
            }
            Err(f) => Err(self.fail(f)),
        }
    }

    /// Up to `limit` decoded bytes (None = to the end of the body).
    fn read(&mut self, py: Python<'_>, limit: Option<usize>) -> Result<Vec<u8>, BodyFailure> {
        // read(n) returns n bytes unless the body ends first (apps such as multipart parsers
        // rely on it), so `take` keeps going until then.
        self.take(py, limit, false)
    }

    /// One line including its '\n' (or up to `limit` bytes, or to the end of the body).
    fn readline(&mut self, py: Python<'_>, limit: Option<usize>) -> Result<Vec<u8>, BodyFailure> {
        self.take(py, limit, true)
    }

    /// Decoded bytes up to `limit` or the end of the body, and with `to_newline`, up to and
    /// including the first '\n'.
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

fn size_arg(size: Option<isize>) -> Option<usize> {
    match size {
        Some(n) if n >= 0 => Some(n as usize),
        _ => None,
    }
}

#[pymethods]
impl Input {
    #[pyo3(signature = (size=None))]
    fn read<'py>(&self, py: Python<'py>, size: Option<isize>) -> PyResult<Bound<'py, PyBytes>> {
        let v = self.with_state(py, Vec::new(), |st, py| st.read(py, size_arg(size)))?;
        Ok(PyBytes::new(py, &v))
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
