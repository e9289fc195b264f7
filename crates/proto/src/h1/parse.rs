//! Request head parsing: finds the end of the head incrementally (so a client trickling bytes
//! costs O(n), not O(n^2)), then validates it strictly and builds a [`RequestHead`].
//!
//! Two passes, both linear. (1) The scan: `memchr` for LF from where the last call stopped;
//! every LF must follow a CR, the first LF ends the request line (414 as soon as the line is
//! too long) and an empty line ends the head (431 as soon as the buffer is past the limit).
//! (2) Once complete: a byte pre-scan (bare CR, control bytes, obs-fold, field count), our own
//! request-line parse (httparse cannot tell 505 from 400 nor check target forms), `httparse`
//! for the field lines, then the framing rules of RFC 9112 §6 that decide where the body ends.
//! Being strict about framing is the defence against request smuggling: when a proxy in front
//! of us reads the message differently, the request is refused instead of split in two.
//!
//! Every answer depends only on `buf` (the incremental state is a cache), so whole,
//! byte-by-byte and pipelined input give the same result; the tests and fuzz targets check it.

use std::ops::Range;

use memchr::memchr;

use crate::token::{is_field_value_byte, is_ows, is_token, list_elements, trim_ows};
use crate::{BodyFraming, Limits, ProtoError, RequestHead, Version};

/// Field slots on the stack for httparse; heads with more fields use one heap vector.
const STACK_HEADERS: usize = 32;

/// Incremental head parser for one connection. Keeps how far it has already scanned for the end
/// of the head, so feeding a growing buffer is linear. `reset()` after each request.
#[derive(Debug, Default)]
pub struct HeadParser {
    /// Bytes of `buf` already scanned (for leading empty lines, then for LFs).
    scanned: usize,
    /// Index of the request line's first byte, once the leading empty lines are skipped.
    start: Option<usize>,
    /// Index of the LF that ends the request line, once seen.
    line_lf: Option<usize>,
}

impl HeadParser {
    pub fn new() -> Self {
        HeadParser::default()
    }

    /// Forget progress (call after a head was returned, or when the buffer was replaced).
    /// `parse` also resets itself when it returns a head or an error.
    pub fn reset(&mut self) {
        *self = HeadParser::default();
    }

    /// `buf` holds the bytes received so far for this request (it starts at the first byte of
    /// the request line; the caller removed consumed bytes). Returns:
    /// - `Ok(None)`: need more bytes (and no limit was exceeded yet);
    /// - `Ok(Some((head, n)))`: a complete head occupying `buf[..n]`; the body (if any) starts
    ///   at `buf[n]`;
    /// - `Err(e)`: the request is refused with `e.status()`, and the connection closes.
    ///
    /// Leading empty lines before the request line (RFC 9112 §2.2) are skipped and counted in n.
    /// `Limits::max_header_bytes` bounds `n` (leading empty lines included); the request line
    /// (without its CRLF) is bounded by `Limits::max_request_line`.
    pub fn parse(
        &mut self,
        buf: &[u8],
        limits: &Limits,
    ) -> Result<Option<(RequestHead, usize)>, ProtoError> {
        if buf.len() < self.scanned {
            // The caller replaced the buffer without reset(): start over rather than misread.
            self.reset();
        }
        match self.find_end(buf, limits) {
            Ok(None) => Ok(None),
            Ok(Some(end)) => {
                let (start, line_lf) = (self.start.unwrap_or(0), self.line_lf.unwrap_or(0));
                self.reset();
                let head = build(&buf[start..end], line_lf - start, limits)?;
                Ok(Some((head, end)))
            }
            Err(e) => {
                self.reset();
                Err(e)
            }
        }
    }

    /// Scan for the end of the head; `Some(n)` = the head ends at `buf[n]`.
    fn find_end(&mut self, buf: &[u8], limits: &Limits) -> Result<Option<usize>, ProtoError> {
        let max = limits.max_header_bytes;
        // Nothing past the limit is looked at: a head must end within it.
        let region = buf.len().min(max);
        let too_large = buf.len() > max;

        let start = match self.start {
            Some(start) => start,
            None => {
                let mut i = self.scanned;
                loop {
                    if i >= region {
                        self.scanned = i;
                        return if too_large {
                            Err(ProtoError::HeadersTooLarge)
                        } else {
                            Ok(None)
                        };
                    }
                    match buf[i] {
                        b'\r' => match buf.get(i + 1) {
                            None => {
                                self.scanned = i;
                                return Ok(None);
                            }
                            Some(b'\n') => i += 2,
                            Some(_) => return Err(bad("bare CR before the request line")),
                        },
                        b'\n' => return Err(bad("bare LF before the request line")),
                        _ => break,
                    }
                }
                self.start = Some(i);
                self.scanned = i;
                i
            }
        };

        let mut pos = self.scanned;
        while let Some(off) = memchr(b'\n', &buf[pos..region]) {
            let lf = pos + off;
            // lf > start, since buf[start] is neither CR nor LF.
            let after_cr = buf[lf - 1] == b'\r';
            match self.line_lf {
                None => {
                    let line_len = lf - start - usize::from(after_cr);
                    if line_len > limits.max_request_line {
                        return Err(ProtoError::UriTooLong);
                    }
                    if !after_cr {
                        return Err(bad("bare LF in the request line"));
                    }
                    self.line_lf = Some(lf);
                }
                Some(_) => {
                    if !after_cr {
                        return Err(bad("bare LF in the header section"));
                    }
                    // Every LF before this one followed a CR, so "\n\r\n" means CRLFCRLF.
                    if buf[lf - 2] == b'\n' {
                        self.scanned = lf + 1;
                        return Ok(Some(lf + 1));
                    }
                }
            }
            pos = lf + 1;
        }
        self.scanned = region;

        if self.line_lf.is_none() {
            // A CR at the very end may be the start of the line's CRLF: not counted yet.
            let line_len = region - start - usize::from(buf[region - 1] == b'\r');
            if line_len > limits.max_request_line {
                return Err(ProtoError::UriTooLong);
            }
        }
        if too_large {
            return Err(ProtoError::HeadersTooLarge);
        }
        Ok(None)
    }
}

#[inline]
fn bad(what: &'static str) -> ProtoError {
    ProtoError::BadRequest(what)
}

#[inline]
fn rng(start: usize, end: usize) -> Range<u32> {
    // Cannot truncate: build() refuses heads longer than u32::MAX.
    start as u32..end as u32
}

/// Validate a complete head (`head` = request line through CRLFCRLF; `line_lf` = index of the
/// request line's LF) and build the owned [`RequestHead`].
fn build(head: &[u8], line_lf: usize, limits: &Limits) -> Result<RequestHead, ProtoError> {
    if u32::try_from(head.len()).is_err() {
        return Err(ProtoError::HeadersTooLarge);
    }
    let field_count = prescan(head, line_lf)?;
    if field_count > limits.max_headers {
        return Err(ProtoError::HeadersTooLarge);
    }
    let line = parse_request_line(head, line_lf)?;
    let fields = parse_fields(head, line_lf + 1, field_count)?;

    let mut frame = Framing::default();
    for (name, value) in &fields {
        frame.field(&head[r(name)], &head[r(value)])?;
    }
    let (body, keep_alive, expect_continue) = frame.finish(line.version, limits)?;
    let is_head = &head[r(&line.method)] == b"HEAD";

    Ok(RequestHead {
        buf: head.to_vec(),
        method: line.method,
        target: line.target,
        path: line.path,
        query: line.query,
        headers: fields,
        version: line.version,
        body,
        keep_alive,
        expect_continue,
        is_head,
    })
}

#[inline]
fn r(range: &Range<u32>) -> Range<usize> {
    range.start as usize..range.end as usize
}

/// Byte rules httparse does not enforce, checked over the whole head in one pass: every CR is
/// followed by LF (the scan already made every LF follow a CR), no control byte but HTAB, no
/// line starting with whitespace (obs-fold, or whitespace before the first field, RFC 9112 §2.2
/// and §5.2). Returns the number of field lines.
fn prescan(head: &[u8], line_lf: usize) -> Result<usize, ProtoError> {
    let mut lines = 0usize;
    for (i, &b) in head.iter().enumerate() {
        if b == b'\r' {
            if head.get(i + 1) != Some(&b'\n') {
                return Err(bad("bare CR in the head"));
            }
        } else if b == b'\n' {
            lines += 1;
            if head.get(i + 1).is_some_and(|&next| is_ows(next)) {
                return Err(if i == line_lf {
                    bad("whitespace before the first header field")
                } else {
                    bad("obsolete line folding in a header field")
                });
            }
        } else if !is_field_value_byte(b) {
            return Err(if b == 0 {
                bad("NUL byte in the head")
            } else {
                bad("control byte in the head")
            });
        }
    }
    // Minus the request line and the final empty line.
    Ok(lines - 2)
}

struct RequestLine {
    method: Range<u32>,
    target: Range<u32>,
    path: Range<u32>,
    query: Range<u32>,
    version: Version,
}

/// `method SP request-target SP HTTP-version` (RFC 9112 §3), single spaces, nothing else.
fn parse_request_line(head: &[u8], line_lf: usize) -> Result<RequestLine, ProtoError> {
    let line = &head[..line_lf - 1];
    let sp1 = memchr(b' ', line).ok_or(bad("request line has no spaces"))?;
    let method = &line[..sp1];
    if !is_token(method) {
        return Err(bad("invalid method"));
    }
    let t0 = sp1 + 1;
    let sp2 = t0 + memchr(b' ', &line[t0..]).ok_or(bad("request line has no HTTP version"))?;
    let v0 = sp2 + 1;
    let version = match &line[v0..] {
        b"HTTP/1.1" => Version::Http11,
        b"HTTP/1.0" => Version::Http10,
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            return Err(ProtoError::VersionNotSupported)
        }
        _ => return Err(bad("invalid HTTP version")),
    };
    let target = &line[t0..sp2];
    if target.is_empty() {
        return Err(bad("empty request target"));
    }
    if !target
        .iter()
        .all(|&b| (0x21..=0x7e).contains(&b) && b != b'#')
    {
        return Err(bad("invalid byte in the request target"));
    }
    if method == b"CONNECT" {
        return Err(bad("CONNECT (authority-form) is not supported"));
    }

    let t_end = sp2;
    let path_start = if target[0] == b'/' {
        t0
    } else if target == b"*" {
        if method != b"OPTIONS" {
            return Err(bad("asterisk-form target on a method other than OPTIONS"));
        }
        return Ok(RequestLine {
            method: rng(0, sp1),
            target: rng(t0, t_end),
            path: rng(t0, t_end),
            query: rng(t_end, t_end),
            version,
        });
    } else {
        t0 + absolute_form_path_offset(target)?
    };
    let (path_end, query) = match memchr(b'?', &line[path_start..t_end]) {
        Some(q) => (path_start + q, rng(path_start + q + 1, t_end)),
        None => (t_end, rng(t_end, t_end)),
    };
    let path = if path_start == path_end {
        // "http://host" or "http://host?q": the path is "/". Point at the '/' of "HTTP/1.x"
        // so `buf` stays exactly the head's bytes.
        rng(v0 + 4, v0 + 5)
    } else {
        rng(path_start, path_end)
    };
    Ok(RequestLine {
        method: rng(0, sp1),
        target: rng(t0, t_end),
        path,
        query,
        version,
    })
}

/// For an absolute-form target (`http://authority/path?query`, RFC 9112 §3.2.2), the offset
/// where the path starts (= target length when there is no path).
fn absolute_form_path_offset(target: &[u8]) -> Result<usize, ProtoError> {
    let scheme_len = if starts_with_ignore_case(target, b"http://") {
        7
    } else if starts_with_ignore_case(target, b"https://") {
        8
    } else {
        return Err(bad(
            "request target is neither origin-form nor absolute-form",
        ));
    };
    let rest = &target[scheme_len..];
    let authority_len = rest
        .iter()
        .position(|&b| b == b'/' || b == b'?')
        .unwrap_or(rest.len());
    let authority = &rest[..authority_len];
    if authority.is_empty() {
        return Err(bad("absolute-form target with an empty host"));
    }
    if !authority.iter().all(|&b| is_host_byte(b)) {
        // Includes '@': userinfo is deprecated and a recipient should treat it as an error
        // (RFC 9110 §4.2.4).
        return Err(bad("invalid authority in the request target"));
    }
    Ok(scheme_len + authority_len)
}

fn starts_with_ignore_case(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// A byte of `uri-host [":" port]` (RFC 3986 reg-name / IP-literal / IPv4, and the port).
fn is_host_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'-' | b'.'
                | b'_'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b'%'
                | b':'
                | b'['
                | b']'
        )
}

/// Parse the field lines (`head[from..]`, ending with the empty line) with httparse into
/// (name, trimmed value) ranges relative to `head`.
#[allow(clippy::type_complexity)]
fn parse_fields(
    head: &[u8],
    from: usize,
    count: usize,
) -> Result<Vec<(Range<u32>, Range<u32>)>, ProtoError> {
    let mut stack = [httparse::EMPTY_HEADER; STACK_HEADERS];
    let mut heap;
    let slots: &mut [httparse::Header<'_>] = if count <= STACK_HEADERS {
        &mut stack[..count]
    } else {
        heap = vec![httparse::EMPTY_HEADER; count];
        &mut heap
    };
    let section = &head[from..];
    let parsed = match httparse::parse_headers(section, slots) {
        Ok(httparse::Status::Complete((len, parsed))) if len == section.len() => parsed,
        Ok(_) => return Err(bad("malformed header section")),
        Err(httparse::Error::HeaderName) => {
            return Err(bad(
                "invalid header field name (or whitespace before the colon)",
            ))
        }
        Err(httparse::Error::HeaderValue) => return Err(bad("invalid header field value")),
        Err(httparse::Error::TooManyHeaders) => return Err(ProtoError::HeadersTooLarge),
        Err(_) => return Err(bad("malformed header section")),
    };
    let base = head.as_ptr() as usize;
    let offset_of = |s: &[u8]| -> Result<usize, ProtoError> {
        let off = (s.as_ptr() as usize).wrapping_sub(base);
        if off <= head.len() && s.len() <= head.len() - off {
            Ok(off)
        } else {
            Err(bad("malformed header section"))
        }
    };
    let mut fields = Vec::with_capacity(parsed.len());
    for h in parsed.iter() {
        let name = h.name.as_bytes();
        if name.is_empty() {
            return Err(bad("empty header field name"));
        }
        let n0 = offset_of(name)?;
        let value = trim_ows(h.value);
        let v0 = if value.is_empty() {
            n0 + name.len()
        } else {
            offset_of(value)?
        };
        fields.push((rng(n0, n0 + name.len()), rng(v0, v0 + value.len())));
    }
    Ok(fields)
}

/// The header fields that decide framing and connection handling, gathered in one pass.
#[derive(Default)]
struct Framing {
    hosts: usize,
    content_length: Option<u64>,
    transfer_encoding: bool,
    /// `chunked` was seen in Transfer-Encoding (and must be the last coding).
    chunked: bool,
    /// A coding followed `chunked`, or `chunked` came twice.
    chunked_not_last: bool,
    /// A coding other than chunked came before it.
    other_coding: bool,
    close: bool,
    keep_alive: bool,
    expect_continue: bool,
}

impl Framing {
    fn field(&mut self, name: &[u8], value: &[u8]) -> Result<(), ProtoError> {
        match name.len() {
            4 if name.eq_ignore_ascii_case(b"host") => {
                self.hosts += 1;
                if !value.iter().all(|&b| is_host_byte(b)) {
                    return Err(bad("invalid Host header field"));
                }
            }
            6 if name.eq_ignore_ascii_case(b"expect") => {
                if list_elements(value).any(|e| e.eq_ignore_ascii_case(b"100-continue")) {
                    self.expect_continue = true;
                }
            }
            10 if name.eq_ignore_ascii_case(b"connection") => {
                for token in list_elements(value) {
                    if token.eq_ignore_ascii_case(b"close") {
                        self.close = true;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") {
                        self.keep_alive = true;
                    }
                }
            }
            14 if name.eq_ignore_ascii_case(b"content-length") => {
                // `1*DIGIT`; a list only arises from duplicated fields, and then every member
                // must be the same number (RFC 9110 §8.6, RFC 9112 §6.3).
                for element in value.split(|&b| b == b',') {
                    let n = parse_content_length(trim_ows(element))?;
                    if self.content_length.is_some_and(|prev| prev != n) {
                        return Err(bad("conflicting Content-Length values"));
                    }
                    self.content_length = Some(n);
                }
            }
            17 if name.eq_ignore_ascii_case(b"transfer-encoding") => {
                self.transfer_encoding = true;
                for coding in list_elements(value) {
                    if self.chunked {
                        self.chunked_not_last = true;
                    }
                    let coding_name = trim_ows(coding.split(|&b| b == b';').next().unwrap_or(b""));
                    if !is_token(coding_name) {
                        return Err(bad("invalid transfer coding"));
                    }
                    if coding.eq_ignore_ascii_case(b"chunked") {
                        self.chunked = true;
                    } else if !self.chunked {
                        self.other_coding = true;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// (body framing, keep-alive, expect 100-continue) after all fields were seen.
    fn finish(
        &self,
        version: Version,
        limits: &Limits,
    ) -> Result<(BodyFraming, bool, bool), ProtoError> {
        if self.hosts > 1 {
            return Err(bad("more than one Host header field"));
        }
        if version == Version::Http11 && self.hosts == 0 {
            return Err(bad("HTTP/1.1 request without Host"));
        }
        let body = if self.transfer_encoding {
            if version == Version::Http10 {
                // RFC 9112 §6.1: the framing of a 1.0 message with Transfer-Encoding is faulty.
                return Err(bad("Transfer-Encoding in an HTTP/1.0 request"));
            }
            if self.content_length.is_some() {
                return Err(bad("both Content-Length and Transfer-Encoding"));
            }
            if !self.chunked || self.chunked_not_last {
                return Err(bad("final transfer coding is not chunked"));
            }
            if self.other_coding {
                return Err(ProtoError::NotImplemented);
            }
            BodyFraming::Chunked
        } else {
            match self.content_length {
                None | Some(0) => BodyFraming::None,
                Some(n) if n > limits.max_body => return Err(ProtoError::PayloadTooLarge),
                Some(n) => BodyFraming::Length(n),
            }
        };
        let keep_alive = match version {
            Version::Http11 => !self.close,
            Version::Http10 => self.keep_alive && !self.close,
        };
        let expect_continue = version == Version::Http11 && self.expect_continue;
        Ok((body, keep_alive, expect_continue))
    }
}

/// `Content-Length = 1*DIGIT` as u64: no sign, no spaces, no hex, no overflow.
fn parse_content_length(s: &[u8]) -> Result<u64, ProtoError> {
    if s.is_empty() {
        return Err(bad("empty Content-Length"));
    }
    let mut n: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return Err(bad("invalid Content-Length"));
        }
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
            .ok_or(bad("Content-Length overflows"))?;
    }
    Ok(n)
}
