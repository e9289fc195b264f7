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

    /// Advance the chunk framing state machine by one byte.
    fn framing_byte(&mut self, b: u8) -> Result<(), ProtoError> {
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
mod tests {
    use super::*;
    use crate::testing::feed_decoder;
    use crate::ProtoError::*;

    /// A pipelined request after the body: must never be consumed.
    const NEXT: &[u8] = b"GET /next HTTP/1.1\r\nHost: n\r\n\r\n";
    const MAX_TRAILER: usize = 256;

    /// (body data, bytes consumed, done)
    type Out = Result<(Vec<u8>, usize, bool), ProtoError>;

    /// Play the I/O layer (the crate's one feeding helper, shared with the fuzz targets).
    fn feed(framing: BodyFraming, max_body: u64, pieces: &[&[u8]]) -> Out {
        feed_decoder(BodyDecoder::new(framing, max_body, MAX_TRAILER), pieces)
    }

    /// Decode `input` whole, one byte per feed, split in two at every offset, and followed by
    /// a pipelined request; all must agree. Returns the whole-input outcome.
    fn decode3(framing: BodyFraming, max_body: u64, input: &[u8]) -> Out {
        let whole = feed(framing, max_body, &[input]);
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(feed(framing, max_body, &bytes), whole, "byte by byte");
        for k in 0..=input.len() {
            let split = feed(framing, max_body, &[&input[..k], &input[k..]]);
            assert_eq!(split, whole, "split at {k}");
        }
        let mut piped = input.to_vec();
        piped.extend_from_slice(NEXT);
        let with_next = feed(framing, max_body, &[&piped]);
        match (&whole, &with_next) {
            (Ok((_, _, true)), _) | (Err(_), _) => assert_eq!(with_next, whole, "with trailing"),
            // An incomplete body simply goes on into the appended bytes.
            (Ok((_, _, false)), _) => {}
        }
        whole
    }

    /// A complete chunked body: its data. Must consume exactly `input`.
    fn chunked(input: impl AsRef<[u8]>) -> Vec<u8> {
        let input = input.as_ref();
        match decode3(BodyFraming::Chunked, 1 << 20, input) {
            Ok((data, consumed, true)) => {
                assert_eq!(consumed, input.len());
                data
            }
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(input)),
        }
    }
    /// A refused chunked body: the error.
    fn chunked_err(input: impl AsRef<[u8]>) -> ProtoError {
        chunked_err_max(input, 1 << 20)
    }
    fn chunked_err_max(input: impl AsRef<[u8]>, max_body: u64) -> ProtoError {
        let input = input.as_ref();
        match decode3(BodyFraming::Chunked, max_body, input) {
            Err(e) => e,
            other => panic!(
                "{:?}: expected an error, got {other:?}",
                String::from_utf8_lossy(input)
            ),
        }
    }

    #[test]
    fn no_body_is_done_at_once() {
        for framing in [BodyFraming::None, BodyFraming::Length(0)] {
            let mut d = BodyDecoder::new(framing, 10, 10);
            assert!(d.is_done());
            assert_eq!((d.remaining(), d.received()), (Some(0), 0));
            assert_eq!(
                d.decode(NEXT),
                Ok(DecodeStep {
                    consumed: 0,
                    data: &[],
                    done: true
                })
            );
        }
    }

    #[test]
    fn content_length_bodies() {
        assert_eq!(
            decode3(BodyFraming::Length(5), 0, b"hello"),
            Ok((b"hello".to_vec(), 5, true))
        );
        assert_eq!(
            decode3(BodyFraming::Length(5), 0, b"hel"),
            Ok((b"hel".to_vec(), 3, false))
        );
        assert_eq!(
            decode3(BodyFraming::Length(3), 0, b"\r\n\0"),
            Ok((b"\r\n\0".to_vec(), 3, true))
        );
        let mut d = BodyDecoder::new(BodyFraming::Length(5), 0, 0);
        assert_eq!(d.remaining(), Some(5));
        assert_eq!(
            d.decode(b"he").unwrap(),
            DecodeStep {
                consumed: 2,
                data: b"he",
                done: false
            }
        );
        assert_eq!((d.remaining(), d.received()), (Some(3), 2));
        assert_eq!(
            d.decode(b"").unwrap(),
            DecodeStep {
                consumed: 0,
                data: b"",
                done: false
            }
        );
        assert_eq!(
            d.decode(b"lloGET").unwrap(),
            DecodeStep {
                consumed: 3,
                data: b"llo",
                done: true
            }
        );
        assert_eq!(
            (d.remaining(), d.received(), d.is_done()),
            (Some(0), 5, true)
        );
        assert_eq!(
            d.decode(b"GET").unwrap(),
            DecodeStep {
                consumed: 0,
                data: b"",
                done: true
            }
        );
    }

    #[test]
    fn chunked_bodies() {
        assert_eq!(chunked("5\r\nhello\r\n0\r\n\r\n"), b"hello");
        assert_eq!(chunked("0\r\n\r\n"), b"");
        assert_eq!(
            chunked("3\r\nabc\r\n2\r\nde\r\n1\r\n\n\r\n0\r\n\r\n"),
            b"abcde\n"
        );
        assert_eq!(
            chunked("A\r\n0123456789\r\na\r\n0123456789\r\n0\r\n\r\n"),
            b"01234567890123456789"
        );
        assert_eq!(chunked("005\r\nhello\r\n0000\r\n\r\n"), b"hello");
        assert_eq!(
            chunked("2\r\n\r\n\r\n0\r\n\r\n"),
            b"\r\n",
            "data is not framing"
        );
    }

    #[test]
    fn chunk_extensions_are_accepted_and_discarded() {
        for ext in [
            ";foo",
            ";foo=bar",
            ";a;b=c;d",
            " ; foo = bar ; baz",
            "\t;\tfoo\t=\tbar",
            ";foo=\"quoted ; value = x\"",
            ";a=\"esc \\\" \\\\ q\"",
            ";a=\"obs \u{e9}\"",
            ";a=\"\" ;b",
            ";a=\"x\";b=\"y\"",
            ";!#$%&'*+-.^_`|~=!#$%&'*+-.^_`|~",
        ] {
            assert_eq!(
                chunked(format!("5{ext}\r\nhello\r\n0{ext}\r\n\r\n")),
                b"hello",
                "{ext:?}"
            );
        }
    }

    #[test]
    fn trailers_are_accepted_and_discarded() {
        assert_eq!(
            chunked("1\r\nx\r\n0\r\nX-Sum: abc\r\nY:\r\nZ: \t a b\t\r\n\r\n"),
            b"x"
        );
        assert_eq!(chunked(b"0\r\nX: caf\xe9\r\n\r\n"), b"");
    }

    #[test]
    fn invalid_chunk_sizes_are_400() {
        for size in [
            "z", "5_0", "0x5", "", " 5", "5 ", "-5", "+5", ";a", "5\t", "g", "5z",
        ] {
            let e = chunked_err(format!("{size}\r\nhello\r\n0\r\n\r\n"));
            assert_eq!(e.status(), 400, "{size:?}");
        }
        // 2^64 overflows u64: malformed (400), whatever the body limit.
        assert_eq!(
            chunked_err_max("10000000000000000\r\n", u64::MAX).status(),
            400
        );
        assert_eq!(chunked_err("10000000000000000\r\n").status(), 400);
        assert_eq!(chunked_err("ffffffffffffffffff\r\n").status(), 400);
    }

    #[test]
    fn size_line_length_is_bounded() {
        let ext = format!("1;{}", "a".repeat(MAX_CHUNK_SIZE_LINE - 2));
        assert_eq!(chunked(format!("{ext}\r\nx\r\n0\r\n\r\n")), b"x");
        let e = chunked_err(format!("{ext}a\r\nx\r\n0\r\n\r\n"));
        assert_eq!(e.status(), 400);
        let zeros = "0".repeat(MAX_CHUNK_SIZE_LINE + 1);
        assert_eq!(chunked_err(format!("{zeros}1\r\nx\r\n")).status(), 400);
    }

    #[test]
    fn malformed_extensions_are_400() {
        for ext in [
            ";",
            ";=b",
            ";a=",
            ";a=\"open",
            ";a b",
            ";a=b c",
            ";a=\"x\"y",
            ";a=\x01",
            ";a\x01",
            ";a=\"\x00\"",
            ";a=b\x7f",
            ";a=\"\\\x01\"",
            ";(a)",
            ";a=(b)",
            ";a=\"x\" ",
            ";a ",
        ] {
            let e = chunked_err(format!("5{ext}\r\nhello\r\n0\r\n\r\n"));
            assert_eq!(e.status(), 400, "{ext:?}");
        }
    }

    #[test]
    fn missing_or_bare_line_ends_are_400() {
        for input in [
            "5\r\nhelloX\r\n0\r\n\r\n",
            "5\r\nhello\n0\r\n\r\n",
            "5\r\nhello\rX0\r\n\r\n",
            "5\r\nhello0\r\n\r\n",
            "5\nhello\r\n0\r\n\r\n",
            "5\rhello\r\n0\r\n\r\n",
            "5\r\nhello\r\n0\n\r\n",
            "5\r\nhello\r\n0\r\n\n",
            "5\r\nhello\r\n0\r\n\rX",
            "5;a\nhello\r\n0\r\n\r\n",
            "5;a=\"b\"\nhello\r\n0\r\n\r\n",
        ] {
            assert_eq!(chunked_err(input).status(), 400, "{input:?}");
        }
    }

    #[test]
    fn malformed_trailers_are_400() {
        for trailer in [
            "X: a\r\n b\r\n",
            "X: a\r\n\tb\r\n",
            ": a\r\n",
            "X : a\r\n",
            "X\t: a\r\n",
            "X: a\0\r\n",
            "X: a\x7f\r\n",
            "X: a\x1b\r\n",
            "X: a\n",
            "X: a\rb\r\n",
            "XYZ\r\n",
            "X(y): a\r\n",
            " X: a\r\n",
        ] {
            let e = chunked_err(format!("0\r\n{trailer}\r\n"));
            assert_eq!(e.status(), 400, "{trailer:?}");
        }
    }

    #[test]
    fn trailer_section_is_bounded() {
        let fits = format!("0\r\nX: {}\r\n\r\n", "a".repeat(MAX_TRAILER - 5));
        assert_eq!(chunked(&fits), b"");
        let over = format!("0\r\nX: {}\r\n\r\n", "a".repeat(MAX_TRAILER - 4));
        assert_eq!(chunked_err(over), HeadersTooLarge);

        let three = b"0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
        let mut d = BodyDecoder::new(BodyFraming::Chunked, 100, 100).with_max_trailer_fields(3);
        assert!(d.decode(three).unwrap().done);
        let mut d = BodyDecoder::new(BodyFraming::Chunked, 100, 100).with_max_trailer_fields(2);
        assert_eq!(d.decode(three), Err(HeadersTooLarge));
    }

    #[test]
    fn max_body_is_413_as_soon_as_the_declared_sizes_exceed_it() {
        assert_eq!(
            decode3(BodyFraming::Chunked, 5, b"5\r\nhello\r\n0\r\n\r\n"),
            Ok((b"hello".to_vec(), 15, true))
        );
        assert_eq!(
            chunked_err_max("6\r\nhello!\r\n0\r\n\r\n", 5),
            PayloadTooLarge
        );
        assert_eq!(
            chunked_err_max("3\r\nabc\r\n3\r\nabc\r\n", 5),
            PayloadTooLarge
        );
        // Refused at the size line, before any of the chunk's data arrives.
        let mut d = BodyDecoder::new(BodyFraming::Chunked, 1 << 30, 0);
        assert_eq!(d.decode(b"40000001\r\n"), Err(PayloadTooLarge));
    }

    #[test]
    fn state_is_kept_across_feeds() {
        let mut d = BodyDecoder::new(BodyFraming::Chunked, 100, 100);
        assert_eq!(d.remaining(), None);
        assert_eq!(
            d.decode(b"1").unwrap(),
            DecodeStep {
                consumed: 1,
                data: b"",
                done: false
            }
        );
        assert_eq!(d.decode(b"0;x=\"a").unwrap().consumed, 6);
        assert_eq!(d.decode(b"\"\r\n").unwrap().consumed, 3);
        let step = d.decode(b"0123456789abcdefXYZ").unwrap();
        assert_eq!(
            step,
            DecodeStep {
                consumed: 16,
                data: b"0123456789abcdef",
                done: false
            }
        );
        assert_eq!(d.received(), 16);
        assert_eq!(
            d.decode(b"\r\n0\r\n\r\nGET").unwrap(),
            DecodeStep {
                consumed: 7,
                data: b"",
                done: true
            }
        );
        assert!(d.is_done());
        assert_eq!(d.remaining(), None);
    }

    #[test]
    fn errors_are_sticky() {
        let mut d = BodyDecoder::new(BodyFraming::Chunked, 100, 100);
        assert_eq!(d.decode(b"zz"), Err(BadRequest("invalid chunk size")));
        assert_eq!(
            d.decode(b"5\r\nhello\r\n0\r\n\r\n"),
            Err(BadRequest("invalid chunk size"))
        );
        assert!(!d.is_done());
        let mut d = BodyDecoder::new(BodyFraming::Chunked, 4, 100);
        assert_eq!(d.decode(b"5\r"), Err(PayloadTooLarge));
        assert_eq!(d.decode(b"\nhello"), Err(PayloadTooLarge));
    }

    #[test]
    fn one_step_returns_at_most_one_chunk_of_data() {
        let input = b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        let mut d = BodyDecoder::new(BodyFraming::Chunked, 100, 100);
        let s1 = d.decode(input).unwrap();
        assert_eq!((s1.consumed, s1.data), (6, &b"abc"[..]));
        let s2 = d.decode(&input[6..]).unwrap();
        assert_eq!((s2.consumed, s2.data), (7, &b"de"[..]));
        let s3 = d.decode(&input[13..]).unwrap();
        assert_eq!((s3.consumed, s3.data, s3.done), (7, &b""[..], true));
    }
}
