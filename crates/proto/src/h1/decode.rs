//! Request body decoding (Content-Length and chunked). Zero-copy: data comes back as slices of
//! the caller's input. The decoder never consumes a byte past the end of the body, so pipelined
//! requests that follow stay in the caller's buffer.
//!
//! Chunk framing (size lines, extensions, CRLFs, trailers) is parsed one byte at a time by a
//! state machine that lives in the decoder, so input may be split at any byte: every framing
//! byte handed in is consumed, and the caller never has to keep a partial line around. Framing
//! is small next to data (a few bytes per chunk); data is never looked at, only sliced.
//! Strictness matters here for the same reason as in the head parser: a proxy that reads chunk
//! framing differently than we do is how a request gets smuggled inside another one's body.

use crate::limits::DEFAULT_MAX_HEADERS;
use crate::token::{hex_val, is_field_value_byte, is_tchar};
use crate::{BodyFraming, ProtoError};

/// Longest chunk size line (size and extensions, without CRLF) we accept. Real clients send a
/// few hex digits; this only bounds a client that streams an endless extension. Not an option.
pub const MAX_CHUNK_SIZE_LINE: usize = 4 * 1024;

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

/// Where in the body the decoder is. The `Sz*`/`Ext*` states walk RFC 9112 §7.1's
/// `chunk-size [ chunk-ext ] CRLF` with `chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS value ] )`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Content-Length body: bytes still to come.
    Length(u64),
    /// Hex digits of the chunk size (none yet when the line starts).
    SzDigits,
    /// Whitespace after the size or an extension value: only more whitespace or ';' may follow.
    SzBws,
    /// After ';': whitespace, then an extension name.
    ExtNameStart,
    ExtName,
    /// Whitespace after an extension name: '=' or ';' must follow.
    ExtNameBws,
    /// After '=': whitespace, then a token or a quoted string.
    ExtValueStart,
    ExtValueToken,
    ExtQuoted,
    ExtQuotedEscape,
    ExtAfterQuote,
    /// CR of the size line seen; LF must follow.
    SzLf,
    /// Chunk data still to come.
    Data(u64),
    /// CRLF after chunk data.
    DataCr,
    DataLf,
    /// Start of a trailer field line, or of the final empty line.
    TrStart,
    TrName,
    TrValue,
    /// CR of a trailer field line seen; LF must follow.
    TrLf,
    /// CR of the final empty line seen; LF must follow.
    TrEndLf,
    Done,
    /// Refused: every later call returns the same error.
    Failed(ProtoError),
}

/// Decodes one request body.
#[derive(Debug, Clone)]
pub struct BodyDecoder {
    state: State,
    chunked: bool,
    max_body: u64,
    max_trailer_bytes: usize,
    max_trailer_fields: usize,
    /// Body bytes delivered so far.
    received: u64,
    /// Size of the chunk whose size line is being read.
    chunk_size: u64,
    /// The current size line has at least one hex digit.
    has_digits: bool,
    /// Bytes of the current size line so far (bounded by `MAX_CHUNK_SIZE_LINE`).
    line_len: usize,
    trailer_bytes: usize,
    trailer_fields: usize,
}

#[inline]
fn bad(what: &'static str) -> ProtoError {
    ProtoError::BadRequest(what)
}

impl BodyDecoder {
    /// `max_body` is `Limits::max_body`: chunked bodies that grow past it fail with 413.
    /// `max_trailer_bytes` bounds the trailer section (use `Limits::max_header_bytes`).
    /// Trailer fields are also limited to `DEFAULT_MAX_HEADERS` (see
    /// [`BodyDecoder::with_max_trailer_fields`]).
    pub fn new(framing: BodyFraming, max_body: u64, max_trailer_bytes: usize) -> Self {
        let (state, chunked) = match framing {
            BodyFraming::None | BodyFraming::Length(0) => (State::Done, false),
            BodyFraming::Length(n) => (State::Length(n), false),
            BodyFraming::Chunked => (State::SzDigits, true),
        };
        BodyDecoder {
            state,
            chunked,
            max_body,
            max_trailer_bytes,
            max_trailer_fields: DEFAULT_MAX_HEADERS,
            received: 0,
            chunk_size: 0,
            has_digits: false,
            line_len: 0,
            trailer_bytes: 0,
            trailer_fields: 0,
        }
    }

    /// Bound the number of trailer fields (use `Limits::max_headers`); more fail with 431.
    pub fn with_max_trailer_fields(mut self, max_trailer_fields: usize) -> Self {
        self.max_trailer_fields = max_trailer_fields;
        self
    }

    /// Decode from `input`. Call repeatedly, advancing input by `consumed`, until `done`, or
    /// until `consumed == 0 && data.is_empty()` (more input needed). Chunk extensions and
    /// trailers are accepted and discarded.
    ///
    /// Every call on non-empty input before `done` consumes at least one byte: framing is kept
    /// as state between calls, so a size line or trailer split across reads needs no help from
    /// the caller (returning `consumed == 0` for an incomplete line, which the contract allows,
    /// never happens). One step returns at most one slice of data; framing before it is
    /// consumed in the same step. Once `done`, nothing more is consumed.
    ///
    /// Errors: 400 for an invalid chunk size (non-hex, overflow, `5_0`, empty, whitespace
    /// before it), a malformed extension (control bytes, bad quoting), a missing CRLF after
    /// the size line or the data, a bare CR or LF, a size line longer than
    /// `MAX_CHUNK_SIZE_LINE`, a trailer line breaking the header-field rules (obs-fold, empty
    /// name, whitespace before the colon, control bytes); 413 as soon as the declared chunk
    /// sizes add up past `max_body`; 431 for a trailer section past `max_trailer_bytes` (bytes
    /// of the field lines) or the field limit.
    pub fn decode<'a>(&mut self, input: &'a [u8]) -> Result<DecodeStep<'a>, ProtoError> {
        let result = self.decode_inner(input);
        if let Err(e) = result {
            self.state = State::Failed(e);
        }
        result
    }

    fn decode_inner<'a>(&mut self, input: &'a [u8]) -> Result<DecodeStep<'a>, ProtoError> {
        let mut pos = 0;
        loop {
            match self.state {
                State::Done => return Ok(step(pos, &[], true)),
                State::Failed(e) => return Err(e),
                State::Length(rest) => {
                    let n = take(rest, input.len() - pos);
                    let data = &input[pos..pos + n];
                    self.received += n as u64;
                    self.state = if rest == n as u64 {
                        State::Done
                    } else {
                        State::Length(rest - n as u64)
                    };
                    return Ok(step(pos + n, data, self.state == State::Done));
                }
                State::Data(rest) => {
                    if pos == input.len() {
                        return Ok(step(pos, &[], false));
                    }
                    let n = take(rest, input.len() - pos);
                    let data = &input[pos..pos + n];
                    self.received += n as u64;
                    self.state = if rest == n as u64 {
                        State::DataCr
                    } else {
                        State::Data(rest - n as u64)
                    };
                    return Ok(step(pos + n, data, false));
                }
                _ => {
                    let Some(&b) = input.get(pos) else {
                        return Ok(step(pos, &[], false));
                    };
                    self.framing_byte(b)?;
                    pos += 1;
                }
            }
        }
    }

    /// Count `b` against the chunk size line's and the trailer section's limits, and check the
    /// rules that hold whatever the transition: LF only in a line's CRLF, and a complete chunk
    /// size within the body limit.
    #[inline]
    fn count_framing_byte(&mut self, b: u8) -> Result<(), ProtoError> {
        use State::*;
        if matches!(
            self.state,
            SzDigits
                | SzBws
                | ExtNameStart
                | ExtName
                | ExtNameBws
                | ExtValueStart
                | ExtValueToken
                | ExtQuoted
                | ExtQuotedEscape
                | ExtAfterQuote
        ) && b != b'\r'
        {
            self.line_len += 1;
            if self.line_len > MAX_CHUNK_SIZE_LINE {
                return Err(bad("chunk size line too long"));
            }
        }
        if matches!(self.state, TrStart | TrName | TrValue | TrLf)
            && !(self.state == TrStart && b == b'\r')
        {
            self.trailer_bytes += 1;
            if self.trailer_bytes > self.max_trailer_bytes {
                return Err(ProtoError::HeadersTooLarge);
            }
        }
        if b == b'\n' && !matches!(self.state, SzLf | DataLf | TrLf | TrEndLf) {
            return Err(bad("bare LF in chunk framing"));
        }
        // The size is complete when its digits end: only then is it judged against the body
        // limit, so a size too long for u64 is malformed (400) whatever the limit.
        if self.state == SzDigits
            && self.has_digits
            && hex_val(b).is_none()
            && self.chunk_size > self.max_body.saturating_sub(self.received)
        {
            return Err(ProtoError::PayloadTooLarge);
        }
        Ok(())
    }

    /// Advance the chunk framing state machine by one byte.
    fn framing_byte(&mut self, b: u8) -> Result<(), ProtoError> {
        use State::*;
        self.count_framing_byte(b)?;
        self.state = match (self.state, b) {
            (SzDigits, _) if hex_val(b).is_some() => {
                if self.chunk_size > u64::MAX >> 4 {
                    return Err(bad("chunk size overflows"));
                }
                self.chunk_size = self.chunk_size << 4 | u64::from(hex_val(b).unwrap_or(0));
                self.has_digits = true;
                SzDigits
            }
            (SzDigits, b'\r') if !self.has_digits => return Err(bad("empty chunk size")),
            (SzDigits, _) if !self.has_digits => return Err(bad("invalid chunk size")),
            (SzDigits | ExtName | ExtValueToken | ExtAfterQuote, b'\r') => SzLf,
            (SzDigits | ExtValueToken | ExtAfterQuote | SzBws, b' ' | b'\t') => SzBws,
            (SzDigits | ExtName | ExtValueToken | ExtAfterQuote | SzBws | ExtNameBws, b';') => {
                ExtNameStart
            }
            (SzDigits, _) => return Err(bad("invalid chunk size")),
            (ExtNameStart | ExtValueStart | ExtNameBws, b' ' | b'\t') => self.state,
            (ExtNameStart | ExtName, _) if is_tchar(b) => ExtName,
            (ExtName, b' ' | b'\t') => ExtNameBws,
            (ExtName | ExtNameBws, b'=') => ExtValueStart,
            (ExtValueStart | ExtValueToken, _) if is_tchar(b) => ExtValueToken,
            (ExtValueStart, b'"') => ExtQuoted,
            (ExtQuoted, b'"') => ExtAfterQuote,
            (ExtQuoted, b'\\') => ExtQuotedEscape,
            (ExtQuoted | ExtQuotedEscape, _) if is_field_value_byte(b) => ExtQuoted,
            (
                SzBws | ExtNameStart | ExtName | ExtNameBws | ExtValueStart | ExtValueToken
                | ExtQuoted | ExtQuotedEscape | ExtAfterQuote,
                _,
            ) => {
                return Err(if is_field_value_byte(b) {
                    bad("malformed chunk extension")
                } else {
                    bad("control byte in chunk extension")
                })
            }
            (SzLf, b'\n') => {
                let size = self.chunk_size;
                self.chunk_size = 0;
                self.has_digits = false;
                self.line_len = 0;
                if size == 0 {
                    TrStart
                } else {
                    Data(size)
                }
            }
            (TrLf, b'\n') => TrStart,
            (TrEndLf, b'\n') => Done,
            (SzLf | TrLf | TrEndLf, _) => return Err(bad("bare CR in chunk framing")),
            (DataCr, b'\r') => DataLf,
            (DataLf, b'\n') => SzDigits,
            (DataCr | DataLf, _) => return Err(bad("missing CRLF after chunk data")),
            (TrStart, b'\r') => TrEndLf,
            (TrStart, b' ' | b'\t') => return Err(bad("obsolete line folding in a trailer")),
            (TrStart, b':') => return Err(bad("empty trailer field name")),
            (TrStart | TrName, _) if is_tchar(b) => TrName,
            (TrName, b':') => {
                self.trailer_fields += 1;
                if self.trailer_fields > self.max_trailer_fields {
                    return Err(ProtoError::HeadersTooLarge);
                }
                TrValue
            }
            (TrName, b' ' | b'\t') => return Err(bad("whitespace before the colon in a trailer")),
            (TrStart | TrName, _) => return Err(bad("invalid trailer field name")),
            (TrValue, b'\r') => TrLf,
            (TrValue, _) if is_field_value_byte(b) => TrValue,
            (TrValue, _) => return Err(bad("control byte in a trailer field")),
            (Length(_) | Data(_) | Done | Failed(_), _) => unreachable!("not a framing state"),
        };
        Ok(())
    }

    /// The body is complete.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// For Content-Length bodies, the number of body bytes still to come; `None` for chunked.
    /// The I/O layer reads at most this many bytes so it never reads past the body.
    /// (`Some(0)` for a request without a body.)
    pub fn remaining(&self) -> Option<u64> {
        match self.state {
            _ if self.chunked => None,
            State::Length(rest) => Some(rest),
            _ => Some(0),
        }
    }

    /// Body bytes delivered so far.
    pub fn received(&self) -> u64 {
        self.received
    }
}

#[inline]
fn step(consumed: usize, data: &[u8], done: bool) -> DecodeStep<'_> {
    DecodeStep {
        consumed,
        data,
        done,
    }
}

/// min(rest, available) as usize.
#[inline]
fn take(rest: u64, available: usize) -> usize {
    usize::try_from(rest).map_or(available, |rest| rest.min(available))
}

#[cfg(test)]
mod tests;
