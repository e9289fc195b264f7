//! What `wsgi.input` reads from, whatever the protocol: the [`BodySource`] trait, and
//! [`BodyEnd`], what a body says when its call is over. One `wsgi.input` type
//! (`wsgi::input::Input`) serves every protocol over it: HTTP/1.1's body reader
//! (`wsgi::body::BodyState`, over the connection's transport) and an HTTP/2 or HTTP/3
//! stream's ([`StreamInput`], over `io::streams::reply::StreamIn`) implement it; a protocol more is one
//! implementation more. Each implementation keeps its protocol's rules (`Expect:
//! 100-continue` answered at the first read, `--limit-body`, `--read-timeout`) and waits for
//! bytes with the GIL released.

use std::io;
use std::time::Duration;

use pyo3::exceptions::PyTimeoutError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::errors::{BodyError, ClientDisconnected};
use crate::io::call_io::CallBody;
use crate::io::read_ahead::BodyFailure;
use crate::io::read_buf::ReadBuf;
use crate::io::streams::reply::{body_protocol_error, StreamIn};

/// The request body of one call, as `wsgi.input` reads it.
pub trait BodySource: Send {
    /// Fill `dst` with the body's next bytes; returns how many (fewer only where the body
    /// ends). A failure stays: later reads fail the same way.
    fn read_into(&mut self, py: Python<'_>, dst: &mut [u8]) -> Result<usize, BodyFailure>;

    /// The body's next `n` bytes as one `bytes` made already, when the source has one (the
    /// `bytes` an HTTP/1.1 body's reader thread filled, `wsgi::body`); None: fill one with
    /// [`BodySource::read_into`].
    fn take_whole<'py>(
        &mut self,
        _py: Python<'py>,
        _n: usize,
    ) -> Result<Option<Bound<'py, PyBytes>>, BodyFailure> {
        Ok(None)
    }

    /// One line including its '\n' (or up to `limit` bytes, or to the end of the body).
    fn readline(&mut self, py: Python<'_>, limit: Option<usize>) -> Result<Vec<u8>, BodyFailure>;

    /// Decoded bytes still to come, when known (`read(n)` then makes its `bytes` of the
    /// final size at once).
    fn known_left(&self) -> Option<u64>;

    /// Could the rest of the body be let go after the response (at most `max` bytes read and
    /// dropped) without closing the connection? Asked when the response head is made.
    fn drainable(&self, max: u64) -> bool;

    /// The exception the app sees for `f`.
    fn to_pyerr(&self, f: BodyFailure) -> PyErr;

    /// The call is over: the body is let go (an app that kept `wsgi.input` reads `b""`), after
    /// at most `max_drain` bytes of it are read and dropped where the connection needs it.
    fn end(self: Box<Self>, py: Python<'_>, max_drain: u64) -> BodyEnd;
}

/// How a request body ended, for the answer and the connection.
pub struct BodyEnd {
    /// All of it was read (or dropped): the connection can carry another request.
    pub consumed: bool,
    /// Why it failed, if it did (the answer to a call that sent nothing depends on it).
    pub failure: Option<BodyFailure>,
    /// The connection's read buffer, with what followed the body (HTTP/1.1 pipelining).
    pub buf: Option<ReadBuf>,
}

/// Most bytes asked of an HTTP/2 stream per wait when a line is read.
const LINE_STEP: usize = 64 * 1024;

/// An HTTP/2 stream's body, as `wsgi.input` reads it: the stream's DATA (`StreamBody`), what
/// a line read left over, and the failure once there is one.
pub struct StreamInput {
    body: CallBody,
    spill: Vec<u8>,
    timeout: Duration,
    failure: Option<BodyFailure>,
}

impl StreamInput {
    /// `timeout`: `--read-timeout`, per wait for a DATA frame.
    pub fn new(body: CallBody, timeout: Duration) -> StreamInput {
        StreamInput {
            body,
            spill: Vec::new(),
            timeout,
            failure: None,
        }
    }

    /// The stream's next bytes, at most `want` (empty at the end of the body), waiting
    /// without the GIL.
    fn next(&mut self, py: Python<'_>, want: usize) -> Result<bytes::Bytes, BodyFailure> {
        if let Some(f) = self.failure {
            return Err(f);
        }
        let (body, timeout) = (&mut self.body, self.timeout);
        py.detach(|| body.read(want.max(1), timeout)).map_err(|e| {
            let f = match (e.kind(), body_protocol_error(&e)) {
                (_, Some(p)) => BodyFailure::Protocol(p),
                (io::ErrorKind::TimedOut, _) => BodyFailure::TimedOut,
                _ => BodyFailure::Disconnected,
            };
            self.failure = Some(f);
            f
        })
    }
}

impl BodySource for StreamInput {
    fn read_into(&mut self, py: Python<'_>, dst: &mut [u8]) -> Result<usize, BodyFailure> {
        let mut at = self.spill.len().min(dst.len());
        dst[..at].copy_from_slice(&self.spill[..at]);
        self.spill.drain(..at);
        while at < dst.len() {
            let got = self.next(py, dst.len() - at)?;
            if got.is_empty() {
                break;
            }
            dst[at..at + got.len()].copy_from_slice(&got);
            at += got.len();
        }
        Ok(at)
    }

    fn readline(&mut self, py: Python<'_>, limit: Option<usize>) -> Result<Vec<u8>, BodyFailure> {
        let mut scanned = 0;
        let end = loop {
            if let Some(i) = self.spill[scanned..].iter().position(|&b| b == b'\n') {
                break scanned + i + 1;
            }
            scanned = self.spill.len();
            if limit.is_some_and(|n| scanned >= n) {
                break scanned;
            }
            let got = self.next(py, LINE_STEP)?;
            if got.is_empty() {
                break scanned;
            }
            self.spill.extend_from_slice(&got);
        };
        let n = limit.unwrap_or(usize::MAX).min(end);
        Ok(self.spill.drain(..n).collect())
    }

    fn known_left(&self) -> Option<u64> {
        None
    }

    /// A stream's unread body holds no connection up: its receiving half is dropped.
    fn drainable(&self, _max: u64) -> bool {
        true
    }

    /// As on HTTP/1.1 (`wsgi::body::to_pyerr`): a stall past `--read-timeout` is
    /// `TimeoutError`, a client gone is `ClientDisconnected`.
    fn to_pyerr(&self, f: BodyFailure) -> PyErr {
        match f {
            BodyFailure::TimedOut | BodyFailure::TooSlow => {
                PyTimeoutError::new_err("timed out reading the request body (HTTP/2 stream)")
            }
            BodyFailure::Disconnected => ClientDisconnected::new_err(
                "client disconnected before the request body was complete (HTTP/2 stream)",
            ),
            BodyFailure::Protocol(e) => {
                BodyError::new_err(format!("invalid request body: {e} (HTTP/2 stream)"))
            }
        }
    }

    /// The stream's receiving half goes: a client still sending gets RST_STREAM once the
    /// answer is out (the reply still holds the stream).
    fn end(self: Box<Self>, _py: Python<'_>, _max_drain: u64) -> BodyEnd {
        BodyEnd {
            consumed: true,
            failure: self.failure,
            buf: None,
        }
    }
}
