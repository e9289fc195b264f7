//! The response of one call as the driver of the app's iterable (`iterable::drive`) writes
//! it, whatever the protocol: the [`Reply`] trait. HTTP/1.1's `Sender` (`wsgi/sender/`)
//! implements it over the connection's output queue, an HTTP/2 or HTTP/3 stream's `Response`
//! (`wsgi/streams/response.rs`) over the stream's `io::streams::reply::StreamOut`; a protocol more is one
//! implementation more. The driver is generic over it, so each protocol's calls are its own
//! code, with no dispatch per block.
//!
//! The same trait is what `start_response`, `write()` and `wsgi.early_hints` act on (the one
//! `start_response::StartResponse`): whether the head was started or sent, the checked head
//! to record, and a `103 Early Hints` to send. The app's status and headers reach the reply
//! already checked (`app_head`); each implementation frames the body its protocol's way (Content-Length or chunks, DATA frames),
//! never past a declared Content-Length, and waits for room with the GIL released.

use pyo3::prelude::*;

use super::app_head::AppHead;
use super::body_block::SendError;
use crate::io::file_body::RegularFile;

/// Why early hints were refused: the app must hear of it.
pub enum HintsRefused {
    /// `start_response` was called already: the final head may be on its way.
    AfterStart,
    /// The request is over.
    Finished,
}

/// The response of one call, as the iterable's driver writes it.
pub trait Reply {
    /// A body known up front (a list, a tuple, bare bytes): head and every block, its
    /// length the blocks' total unless the app declared one.
    fn send_all(&mut self, py: Python<'_>, blocks: &[Bound<'_, PyAny>]) -> Result<(), SendError>;

    /// One block the app yielded (or gave to `write()`), sent now; empty ones send nothing.
    fn send_block(&mut self, py: Python<'_>, block: &Bound<'_, PyAny>) -> Result<(), SendError>;

    /// Bytes the server read itself (a file wrapper over something not a regular file).
    fn send_copy(&mut self, py: Python<'_>, data: &[u8]) -> Result<(), SendError>;

    /// A regular file from `pos` to its end (a file wrapper; the descriptor is still the app's
    /// and must not be kept past the call: `RegularFile::range_from` makes one that may); the
    /// file's length is the body's unless the app declared one.
    fn send_file(&mut self, py: Python<'_>, file: &RegularFile, pos: u64) -> Result<(), SendError>;

    /// The body is over (the head goes now if nothing was sent). After `send_all` or
    /// `send_file` it adds nothing.
    fn finish(&mut self, py: Python<'_>) -> Result<(), SendError>;

    /// start_response was called (its head recorded).
    fn app_started(&self) -> bool;

    /// The head left: too late for start_response to change it.
    fn head_sent(&self) -> bool;

    /// `--limit-response-headers`: how many headers the app may give.
    fn max_app_headers(&self) -> usize;

    /// Storage for the next head's bytes (a kept one, or new).
    fn head_buffer(&mut self) -> Vec<u8> {
        Vec::new()
    }

    /// Record the app's checked status and headers (start_response).
    fn set_app_head(&mut self, head: AppHead);

    /// `wsgi.early_hints`: send `hints` as a `103 Early Hints` now, or say why not. Not
    /// sending (an HTTP/1.0 client, a client gone, `--timeout` answered) is no error.
    fn send_early_hints(&mut self, py: Python<'_>, hints: &AppHead) -> Result<(), HintsRefused>;
}

/// HTTP/1.1: the request's `Sender`.
impl Reply for super::sender::Sender {
    #[inline]
    fn send_all(&mut self, py: Python<'_>, blocks: &[Bound<'_, PyAny>]) -> Result<(), SendError> {
        Self::send_all(self, py, blocks)
    }

    #[inline]
    fn send_block(&mut self, py: Python<'_>, block: &Bound<'_, PyAny>) -> Result<(), SendError> {
        Self::send_block(self, py, block)
    }

    #[inline]
    fn send_copy(&mut self, py: Python<'_>, data: &[u8]) -> Result<(), SendError> {
        Self::send_copy(self, py, data)
    }

    #[inline]
    fn send_file(&mut self, py: Python<'_>, file: &RegularFile, pos: u64) -> Result<(), SendError> {
        Self::send_file(self, py, file, pos)
    }

    #[inline]
    fn finish(&mut self, py: Python<'_>) -> Result<(), SendError> {
        Self::finish(self, py)
    }

    #[inline]
    fn app_started(&self) -> bool {
        self.app_head().started
    }

    #[inline]
    fn head_sent(&self) -> bool {
        self.headers_sent()
    }

    #[inline]
    fn max_app_headers(&self) -> usize {
        Self::max_app_headers(self)
    }

    #[inline]
    fn head_buffer(&mut self) -> Vec<u8> {
        Self::head_buffer(self)
    }

    #[inline]
    fn set_app_head(&mut self, head: AppHead) {
        Self::set_app_head(self, head)
    }

    #[inline]
    fn send_early_hints(&mut self, py: Python<'_>, hints: &AppHead) -> Result<(), HintsRefused> {
        Self::send_early_hints(self, py, hints)
    }
}
