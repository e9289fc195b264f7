//! Request head parsing: finds the end of the head incrementally (so a client trickling bytes
//! costs O(n), not O(n^2)), then validates it strictly and builds a [`RequestHead`].
//!
//! Two passes, both linear. (1) The scan: `memchr` for LF from where the last call stopped;
//! every LF must follow a CR, and not a CR that follows another, the first LF ends the request
//! line (414 as soon as the line is too long; the line is parsed and judged right then, with
//! our own parser, since httparse cannot tell 505 from 400 nor check target forms: a bad line
//! gets its answer without waiting for a header section that may never come) and an empty line
//! ends the head (431 as soon as the buffer is past the limit).
//! (2) Once complete: a byte pre-scan (bare CR, control bytes, obs-fold, field count), the field
//! lines (what the pre-scan left to check: names and trimming), then the framing rules of
//! RFC 9112 §6 that decide where the body ends.
//! Being strict about framing is the defence against request smuggling: when a proxy in front
//! of us reads the message differently, the request is refused instead of split in two.
//!
//! Every answer depends only on `buf` (the incremental state is a cache), so whole,
//! byte-by-byte and pipelined input give the same result; the tests and fuzz targets check it.

use std::ops::Range;

use memchr::memchr;

use crate::head::{spare_buffers, FieldRanges};
use crate::host::valid_host;
use crate::token::{
    bytes_to_look_at, is_field_value_byte, is_ows, is_tchar, is_token, list_elements, trim_ows,
    zero_bytes, ONES,
};
use crate::{BodyFraming, Limits, ProtoError, RequestHead, Version};

/// Incremental head parser for one connection. Keeps how far it has already scanned for the end
/// of the head, so feeding a growing buffer is linear. `reset()` after each request.
#[derive(Debug, Default)]
pub struct HeadParser {
    /// Bytes of `buf` already scanned (for leading empty lines, then for LFs).
    scanned: usize,
    /// Index of the request line's first byte, once the leading empty lines are skipped.
    start: Option<usize>,
    /// Index of the LF that ends the request line, once seen. The line is parsed (and judged)
    /// as soon as its LF arrives: a bad line is answered then, not after the header section
    /// (or its timeout). The parsed line is not kept here, which would grow every connection
    /// by 48 bytes: `find_end` hands it to `build` when the head ends in the same call (the
    /// usual case), and otherwise `build` parses it again.
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
        if buf.len() < self.scanned || self.scanned > limits.max_header_bytes {
            // The caller replaced the buffer without reset() (or changed the limits): start
            // over rather than misread.
            self.reset();
        }
        match self.find_end(buf, limits) {
            Ok(None) => Ok(None),
            Ok(Some((end, line))) => {
                let (start, line_lf) = (self.start.unwrap_or(0), self.line_lf.unwrap_or(0));
                self.reset();
                let head = build(&buf[start..end], line_lf - start, line, limits)?;
                Ok(Some((head, end)))
            }
            Err(e) => {
                self.reset();
                Err(e)
            }
        }
    }

    /// Scan for the end of the head; `Some((n, line))` = the head ends at `buf[n]`, and `line`
    /// is its request line if this call parsed it.
    fn find_end(
        &mut self,
        buf: &[u8],
        limits: &Limits,
    ) -> Result<Option<(usize, Option<RequestLine>)>, ProtoError> {
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
        let mut line = None;
        while let Some(off) = find_near(b'\n', &buf[pos..region]) {
            let lf = pos + off;
            // lf > start, since buf[start] is neither CR nor LF.
            let after_cr = buf[lf - 1] == b'\r';
            // A CR before the line's CRLF ("\r\r\n") is refused now: as the "empty line" that
            // should end the head it would leave the head open until the timeout. Other bare
            // CRs in a line are refused by the pre-scan once the head is complete (one pass
            // over each line here, not two).
            let cr_before_crlf = after_cr && lf >= start + 2 && buf[lf - 2] == b'\r';
            match self.line_lf {
                None => {
                    let line_len = lf - start - usize::from(after_cr);
                    if line_len > limits.max_request_line {
                        return Err(ProtoError::UriTooLong);
                    }
                    if !after_cr {
                        return Err(bad("bare LF in the request line"));
                    }
                    if cr_before_crlf {
                        return Err(bad("bare CR in the request line"));
                    }
                    // Judged now: a client that sends a bad line and then waits gets its 400
                    // (or 505) at once, not a 408 when the header timeout ends.
                    line = Some(parse_request_line(&buf[start..], lf - start)?);
                    self.line_lf = Some(lf);
                }
                Some(_) => {
                    if !after_cr {
                        return Err(bad("bare LF in the header section"));
                    }
                    if cr_before_crlf {
                        return Err(bad("bare CR in the header section"));
                    }
                    // Every LF before this one followed a CR, so "\n\r\n" means CRLFCRLF.
                    if buf[lf - 2] == b'\n' {
                        self.scanned = lf + 1;
                        return Ok(Some((lf + 1, line)));
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
/// request line's LF; `line` = that line, if already parsed by [`parse_request_line`]) and
/// build the owned [`RequestHead`].
fn build(
    head: &[u8],
    line_lf: usize,
    line: Option<RequestLine>,
    limits: &Limits,
) -> Result<RequestHead, ProtoError> {
    u32::try_from(head.len()).map_err(|_| ProtoError::HeadersTooLarge)?;
    let mut ends = LineEnds([0; LINE_ENDS]);
    let field_count = prescan(head, line_lf, &mut ends)?;
    if field_count > limits.max_headers {
        return Err(ProtoError::HeadersTooLarge);
    }
    let line = match line {
        Some(line) => line,
        // Parsed and judged in an earlier call, when the line's LF arrived.
        None => parse_request_line(head, line_lf)?,
    };
    let (mut buf, fields) = spare_buffers();
    let fields = parse_fields(head, line_lf + 1, field_count, &ends, fields)?;
    super::field_limit::check(head, &fields, limits.max_field_bytes)?;

    let mut frame = Framing::default();
    for (name, value) in &fields {
        frame.field(&head[r(name)], &head[r(value)])?;
    }
    let (body, keep_alive, expect_continue) = frame.finish(line.version, limits)?;
    let is_head = &head[r(&line.method)] == b"HEAD";

    buf.extend_from_slice(head);
    Ok(RequestHead {
        buf,
        method: line.method,
        target: line.target,
        authority: line.authority,
        path: line.path,
        query: line.query,
        headers: fields,
        version: line.version,
        body,
        keep_alive,
        expect_continue,
        is_head,
        forwarding: frame.forwarding,
    })
}

#[inline]
fn r(range: &Range<u32>) -> Range<usize> {
    range.start as usize..range.end as usize
}

/// `memchr` for a byte that is usually near (the end of a short line): eight bytes at a time
/// for the first 64, which costs nothing to set up (memchr's setup is most of its cost on a
/// 20-byte line), and memchr's vector search for the rest.
#[inline]
fn find_near(needle: u8, hay: &[u8]) -> Option<usize> {
    let near = hay.len().min(64);
    let pattern = ONES * u64::from(needle);
    let mut words = hay[..near].chunks_exact(8);
    let mut at = 0;
    for word in &mut words {
        let found = zero_bytes(u64::from_le_bytes(word.try_into().unwrap()) ^ pattern);
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    if let Some(j) = words.remainder().iter().position(|&b| b == needle) {
        return Some(at + j);
    }
    memchr(needle, &hay[near..]).map(|j| near + j)
}

/// How many line ends the pre-scan keeps for `parse_fields` (past them, it searches).
const LINE_ENDS: usize = 32;

/// The index of the LF of each of the head's first [`LINE_ENDS`] lines (the request line's
/// first), as the pre-scan found them.
struct LineEnds([u32; LINE_ENDS]);

/// The head's byte rules, checked over the whole head in one pass: every CR is
/// followed by LF (the scan already checked CR and LF; re-checked here so `build` stands on its
/// own), no control byte but HTAB, no
/// line starting with whitespace (obs-fold, or whitespace before the first field, RFC 9112 §2.2
/// and §5.2). Returns the number of field lines; `ends` gets where the first lines end.
fn prescan(head: &[u8], line_lf: usize, ends: &mut LineEnds) -> Result<usize, ProtoError> {
    let mut lines = 0usize;
    let mut look = |i: usize, b: u8| -> Result<(), ProtoError> {
        if b == b'\r' {
            if head.get(i + 1) != Some(&b'\n') {
                return Err(bad("bare CR in the head"));
            }
        } else if b == b'\n' {
            if lines < LINE_ENDS {
                ends.0[lines] = i as u32;
            }
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
        Ok(())
    };
    // Eight bytes at a time: only the bytes below 0x20 (CR, LF, HTAB, control bytes) and DEL
    // are looked at, each found by its bit in the word's mask.
    let mut words = head.chunks_exact(8);
    let mut at = 0;
    for word in &mut words {
        let mut mask = bytes_to_look_at(u64::from_le_bytes(word.try_into().unwrap()));
        while mask != 0 {
            let j = (mask.trailing_zeros() / 8) as usize;
            look(at + j, word[j])?;
            mask &= mask - 1;
        }
        at += 8;
    }
    for (j, &b) in words.remainder().iter().enumerate() {
        if b < 0x20 || b == 0x7f {
            look(at + j, b)?;
        }
    }
    // Minus the request line and the final empty line.
    Ok(lines - 2)
}

struct RequestLine {
    method: Range<u32>,
    target: Range<u32>,
    /// The authority of an absolute-form target; empty otherwise.
    authority: Range<u32>,
    path: Range<u32>,
    query: Range<u32>,
    version: Version,
}

/// `method SP request-target SP HTTP-version` (RFC 9112 §3), single spaces, nothing else.
fn parse_request_line(head: &[u8], line_lf: usize) -> Result<RequestLine, ProtoError> {
    let line = &head[..line_lf - 1];
    let sp1 = find_near(b' ', line).ok_or(bad("request line has no spaces"))?;
    let method = &line[..sp1];
    if !is_token(method) {
        return Err(bad("invalid method"));
    }
    let t0 = sp1 + 1;
    let sp2 = t0 + find_near(b' ', &line[t0..]).ok_or(bad("request line has no HTTP version"))?;
    let v0 = sp2 + 1;
    let version = match &line[v0..] {
        b"HTTP/1.1" => Version::Http11,
        b"HTTP/1.0" => Version::Http10,
        // A higher minor version of a major we speak is served as the highest we speak (RFC
        // 9110 §2.5): SERVER_PROTOCOL and the response say HTTP/1.1.
        [b'H', b'T', b'T', b'P', b'/', b'1', b'.', minor] if minor.is_ascii_digit() => {
            Version::Http11
        }
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
    let mut authority = rng(t0, t0);
    let path_start = if target[0] == b'/' {
        t0
    } else if target == b"*" {
        if method != b"OPTIONS" {
            return Err(bad("asterisk-form target on a method other than OPTIONS"));
        }
        return Ok(RequestLine {
            method: rng(0, sp1),
            target: rng(t0, t_end),
            authority: rng(t0, t0),
            path: rng(t0, t_end),
            query: rng(t_end, t_end),
            version,
        });
    } else {
        let (scheme_len, authority_len) = absolute_form_authority(target)?;
        authority = rng(t0 + scheme_len, t0 + scheme_len + authority_len);
        t0 + scheme_len + authority_len
    };
    let (path_end, query) = match find_near(b'?', &line[path_start..t_end]) {
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
        authority,
        path,
        query,
        version,
    })
}

/// For an absolute-form target (`http://authority/path?query`, RFC 9112 §3.2.2), the length of
/// its scheme part and of its authority (the path starts after both).
fn absolute_form_authority(target: &[u8]) -> Result<(usize, usize), ProtoError> {
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
    if !valid_host(authority) {
        // Includes '@': userinfo is deprecated and a recipient should treat it as an error
        // (RFC 9110 §4.2.4).
        return Err(bad("invalid authority in the request target"));
    }
    Ok((scheme_len, authority_len))
}

fn starts_with_ignore_case(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// Parse the field lines (`head[from..]`, ending with the empty line) into (name, trimmed
/// value) ranges relative to `head`.
///
/// Our own loop, not httparse's: by now the pre-scan has checked every byte httparse would
/// (CR only in CRLF, no control byte but HTAB, no line starting with whitespace), so what is
/// left is the name (a token up to the colon: no whitespace before it) and trimming the value.
/// httparse checked every byte again, and cost 830 of a hello world's 17,400 instructions;
/// this costs about a fifth of that. httparse stays the oracle: a test here and the
/// `parse_head` fuzz target check that both read every accepted head the same.
fn parse_fields(
    head: &[u8],
    from: usize,
    count: usize,
    ends: &LineEnds,
    mut fields: FieldRanges,
) -> Result<FieldRanges, ProtoError> {
    fields.reserve(count);
    // The head ends with CRLFCRLF: the last field line's CRLF, then the empty line's.
    let end = head.len() - 2;
    let mut i = from;
    // Field line k is the head's line k + 1.
    for k in 1..=count {
        // The line's only CR is its CRLF's (pre-scan).
        let cr = match ends.0.get(k) {
            Some(&lf) => lf as usize - 1,
            None => i + find_near(b'\r', &head[i..end]).expect("every line ends with CRLF"),
        };
        let line = &head[i..cr];
        let colon = find_near(b':', line).ok_or(bad(
            "invalid header field name (or whitespace before the colon)",
        ))?;
        if colon == 0 {
            return Err(bad("empty header field name"));
        }
        // Every byte looked at (no early exit): a tight loop for names of a few words.
        if !line[..colon].iter().fold(true, |ok, &b| ok & is_tchar(b)) {
            return Err(bad(
                "invalid header field name (or whitespace before the colon)",
            ));
        }
        let (mut v0, mut v1) = (i + colon + 1, cr);
        while v0 < v1 && is_ows(head[v0]) {
            v0 += 1;
        }
        while v1 > v0 && is_ows(head[v1 - 1]) {
            v1 -= 1;
        }
        fields.push((rng(i, i + colon), rng(v0, v1)));
        i = cr + 2;
    }
    debug_assert_eq!(i, end);
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
    forwarding: bool,
}

impl Framing {
    fn field(&mut self, name: &[u8], value: &[u8]) -> Result<(), ProtoError> {
        match name.len() {
            4 if name.eq_ignore_ascii_case(b"host") => {
                self.hosts += 1;
                if !valid_host(value) {
                    return Err(bad("invalid Host header field"));
                }
            }
            6 if name.eq_ignore_ascii_case(b"expect") => {
                self.expect_continue |=
                    list_elements(value).any(|e| e.eq_ignore_ascii_case(b"100-continue"));
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
            _ => {
                self.forwarding |= crate::forwarded::is_forwarding_header(name);
            }
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
            Version::Http11 | Version::Http2 => !self.close,
            Version::Http10 => self.keep_alive && !self.close,
        };
        let expect_continue = version == Version::Http11 && self.expect_continue;
        Ok((body, keep_alive, expect_continue))
    }
}

/// `Content-Length = 1*DIGIT` as u64: no sign, no spaces, no hex, no overflow.
pub(crate) fn parse_content_length(s: &[u8]) -> Result<u64, ProtoError> {
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

#[cfg(test)]
mod word_tests {
    use super::find_near;
    use crate::token::bytes_to_look_at;

    #[test]
    fn the_mask_holds_exactly_the_bytes_to_look_at() {
        // Every byte value at every position, beside every kind of neighbour.
        for neighbour in [b'a', 0x00, 0x0a, 0x1f, 0x20, 0x7f, 0x80, 0x9f, 0xa0, 0xff] {
            for pos in 0..8 {
                for b in 0..=255u8 {
                    let mut w = [neighbour; 8];
                    w[pos] = b;
                    let mask = bytes_to_look_at(u64::from_le_bytes(w));
                    for (j, &x) in w.iter().enumerate() {
                        let want = x < 0x20 || x == 0x7f;
                        assert_eq!(mask >> (j * 8 + 7) & 1 == 1, want, "{w:?} byte {j}");
                    }
                    assert_eq!(mask & !0x8080_8080_8080_8080, 0);
                }
            }
        }
    }

    #[test]
    fn find_near_agrees_with_memchr() {
        let mut seed = 0x1234_5678_u64;
        for len in 0..200 {
            for _ in 0..50 {
                let hay: Vec<u8> = (0..len)
                    .map(|_| {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                        // Few distinct values, so the needle shows up at every distance.
                        [b'\n', b'\r', b'a', 0x8a, 0x0b][(seed >> 33) as usize % 5]
                    })
                    .collect();
                for needle in [b'\n', b'\r', b'?', 0x8a] {
                    assert_eq!(find_near(needle, &hay), memchr::memchr(needle, &hay));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProtoError::*;

    /// A second, pipelined request: appended to every input, it must not change the result.
    const NEXT: &[u8] = b"GET /next HTTP/1.1\r\nHost: n\r\n\r\n";

    /// Everything observable about a parsed head, comparable across the three feeding modes.
    #[derive(Debug, PartialEq)]
    struct Seen {
        n: usize,
        method: Vec<u8>,
        target: Vec<u8>,
        path: Vec<u8>,
        query: Vec<u8>,
        host: Option<Vec<u8>>,
        headers: Vec<(Vec<u8>, Vec<u8>)>,
        version: Version,
        body: BodyFraming,
        keep_alive: bool,
        expect_continue: bool,
        is_head: bool,
        buf: Vec<u8>,
    }

    type Outcome = Result<Option<Seen>, ProtoError>;

    fn seen(r: Result<Option<(RequestHead, usize)>, ProtoError>) -> Outcome {
        r.map(|o| {
            o.map(|(h, n)| Seen {
                n,
                method: h.method().to_vec(),
                target: h.target().to_vec(),
                path: h.path().to_vec(),
                query: h.query().to_vec(),
                host: h.host().map(|v| v.to_vec()),
                headers: h.headers().map(|(n, v)| (n.to_vec(), v.to_vec())).collect(),
                version: h.version,
                body: h.body,
                keep_alive: h.keep_alive,
                expect_continue: h.expect_continue,
                is_head: h.is_head,
                buf: h.buf.clone(),
            })
        })
    }

    /// Parse `input` whole, one byte at a time (growing buffer, one parser; for short inputs
    /// also a fresh parser per prefix) and with a pipelined request after it; all must agree.
    fn parse3(input: &[u8], limits: &Limits) -> Outcome {
        let whole = seen(HeadParser::new().parse(input, limits));

        let mut parser = HeadParser::new();
        let mut trickled = Ok(None);
        for i in 0..=input.len() {
            trickled = seen(parser.parse(&input[..i], limits));
            if input.len() <= 400 {
                let fresh = seen(HeadParser::new().parse(&input[..i], limits));
                assert_eq!(trickled, fresh, "incremental vs fresh parser at {i}");
            }
            match &trickled {
                Ok(None) => {}
                Ok(Some(s)) => {
                    assert_eq!(s.n, i, "head found only once complete");
                    break;
                }
                Err(_) => break,
            }
        }
        assert_eq!(trickled, whole, "byte by byte vs whole: {:?}", show(input));

        if !matches!(whole, Ok(None)) {
            let mut piped = input.to_vec();
            piped.extend_from_slice(NEXT);
            let with_next = seen(HeadParser::new().parse(&piped, limits));
            assert_eq!(with_next, whole, "with trailing bytes: {:?}", show(input));
        }
        whole
    }

    fn show(b: &[u8]) -> String {
        String::from_utf8_lossy(b).into_owned()
    }

    /// A valid head, checked three ways; it must use all of `input`.
    fn ok(input: impl AsRef<[u8]>) -> Seen {
        ok_with(input, &Limits::default())
    }
    fn ok_with(input: impl AsRef<[u8]>, limits: &Limits) -> Seen {
        let input = input.as_ref();
        match parse3(input, limits) {
            Ok(Some(s)) => {
                assert_eq!(s.n, input.len());
                s
            }
            other => panic!("expected a head for {:?}, got {other:?}", show(input)),
        }
    }

    /// A refused head, checked three ways: the error.
    fn err(input: impl AsRef<[u8]>) -> ProtoError {
        err_with(input, &Limits::default())
    }
    fn err_with(input: impl AsRef<[u8]>, limits: &Limits) -> ProtoError {
        let input = input.as_ref();
        match parse3(input, limits) {
            Err(e) => e,
            other => panic!("expected an error for {:?}, got {other:?}", show(input)),
        }
    }
    /// Status of a refused head.
    fn status(input: impl AsRef<[u8]>) -> u16 {
        err(input).status()
    }

    /// A GET with the given extra header lines (each "Name: value").
    fn get(fields: &str) -> String {
        format!("GET / HTTP/1.1\r\nHost: h\r\n{fields}\r\n")
    }
    fn field(fields: &str) -> String {
        fields.split('|').map(|f| format!("{f}\r\n")).collect()
    }
    fn body_of(fields: &str) -> BodyFraming {
        ok(get(&field(fields))).body
    }
    fn status_of(fields: &str) -> u16 {
        status(get(&field(fields)))
    }

    fn small() -> Limits {
        Limits {
            max_request_line: 32,
            max_header_bytes: 96,
            max_headers: 3,
            max_body: 1000,
            ..Limits::default()
        }
    }

    // ---- valid requests ----

    #[test]
    fn simple_get() {
        let s = ok("GET /a%20b?x=1&y HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n");
        assert_eq!(s.method, b"GET");
        assert_eq!(s.target, b"/a%20b?x=1&y");
        assert_eq!(s.path, b"/a%20b");
        assert_eq!(s.query, b"x=1&y");
        assert_eq!(s.version, Version::Http11);
        assert_eq!(s.body, BodyFraming::None);
        assert!(s.keep_alive && !s.expect_continue && !s.is_head);
        assert_eq!(
            s.headers,
            [
                (b"Host".to_vec(), b"example.com".to_vec()),
                (b"Accept".to_vec(), b"*/*".to_vec())
            ]
        );
        assert_eq!(
            s.buf,
            b"GET /a%20b?x=1&y HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n"
        );
    }

    #[test]
    fn query_splitting() {
        let q = |t: &str| {
            let s = ok(format!("GET {t} HTTP/1.1\r\nHost: h\r\n\r\n"));
            (show(&s.path), show(&s.query))
        };
        assert_eq!(q("/"), ("/".into(), "".into()));
        assert_eq!(q("/p?"), ("/p".into(), "".into()));
        assert_eq!(q("/p?a?b=/c"), ("/p".into(), "a?b=/c".into()));
        assert_eq!(q("//x"), ("//x".into(), "".into()));
        assert_eq!(q("/?q"), ("/".into(), "q".into()));
        assert_eq!(q("/a|b{c}^`\"<>\\"), ("/a|b{c}^`\"<>\\".into(), "".into()));
    }

    #[test]
    fn absolute_form_targets() {
        let t = |t: &str| {
            let s = ok(format!("GET {t} HTTP/1.1\r\nHost: ignored\r\n\r\n"));
            assert_eq!(s.target, t.as_bytes());
            (show(&s.path), show(&s.query))
        };
        assert_eq!(
            t("http://example.com/x/y?z=1"),
            ("/x/y".into(), "z=1".into())
        );
        assert_eq!(t("https://example.com:8443/"), ("/".into(), "".into()));
        assert_eq!(t("http://example.com"), ("/".into(), "".into()));
        assert_eq!(t("HTTP://Example.com?q=1"), ("/".into(), "q=1".into()));
        assert_eq!(t("hTTpS://[::1]:8080/a"), ("/a".into(), "".into()));
        // The same with an HTTP/1.0 version string: the borrowed '/' is still there.
        let s = ok("GET http://h HTTP/1.0\r\n\r\n");
        assert_eq!(s.path, b"/");
    }

    #[test]
    fn the_host_of_an_absolute_target_replaces_the_host_header() {
        // RFC 9112 §3.2.2: with an absolute-form target, the Host header is ignored.
        let s = ok("GET http://other:8080/echo HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(s.host.as_deref(), Some(&b"other:8080"[..]));
        let s = ok("GET https://[::1]?q HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(s.host.as_deref(), Some(&b"[::1]"[..]));
        let s = ok("GET /echo HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(s.host.as_deref(), Some(&b"x"[..]));
        let s = ok("OPTIONS * HTTP/1.1\r\nHost: y\r\n\r\n");
        assert_eq!(s.host.as_deref(), Some(&b"y"[..]));
    }

    #[test]
    fn options_asterisk() {
        let s = ok("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_eq!(
            (s.target.as_slice(), s.path.as_slice(), s.query.as_slice()),
            (&b"*"[..], &b"*"[..], &b""[..])
        );
    }

    #[test]
    fn leading_empty_lines_are_skipped_and_counted() {
        let s = ok("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_eq!(s.method, b"GET");
        assert_eq!(s.n, 4 + 27);
        assert!(
            s.buf.starts_with(b"GET / "),
            "buf starts at the request line"
        );
        // Only CRLF pairs are empty lines.
        assert_eq!(parse3(b"\r\n", &Limits::default()), Ok(None));
        assert_eq!(parse3(b"\r\n\r", &Limits::default()), Ok(None));
        assert_eq!(parse3(b"", &Limits::default()), Ok(None));
    }

    #[test]
    fn incomplete_heads_need_more() {
        for input in [
            &b"G"[..],
            b"GET / HTTP/1.1",
            b"GET / HTTP/1.1\r",
            b"GET / HTTP/1.1\r\n",
            b"GET / HTTP/1.1\r\nHost: h\r\n",
            b"GET / HTTP/1.1\r\nHost: h\r\n\r",
        ] {
            assert_eq!(
                parse3(input, &Limits::default()),
                Ok(None),
                "{:?}",
                show(input)
            );
        }
    }

    #[test]
    fn body_starts_right_after_the_head() {
        let input = b"POST /f HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcGET";
        let (head, n) = HeadParser::new()
            .parse(input, &Limits::default())
            .unwrap()
            .unwrap();
        assert_eq!(&input[n..], b"abcGET");
        assert_eq!(head.body, BodyFraming::Length(3));
        assert_eq!(head.method(), b"POST");
    }

    #[test]
    fn repeated_fields_kept_in_order_and_lookup_is_case_insensitive() {
        let input = get(&field("X-A: 1|x-b: 2|X-A: 3"));
        let s = ok(&input);
        let names: Vec<String> = s.headers.iter().map(|(n, _)| show(n)).collect();
        assert_eq!(names, ["Host", "X-A", "x-b", "X-A"]);
        let (head, _) = HeadParser::new()
            .parse(input.as_bytes(), &Limits::default())
            .unwrap()
            .unwrap();
        assert_eq!(head.header(b"x-a"), Some(&b"1"[..]));
        assert_eq!(head.header(b"X-B"), Some(&b"2"[..]));
        assert_eq!(head.header(b"nope"), None);
        assert_eq!(head.header_count(), 4);
    }

    #[test]
    fn values_are_trimmed_and_may_hold_tabs_and_obs_text() {
        let mut input = b"GET / HTTP/1.1\r\nHost: h\r\nX-Obs: caf\xe9 \x80\xff\r\n".to_vec();
        input.extend_from_slice(b"X-Pad: \t a \t b \t\r\nX-Empty:\r\nX-Blank:  \t \r\n\r\n");
        let s = ok(&input);
        let values: Vec<&[u8]> = s.headers.iter().map(|(_, v)| v.as_slice()).collect();
        assert_eq!(
            values,
            [&b"h"[..], b"caf\xe9 \x80\xff", b"a \t b", b"", b""]
        );
    }

    #[test]
    fn connection_and_keep_alive() {
        let ka = |version: &str, fields: &str| {
            ok(format!(
                "GET / {version}\r\nHost: h\r\n{}\r\n",
                field(fields)
            ))
            .keep_alive
        };
        assert!(ka("HTTP/1.1", "X: y"));
        assert!(!ka("HTTP/1.1", "Connection: close"));
        assert!(!ka("HTTP/1.1", "Connection: Upgrade, CLOSE"));
        assert!(!ka("HTTP/1.1", "Connection: foo|Connection: close"));
        assert!(ka("HTTP/1.1", "Connection: keep-alive"));
        assert!(ka("HTTP/1.1", "Connection: closed"));
        assert!(!ka("HTTP/1.0", "X: y"));
        assert!(ka("HTTP/1.0", "Connection: keep-alive"));
        assert!(ka("HTTP/1.0", "Connection: Keep-Alive"));
        assert!(ka("HTTP/1.0", "Connection: foo,,keep-alive ,"));
        assert!(ka("HTTP/1.0", "Connection: foo|Connection: keep-alive"));
        assert!(!ka("HTTP/1.0", "Connection: keep-alive, close"));
        assert!(!ka("HTTP/1.0", "Connection: keep-alive|Connection: close"));
    }

    #[test]
    fn http10_needs_no_host() {
        let s = ok("GET / HTTP/1.0\r\n\r\n");
        assert_eq!(s.version, Version::Http10);
        assert!(s.headers.is_empty());
    }

    #[test]
    fn expect_100_continue_only_on_11() {
        let ec = |version: &str, fields: &str| {
            ok(format!(
                "POST / {version}\r\nHost: h\r\nContent-Length: 1\r\n{}\r\n",
                field(fields)
            ))
            .expect_continue
        };
        assert!(ec("HTTP/1.1", "Expect: 100-continue"));
        assert!(ec("HTTP/1.1", "Expect: 100-Continue"));
        assert!(!ec("HTTP/1.1", "Expect: 200-ok"));
        assert!(!ec("HTTP/1.1", "X: y"));
        assert!(!ec("HTTP/1.0", "Expect: 100-continue"));
    }

    #[test]
    fn head_method() {
        assert!(ok("HEAD / HTTP/1.1\r\nHost: h\r\n\r\n").is_head);
        let s = ok("head / HTTP/1.1\r\nHost: h\r\n\r\n");
        assert!(!s.is_head, "methods are case-sensitive");
        assert!(ok("M-SEARCH! / HTTP/1.1\r\nHost: h\r\n\r\n").method == b"M-SEARCH!");
    }

    #[test]
    fn host_values() {
        for host in [
            "",
            "example.com",
            "example.com:8080",
            "[::1]:80",
            "127.0.0.1",
            "xn--bcher-kva.ch",
        ] {
            ok(format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n"));
        }
        for host in ["a b", "a/b", "a@b", "a?b", "a#b", "a\"b"] {
            assert_eq!(
                status(format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n")),
                400,
                "{host}"
            );
        }
    }

    #[test]
    fn framing_content_length() {
        assert_eq!(body_of("Content-Length: 0"), BodyFraming::None);
        assert_eq!(body_of("Content-Length: 42"), BodyFraming::Length(42));
        assert_eq!(body_of("Content-Length: 007"), BodyFraming::Length(7));
        assert_eq!(
            body_of("Content-Length: 5|Content-Length: 5"),
            BodyFraming::Length(5)
        );
        assert_eq!(body_of("Content-Length: 5, 5"), BodyFraming::Length(5));
        assert_eq!(
            body_of("content-length: 5,5|CONTENT-LENGTH: 5"),
            BodyFraming::Length(5)
        );
        let exact = format!("Content-Length: {}", crate::limits::DEFAULT_MAX_BODY);
        assert_eq!(
            body_of(&exact),
            BodyFraming::Length(crate::limits::DEFAULT_MAX_BODY)
        );
    }

    #[test]
    fn framing_chunked() {
        assert_eq!(body_of("Transfer-Encoding: chunked"), BodyFraming::Chunked);
        assert_eq!(body_of("Transfer-Encoding: CHUNKED"), BodyFraming::Chunked);
        assert_eq!(
            body_of("transfer-encoding: , chunked ,"),
            BodyFraming::Chunked
        );
        assert_eq!(
            body_of("Transfer-Encoding:|Transfer-Encoding: chunked"),
            BodyFraming::Chunked
        );
    }

    #[test]
    fn limits_at_the_boundary_are_accepted() {
        let l = small();
        // Request line of exactly 32 bytes.
        let line = format!("GET /{} HTTP/1.0", "a".repeat(32 - 14));
        assert_eq!(line.len(), 32);
        ok_with(format!("{line}\r\n\r\n"), &l);
        // Head of exactly 96 bytes.
        let head = format!(
            "GET / HTTP/1.1\r\nHost: h\r\nX: {}\r\n\r\n",
            "v".repeat(96 - 32)
        );
        assert_eq!(head.len(), 96);
        ok_with(&head, &l);
        // Exactly 3 fields; body of exactly max_body.
        ok_with(
            "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nContent-Length: 1000\r\n\r\n",
            &l,
        );
    }

    #[test]
    fn many_fields_use_the_heap_path() {
        let fields: String = (0..90).map(|i| format!("X-{i}: {i}\r\n")).collect();
        let s = ok(format!("GET / HTTP/1.1\r\nHost: h\r\n{fields}\r\n"));
        assert_eq!(s.headers.len(), 91);
        assert_eq!(s.headers[90], (b"X-89".to_vec(), b"89".to_vec()));
    }

    // ---- refusals ----

    #[test]
    fn request_line_too_long_is_414_before_the_head_ends() {
        let l = small();
        let line = format!("GET /{} HTTP/1.0", "a".repeat(32 - 13));
        assert_eq!(err_with(format!("{line}\r\n\r\n"), &l), UriTooLong);
        // As soon as 33 bytes without a line end are buffered: no need for the rest.
        let partial = format!("GET /{}", "a".repeat(28));
        assert_eq!(
            seen(HeadParser::new().parse(partial.as_bytes(), &l)),
            Err(UriTooLong)
        );
        assert_eq!(
            HeadParser::new()
                .parse(&partial.as_bytes()[..32], &l)
                .unwrap()
                .map(|_| ()),
            None
        );
        // Default limit: 8 KiB.
        let long = format!("GET /{} HTTP/1.1\r\nHost: h\r\n\r\n", "a".repeat(8 * 1024));
        assert_eq!(err(long), UriTooLong);
    }

    #[test]
    fn head_too_large_is_431_as_soon_as_exceeded() {
        let l = small();
        let head = format!(
            "GET / HTTP/1.1\r\nHost: h\r\nX: {}\r\n\r\n",
            "v".repeat(96 - 31)
        );
        assert_eq!(err_with(&head, &l), HeadersTooLarge);
        let partial = format!("GET / HTTP/1.1\r\nX: {}", "v".repeat(100));
        assert_eq!(
            seen(HeadParser::new().parse(partial.as_bytes(), &l)),
            Err(HeadersTooLarge)
        );
        // Leading empty lines count.
        assert_eq!(err_with("\r\n".repeat(49), &l), HeadersTooLarge);
        let big: String = (0..70)
            .map(|i| format!("X-{i}: {}\r\n", "v".repeat(1000)))
            .collect();
        assert_eq!(err(get(&big)), HeadersTooLarge);
    }

    #[test]
    fn too_many_fields_is_431() {
        let l = small();
        assert_eq!(
            err_with(
                "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n",
                &l
            ),
            HeadersTooLarge
        );
        let fields: String = (0..100).map(|i| format!("X-{i}: {i}\r\n")).collect();
        assert_eq!(err(get(&fields)), HeadersTooLarge);
    }

    #[test]
    fn bare_lf_and_bare_cr_are_400() {
        for input in [
            &b"GET / HTTP/1.1\nHost: h\r\n\r\n"[..],
            b"GET / HTTP/1.1\r\nHost: h\n\r\n",
            b"GET / HTTP/1.1\r\nHost: h\r\n\n",
            b"GET / HTTP/1.1\r\nHost: h\n\n",
            b"\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
            b"\r\n\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
            b"\rGET / HTTP/1.1\r\nHost: h\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n",
            b"GET /\r HTTP/1.1\r\nHost: h\r\n\r\n",
            b"GET / HTTP/1.1\r\r\nHost: h\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: h\r\n\r\r\n",
        ] {
            assert_eq!(status(input), 400, "{:?}", show(input));
        }
    }

    #[test]
    fn control_bytes_are_400_but_tab_in_values_is_fine() {
        ok(get(&field("X: a\tb")));
        for input in [
            get(&field("X: a\0b")),
            get(&field("X: a\x01b")),
            get(&field("X: a\x7fb")),
            get(&field("X: \x1b[31m")),
            get(&field("X\0: a")),
            "GET /\0 HTTP/1.1\r\nHost: h\r\n\r\n".into(),
            "GET /\x7f HTTP/1.1\r\nHost: h\r\n\r\n".into(),
            "G\x01T / HTTP/1.1\r\nHost: h\r\n\r\n".into(),
            "GET /\tHTTP/1.1\r\nHost: h\r\n\r\n".into(),
            "GET\t/ HTTP/1.1\r\nHost: h\r\n\r\n".into(),
        ] {
            assert_eq!(status(&input), 400, "{input:?}");
        }
    }

    #[test]
    fn field_line_syntax_errors_are_400() {
        for fields in [
            "X: a|  folded",
            "X: a|\tfolded",
            "X : a",
            "X\t: a",
            ": a",
            "X a",
            "X(y): a",
            "X\u{e9}: a",
        ] {
            assert_eq!(status_of(fields), 400, "{fields:?}");
        }
        assert_eq!(status("GET / HTTP/1.1\r\n Host: h\r\n\r\n"), 400);
    }

    /// httparse's reading of a field section that `parse_fields` accepted: (name, value) pairs.
    fn httparse_fields(section: &[u8]) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut slots = vec![httparse::EMPTY_HEADER; 200];
        match httparse::parse_headers(section, &mut slots) {
            Ok(httparse::Status::Complete((n, h))) if n == section.len() => Some(
                h.iter()
                    .map(|h| (h.name.as_bytes().to_vec(), trim_ows(h.value).to_vec()))
                    .collect(),
            ),
            _ => None,
        }
    }

    #[test]
    fn field_lines_read_as_httparse_reads_them() {
        // Field sections built from pieces that matter to the field grammar (tchars and
        // non-tchars in names, OWS and obs-text in values, empty values, colons in values),
        // in every mix a small PRNG makes: wherever we accept a head, httparse accepts the same
        // section and gives the same names and values; wherever httparse refuses one, so do we.
        let names: [&[u8]; 8] = [
            b"Host",
            b"X-A",
            b"a!#$%&'*+-.^_`|~9",
            b"X A",
            b"X(y)",
            b"",
            b"\xe9",
            b"Ab:",
        ];
        let values: [&[u8]; 9] = [
            b"v",
            b"",
            b" v ",
            b"\tv\t",
            b"a b",
            b"\xe9\xff",
            b"a:b",
            b"  ",
            b"x\ty",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let (mut accepted, mut long) = (0, 0);
        for _ in 0..20_000 {
            let mut section = Vec::new();
            // Now and then more lines than the pre-scan keeps the ends of.
            let lines = if next(10) == 0 {
                28 + next(12)
            } else {
                1 + next(5)
            };
            // (Long ones mostly from valid names, so that some are accepted.)
            let pick = if lines > 5 { 3 } else { names.len() };
            for _ in 0..lines {
                section.extend_from_slice(names[next(pick)]);
                section.push(b':');
                section.extend_from_slice(values[next(values.len())]);
                section.extend_from_slice(b"\r\n");
            }
            section.extend_from_slice(b"\r\n");
            let mut head = b"GET / HTTP/1.0\r\n".to_vec();
            let from = head.len();
            head.extend_from_slice(&section);
            let mut ends = LineEnds([0; LINE_ENDS]);
            let ours = prescan(&head, from - 1, &mut ends)
                .and_then(|n| parse_fields(&head, from, n, &ends, Vec::new()));
            let theirs = httparse_fields(&section);
            match (ours, theirs) {
                (Ok(fields), Some(want)) => {
                    let got: Vec<_> = fields
                        .iter()
                        .map(|(n, v)| (head[r(n)].to_vec(), head[r(v)].to_vec()))
                        .collect();
                    assert_eq!(got, want, "{:?}", String::from_utf8_lossy(&section));
                    accepted += 1;
                    long += usize::from(fields.len() >= LINE_ENDS);
                }
                (Err(_), None) => {}
                // The pre-scan is stricter than httparse in one place only: a name must not be
                // empty (httparse takes ":v" as a field with no name).
                (Err(_), Some(want)) if want.iter().any(|(n, _)| n.is_empty()) => {}
                (ours, theirs) => panic!(
                    "{:?}: ours {:?}, httparse {:?}",
                    String::from_utf8_lossy(&section),
                    ours.is_ok(),
                    theirs.is_some()
                ),
            }
        }
        assert!(
            accepted > 500,
            "too few accepted sections to compare: {accepted}"
        );
        assert!(
            long > 50,
            "too few sections past the kept line ends: {long}"
        );
    }

    #[test]
    fn invalid_methods_are_400() {
        for line in [
            "G(T / HTTP/1.1",
            " / HTTP/1.1",
            "GE T / HTTP/1.1",
            "G\u{e9}T / HTTP/1.1",
            "GET",
        ] {
            assert_eq!(
                status(format!("{line}\r\nHost: h\r\n\r\n")),
                400,
                "{line:?}"
            );
        }
    }

    #[test]
    fn invalid_targets_are_400() {
        for line in [
            "GET a HTTP/1.1",
            "GET /a b HTTP/1.1",
            "GET  / HTTP/1.1",
            "GET / HTTP/1.1 ",
            "GET  HTTP/1.1",
            "GET /#frag HTTP/1.1",
            "GET * HTTP/1.1",
            "OPTIONS *x HTTP/1.1",
            "CONNECT example.com:443 HTTP/1.1",
            "CONNECT / HTTP/1.1",
            "GET example.com:443 HTTP/1.1",
            "GET http:// HTTP/1.1",
            "GET http:///x HTTP/1.1",
            "GET http://?q HTTP/1.1",
            "GET http://user@h/ HTTP/1.1",
            "GET http://h\\x/ HTTP/1.1",
            "GET ftp://h/ HTTP/1.1",
            "GET http:/h/ HTTP/1.1",
        ] {
            assert_eq!(
                status(format!("{line}\r\nHost: h\r\n\r\n")),
                400,
                "{line:?}"
            );
        }
        assert_eq!(status(b"GET /\x80 HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
        assert_eq!(status(b"GET /\xff HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
    }

    #[test]
    fn versions() {
        let v = |version: &str| status(format!("GET / {version}\r\nHost: h\r\n\r\n"));
        for unsupported in ["HTTP/2.0", "HTTP/0.9", "HTTP/3.0", "HTTP/9.9", "HTTP/0.1"] {
            assert_eq!(v(unsupported), 505, "{unsupported}");
        }
        for bad in [
            "HTTP/1",
            "HTTP/2",
            "http/1.1",
            "HTTP/1.10",
            "HTTP/11",
            "HTTP/a.b",
            "HTTP 1.1",
            "HTTPS/1.1",
            "",
        ] {
            assert_eq!(v(bad), 400, "{bad:?}");
        }
        assert_eq!(status("GET /\r\n\r\n"), 400, "HTTP/0.9-style line");
        // An HTTP/2 prior-knowledge preface gets 505, not 400.
        assert_eq!(status("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 505);
    }

    #[test]
    fn higher_minor_versions_of_http1_are_served_as_http11() {
        // RFC 9110 §2.5: a recipient SHOULD handle a higher minor version as its own highest.
        for minor in 2..=9 {
            let line = format!("GET /x?q HTTP/1.{minor}");
            let s = ok(format!("{line}\r\nHost: h\r\n\r\n"));
            assert_eq!(s.version, Version::Http11, "{line}");
            assert_eq!(s.version.as_str(), "HTTP/1.1");
            assert!(s.keep_alive, "persistent by default, as 1.1: {line}");
            assert_eq!((&s.path[..], &s.query[..]), (&b"/x"[..], &b"q"[..]));
            // 1.1's rules with it: Host is required, chunked is understood.
            assert_eq!(
                status(format!("{line}\r\n\r\n")),
                400,
                "{line} without Host"
            );
            let s = ok(format!(
                "POST / HTTP/1.{minor}\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
            ));
            assert_eq!(s.body, BodyFraming::Chunked);
        }
        // An absolute-form target without a path still reads "/" out of the version.
        assert_eq!(ok("GET http://h HTTP/1.5\r\nHost: h\r\n\r\n").path, b"/");
    }

    #[test]
    fn a_bad_request_line_is_refused_as_soon_as_it_is_complete() {
        // Each of these lines is complete and wrong: the parser answers before any header
        // field (or the empty line that ends the head) arrives. parse3 checks it whole, byte by
        // byte (the error comes at the line's LF) and with trailing bytes.
        for (input, want) in [
            (&b"GET /\r\n"[..], 400),
            (b"GET /\r\n\xe2\r\n", 400),
            (b"GET /\r\n\xe2", 400),
            (b"GET / HTTP/2.0\r\n", 505),
            (b"GET / HTTP/2.0\r\nHost: h\r\n", 505),
            (b"GET / HTTP/1.10\r\nHost", 400),
            (b"G@T / HTTP/1.1\r\n", 400),
            (b"GET  / HTTP/1.1\r\n", 400),
            (b"GET /a\x7fb HTTP/1.1\r\n", 400),
            (b"GET * HTTP/1.1\r\n", 400),
            (b"CONNECT h:443 HTTP/1.1\r\n", 400),
            (b"\r\nGET ftp://h/ HTTP/1.1\r\nX: y\r\n", 400),
        ] {
            assert_eq!(err(input).status(), want, "{:?}", show(input));
        }
        // At the line's LF, not before.
        let mut p = HeadParser::new();
        assert!(matches!(p.parse(b"GET /\r", &Limits::default()), Ok(None)));
        assert!(p.parse(b"GET /\r\n", &Limits::default()).is_err());
        // A good line still waits for the rest of the head.
        assert_eq!(parse3(b"GET / HTTP/1.1\r\n", &Limits::default()), Ok(None));
        assert_eq!(
            parse3(b"GET / HTTP/1.9\r\nHost: h\r\n", &Limits::default()),
            Ok(None)
        );
    }

    #[test]
    fn host_rules() {
        assert_eq!(status("GET / HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(status("GET / HTTP/1.1\r\nX: y\r\n\r\n"), 400);
        assert_eq!(status_of("Host: other"), 400);
        assert_eq!(status("GET / HTTP/1.0\r\nHost: a\r\nhost: a\r\n\r\n"), 400);
    }

    #[test]
    fn content_length_refusals() {
        for value in [
            "+5",
            "-1",
            "0x5",
            "5 5",
            "",
            " ",
            "5a",
            "a",
            "5.0",
            "5,",
            ",5",
            "5,,5",
            "1e3",
            "18446744073709551616",
            "99999999999999999999999",
        ] {
            assert_eq!(
                status_of(&format!("Content-Length: {value}")),
                400,
                "{value:?}"
            );
        }
        assert_eq!(status_of("Content-Length: 5, 6"), 400);
        assert_eq!(status_of("Content-Length: 5|Content-Length: 6"), 400);
        assert_eq!(
            status_of("Content-Length: 5|Transfer-Encoding: chunked"),
            400
        );
        assert_eq!(
            status_of("Transfer-Encoding: chunked|Content-Length: 0"),
            400
        );
        let over = format!("Content-Length: {}", crate::limits::DEFAULT_MAX_BODY + 1);
        assert_eq!(status_of(&over), 413);
        assert_eq!(status_of("Content-Length: 18446744073709551615"), 413);
        let l = Limits {
            max_header_bytes: 1000,
            ..small()
        };
        assert_eq!(
            err_with(get(&field("Content-Length: 1001")), &l),
            PayloadTooLarge
        );
    }

    #[test]
    fn transfer_encoding_refusals() {
        for value in [
            "gzip",
            "chunked, gzip",
            "chunked, chunked",
            "chunked;a=b",
            "identity",
            "",
            ",",
            "x y, chunked",
            "chunked, \u{e9}",
        ] {
            assert_eq!(
                status_of(&format!("Transfer-Encoding: {value}")),
                400,
                "{value:?}"
            );
        }
        assert_eq!(
            status_of("Transfer-Encoding: chunked|Transfer-Encoding: chunked"),
            400
        );
        assert_eq!(
            status_of("Transfer-Encoding: chunked|Transfer-Encoding: gzip"),
            400
        );
        assert_eq!(status_of("Transfer-Encoding: gzip, chunked"), 501);
        assert_eq!(
            status_of("Transfer-Encoding: gzip;q=1, deflate, chunked"),
            501
        );
        assert_eq!(
            status_of("Transfer-Encoding: gzip|Transfer-Encoding: chunked"),
            501
        );
        assert_eq!(
            status("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
            400
        );
    }

    // ---- the incremental machinery ----

    #[test]
    fn trickled_bytes_are_scanned_once() {
        let input = get(&field("X: 1|Y: 2"));
        let input = input.as_bytes();
        let mut p = HeadParser::new();
        for i in 0..input.len() {
            assert!(p.parse(&input[..i], &Limits::default()).unwrap().is_none());
            assert!(p.scanned <= i, "never past the buffer");
            assert!(
                p.scanned + 1 >= i,
                "scanned up to the end (bar a held-back CR)"
            );
        }
        assert!(p.parse(input, &Limits::default()).unwrap().is_some());
        assert_eq!(
            (p.scanned, p.start, p.line_lf),
            (0, None, None),
            "reset after a head"
        );
    }

    #[test]
    fn replaced_buffer_without_reset_starts_over() {
        let mut p = HeadParser::new();
        let l = Limits::default();
        assert!(p
            .parse(b"POST /long/path HTTP/1.1\r\nHost: h\r\n", &l)
            .unwrap()
            .is_none());
        let (head, n) = p.parse(b"GET / HTTP/1.0\r\n\r\n", &l).unwrap().unwrap();
        assert_eq!((head.method(), n), (&b"GET"[..], 18));
        // reset() after a partial parse, then a different buffer.
        assert!(p.parse(b"GET / HTTP/1.1\r\nHost:", &l).unwrap().is_none());
        p.reset();
        assert!(p
            .parse(b"\r\n\r\nGET / HTTP/1.0\r\n\r\n", &l)
            .unwrap()
            .is_some());
    }

    #[test]
    fn parser_is_reusable_for_pipelined_requests() {
        let l = Limits::default();
        let mut buf =
            b"GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n".to_vec();
        let mut p = HeadParser::new();
        let (h1, n) = p.parse(&buf, &l).unwrap().unwrap();
        assert_eq!(h1.path(), b"/1");
        buf.drain(..n);
        let (h2, n) = p.parse(&buf, &l).unwrap().unwrap();
        assert_eq!((h2.path(), n), (&b"/2"[..], buf.len()));
    }
}
