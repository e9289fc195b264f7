//! The request head: the one type every wire protocol produces and the WSGI bridge consumes.
//!
//! It owns one contiguous copy of the head's bytes and keeps ranges into it, so that handing a
//! parsed request to another thread is one allocation and no per-header strings. A dropped
//! head leaves its buffers to the next head built on the same thread (`spare_buffers`).

use std::ops::Range;

/// HTTP version of the request. Only 1.0 and 1.1 are accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
    /// A stream of an HTTP/2 connection (`h2.rs`): its head comes from HPACK-decoded fields,
    /// and the response is framed by the HTTP/2 layer, never by `h1/`.
    Http2,
    /// A request stream of an HTTP/3 connection (`h3.rs`): made like HTTP/2's, from
    /// QPACK-decoded fields.
    Http3,
}

impl Version {
    /// "HTTP/1.0" or "HTTP/1.1", exactly as SERVER_PROTOCOL wants it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Version::Http10 => "HTTP/1.0",
            Version::Http11 => "HTTP/1.1",
            Version::Http2 => "HTTP/2",
            Version::Http3 => "HTTP/3",
        }
    }
}

/// How the request body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFraming {
    /// No body (no Content-Length and no Transfer-Encoding, or Content-Length: 0).
    None,
    /// Content-Length: n (n > 0).
    Length(u64),
    /// Transfer-Encoding: chunked.
    Chunked,
}

/// The (name, value) ranges of a head's fields.
pub(crate) type FieldRanges = Vec<(Range<u32>, Range<u32>)>;

/// Largest buffers a dropped head leaves for the next one: a usual head and field count, not
/// the rare 64 KiB head.
const SPARE_BUF_MAX: usize = 4096;
const SPARE_FIELDS_MAX: usize = 64;

thread_local! {
    /// The two buffers of the last `RequestHead` dropped on this thread, for the next head
    /// built here. The loop thread parses every request and, for an inline call, drops its
    /// head too: two allocations and two frees fewer per request (about 200 instructions of a
    /// hello world's 15,000).
    static SPARE: std::cell::Cell<Option<(Vec<u8>, FieldRanges)>> =
        const { std::cell::Cell::new(None) };
}

/// Empty buffers for a new head: the last dropped head's, or new ones.
pub(crate) fn spare_buffers() -> (Vec<u8>, FieldRanges) {
    SPARE
        .try_with(|s| s.take())
        .ok()
        .flatten()
        .unwrap_or_default()
}

impl Drop for RequestHead {
    fn drop(&mut self) {
        if self.buf.capacity() > SPARE_BUF_MAX || self.headers.capacity() > SPARE_FIELDS_MAX {
            return;
        }
        let mut buf = std::mem::take(&mut self.buf);
        let mut headers = std::mem::take(&mut self.headers);
        buf.clear();
        headers.clear();
        // On a thread that is ending, the buffers are simply freed.
        let _ = SPARE.try_with(|s| s.set(Some((buf, headers))));
    }
}

/// A parsed, validated request head. Byte ranges index into `buf`.
#[derive(Debug, Clone)]
pub struct RequestHead {
    pub(crate) buf: Vec<u8>,
    pub(crate) method: Range<u32>,
    /// The whole request target as sent (e.g. "/a%20b?x=1").
    pub(crate) target: Range<u32>,
    /// The authority of an absolute-form target ("host:port"); empty for other forms.
    pub(crate) authority: Range<u32>,
    /// The path part of the target, still percent-encoded (for absolute-form targets, the path
    /// after the authority; "*" for OPTIONS *).
    pub(crate) path: Range<u32>,
    /// The query after '?', without the '?'; empty range if none.
    pub(crate) query: Range<u32>,
    /// (name, value) ranges; value has leading/trailing whitespace trimmed. In wire order.
    pub(crate) headers: FieldRanges,
    pub version: Version,
    pub body: BodyFraming,
    /// After this request, may the connection carry another one? (1.1 default yes unless
    /// `Connection: close`; 1.0 only with `Connection: keep-alive`.)
    pub keep_alive: bool,
    /// `Expect: 100-continue` was sent (and the version is 1.1).
    pub expect_continue: bool,
    /// The method is HEAD: the response carries no body.
    pub is_head: bool,
    /// A `Forwarded` or `X-Forwarded-*` field is present (noted while parsing, so a request
    /// without one costs nothing more: see `forwarded`).
    pub forwarding: bool,
}

impl RequestHead {
    pub fn method(&self) -> &[u8] {
        &self.buf[r(&self.method)]
    }
    pub fn target(&self) -> &[u8] {
        &self.buf[r(&self.target)]
    }
    pub fn path(&self) -> &[u8] {
        &self.buf[r(&self.path)]
    }
    /// The host the request is for (RFC 9112 §3.2.2, §7.2): the authority of an absolute-form
    /// target, which then replaces any Host header, else the Host header.
    pub fn host(&self) -> Option<&[u8]> {
        if self.authority.is_empty() {
            self.header(b"host")
        } else {
            Some(&self.buf[r(&self.authority)])
        }
    }
    /// Whether the target was in absolute form (its authority is then `host()`).
    pub fn has_absolute_target(&self) -> bool {
        !self.authority.is_empty()
    }
    pub fn query(&self) -> &[u8] {
        &self.buf[r(&self.query)]
    }
    /// Number of header fields.
    pub fn header_count(&self) -> usize {
        self.headers.len()
    }
    /// Header fields in wire order, names as sent (case preserved).
    pub fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.headers
            .iter()
            .map(move |(n, v)| (&self.buf[r(n)], &self.buf[r(v)]))
    }
    /// First value of a header, case-insensitive name match.
    pub fn header(&self, name: &[u8]) -> Option<&[u8]> {
        self.headers()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }
}

/// The most of a refused request's first line [`RequestHead::refused`] keeps: enough for any
/// usual request line, and a bound on what a client can make the server copy for a request it
/// refused.
pub const REFUSED_LINE_MAX: usize = 1024;

impl RequestHead {
    /// A stand-in head for a request the server refused before its head was parsed (a
    /// protocol error, a head too slow to come), for its access log line: the method, target
    /// and version are the words of the first line of `received` (at most
    /// [`REFUSED_LINE_MAX`] bytes of it), as sent, whatever they are (the log escapes them);
    /// no fields, no body. A missing word is empty; the version is 1.0 only when the third
    /// word says so.
    pub fn refused(received: &[u8]) -> RequestHead {
        let line = &received[..received.len().min(REFUSED_LINE_MAX)];
        let line = match memchr::memchr(b'\n', line) {
            Some(i) => &line[..i],
            None => line,
        };
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let (mut buf, headers) = spare_buffers();
        buf.extend_from_slice(line);
        let mut words = [0u32..0, 0..0, 0..0];
        let mut at = 0usize;
        for w in words.iter_mut() {
            while at < line.len() && line[at] == b' ' {
                at += 1;
            }
            let start = at;
            while at < line.len() && line[at] != b' ' {
                at += 1;
            }
            *w = start as u32..at as u32;
        }
        let [method, target, version] = words;
        let t = &line[r(&target)];
        let (path, query) = match memchr::memchr(b'?', t) {
            Some(q) => (
                target.start..target.start + q as u32,
                target.start + q as u32 + 1..target.end,
            ),
            None => (target.clone(), target.end..target.end),
        };
        RequestHead {
            version: if &line[r(&version)] == b"HTTP/1.0" {
                Version::Http10
            } else {
                Version::Http11
            },
            buf,
            method,
            target,
            authority: 0..0,
            path,
            query,
            headers,
            body: BodyFraming::None,
            keep_alive: false,
            expect_continue: false,
            is_head: false,
            forwarding: false,
        }
    }
}

/// `host[:port]` split at the port's colon (an IPv6 literal keeps its brackets and colons).
pub fn split_host_port(authority: &[u8]) -> (&[u8], Option<&[u8]>) {
    let port_colon = match authority.iter().rposition(|&b| b == b':') {
        Some(i) if !authority[i..].contains(&b']') => Some(i),
        _ => None,
    };
    match port_colon {
        Some(i) => (&authority[..i], Some(&authority[i + 1..])),
        None => (authority, None),
    }
}

#[inline]
fn r(range: &Range<u32>) -> Range<usize> {
    range.start as usize..range.end as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_request_keeps_the_words_of_its_first_line() {
        let h = RequestHead::refused(b"GET /a?b=1 HTTP/1.0\r\nHost: x\r\n\r\n");
        assert_eq!(h.method(), b"GET");
        assert_eq!(h.target(), b"/a?b=1");
        assert_eq!(h.path(), b"/a");
        assert_eq!(h.query(), b"b=1");
        assert_eq!(h.version, Version::Http10);
        assert_eq!(h.header_count(), 0);
        let h = RequestHead::refused(b"GET /\r\n\xe2\r\n");
        assert_eq!((h.method(), h.target()), (&b"GET"[..], &b"/"[..]));
        assert_eq!(h.version, Version::Http11);
        let h = RequestHead::refused(b"");
        assert_eq!(
            (h.method(), h.target(), h.query()),
            (&b""[..], &b""[..], &b""[..])
        );
        // A first line that never ends is cut at REFUSED_LINE_MAX.
        let long = [b'A'; 5000];
        let h = RequestHead::refused(&long);
        assert_eq!(h.method().len(), REFUSED_LINE_MAX);
        // Fed whole, cut anywhere after the first line, or with bytes after it: the same words.
        let whole = b"POST /x HTTP/1.1\r\n";
        for cut in whole.len()..whole.len() + 3 {
            let mut fed = whole.to_vec();
            fed.extend_from_slice(&b"\x00\xffZ"[..cut - whole.len()]);
            let h = RequestHead::refused(&fed);
            assert_eq!((h.method(), h.target()), (&b"POST"[..], &b"/x"[..]));
        }
    }

    #[test]
    fn host_and_port() {
        assert_eq!(split_host_port(b"a.example"), (&b"a.example"[..], None));
        assert_eq!(split_host_port(b"a:8080"), (&b"a"[..], Some(&b"8080"[..])));
        assert_eq!(split_host_port(b"[::1]"), (&b"[::1]"[..], None));
        assert_eq!(
            split_host_port(b"[::1]:443"),
            (&b"[::1]"[..], Some(&b"443"[..]))
        );
    }
}
