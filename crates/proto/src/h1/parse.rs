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
//!
//! This module owns the scan and the head's assembly and limits; the request line
//! (`request_line`), the byte rules and field lines (`fields`) and the framing fields
//! (`framing`) are its submodules.

mod fields;
mod framing;
mod request_line;

use std::ops::Range;

use memchr::memchr;

use crate::head::spare_buffers;
use crate::token::{zero_bytes, ONES};
use crate::{Limits, ProtoError, RequestHead};

use fields::{parse_fields, prescan, LineEnds, LINE_ENDS};
pub(crate) use framing::parse_content_length;
use framing::Framing;
use request_line::{parse_request_line, RequestLine};

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
mod tests;
