//! Request body decoding (Content-Length and chunked). Zero-copy: data comes back as slices of
//! the caller's input. The decoder never consumes a byte past the end of the body, so pipelined
//! requests that follow stay in the caller's buffer.

use crate::{BodyFraming, ProtoError};

/// One step of decoding.
#[derive(Debug, PartialEq, Eq)]
pub struct DecodeStep<'a> {
    /// Bytes of `input` consumed by this step (framing and data). Always <= input.len().
    pub consumed: usize,
    /// Body data found in this step (a slice of input; may be empty).
    pub data: &'a [u8],
    /// The body is complete (for chunked: last chunk and trailers consumed).
    pub done: bool,
}

/// Decodes one request body.
#[derive(Debug, Clone)]
pub struct BodyDecoder {
    _todo: (),
}

impl BodyDecoder {
    /// `max_body` is `Limits::max_body`: chunked bodies that grow past it fail with 413.
    /// `max_trailer_bytes` bounds the trailer section (use `Limits::max_header_bytes`).
    pub fn new(framing: BodyFraming, max_body: u64, max_trailer_bytes: usize) -> Self {
        let _ = (framing, max_body, max_trailer_bytes);
        todo!()
    }

    /// Decode from `input`. Call repeatedly, advancing input by `consumed`, until `done`, or
    /// until `consumed == 0 && data.is_empty()` (more input needed). Chunk extensions and
    /// trailers are accepted and discarded. Errors (all 400, or 413 past max_body): invalid chunk
    /// size (non-hex, overflow, `5_0`, empty), missing CRLF after chunk data, bare LF, control
    /// bytes in extensions/trailers.
    pub fn decode<'a>(&mut self, input: &'a [u8]) -> Result<DecodeStep<'a>, ProtoError> {
        let _ = input;
        todo!()
    }

    /// The body is complete.
    pub fn is_done(&self) -> bool {
        todo!()
    }

    /// For Content-Length bodies, the number of body bytes still to come; `None` for chunked.
    /// The I/O layer reads at most this many bytes so it never reads past the body.
    pub fn remaining(&self) -> Option<u64> {
        todo!()
    }

    /// Body bytes delivered so far.
    pub fn received(&self) -> u64 {
        todo!()
    }
}
