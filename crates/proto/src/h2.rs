//! An HTTP/2 stream's request as the wire-neutral [`RequestHead`]: the fields HPACK decoded
//! (the `h2` crate has checked their syntax and the pseudo-headers already) become the same
//! head an HTTP/1.1 request line and field section make, so the WSGI bridge builds the environ
//! the one way it knows. What differs from HTTP/1.1 is decided here:
//! - `:authority` becomes the `Host` field (RFC 9113 §8.3.1); a `host` field that names another
//!   entity makes the request malformed (same section), and both pass the one Host check
//!   HTTP/1.1's `Host` passes ([`crate::host`]: no userinfo, no spaces);
//! - several `cookie` fields are joined with `"; "` into one (RFC 9113 §8.2.3), so the app
//!   sees one `HTTP_COOKIE` as from an HTTP/1.1 client; each counts as a field toward
//!   `Limits::max_headers`, as each field line does on HTTP/1.1;
//! - `CONNECT` is refused, as on HTTP/1.1 (a WSGI app cannot tunnel);
//! - the body's framing: a `content-length` if the client sent one, else "read until the end
//!   of the stream" ([`BodyFraming::Chunked`] stands for it: length unknown until the end);
//!   DATA frames carry it, never `h1` chunks.
//!
//! Pure data in, data out: unit-tested without sockets.

use std::ops::Range;

use crate::h1::parse::parse_content_length;
use crate::host::{same_host, valid_host};
use crate::token::list_elements;
use crate::{BodyFraming, Limits, ProtoError, RequestHead, Version};

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Whether a connection's first bytes are the HTTP/2 preface: `Some(true)` (all of it),
/// `Some(false)` (not it: HTTP/1), `None` (a prefix of it so far: wait for more).
pub fn starts_with_preface(buf: &[u8]) -> Option<bool> {
    let n = buf.len().min(PREFACE.len());
    if buf[..n] != PREFACE[..n] {
        Some(false)
    } else if n == PREFACE.len() {
        Some(true)
    } else {
        None
    }
}

/// The request of one stream, as the `h2` crate hands it over (pseudo-headers apart).
pub struct StreamRequest<'a, F> {
    pub method: &'a [u8],
    /// `:path`: origin-form, or `*` for OPTIONS.
    pub path: &'a [u8],
    /// `:authority`, if given.
    pub authority: Option<&'a [u8]>,
    /// The regular fields, names lower-case (HTTP/2 requires it).
    pub fields: F,
    /// The HEADERS frame ended the stream: no body follows.
    pub end_of_stream: bool,
}

fn span(start: usize, end: usize) -> Result<Range<u32>, ProtoError> {
    match (u32::try_from(start), u32::try_from(end)) {
        (Ok(s), Ok(e)) => Ok(s..e),
        _ => Err(ProtoError::HeadersTooLarge),
    }
}

/// Build the head of one stream. Refuses what HTTP/1.1's parser would refuse for the same
/// reason (a target too long, too many fields, a bad `content-length`), with the same error.
pub fn request_head<'a, F>(
    req: StreamRequest<'a, F>,
    limits: &Limits,
) -> Result<RequestHead, ProtoError>
where
    F: Iterator<Item = (&'a [u8], &'a [u8])>,
{
    check_pseudo(req.method, req.authority, req.path, limits)?;
    let target = req.path;
    let mut buf = Vec::with_capacity(req.method.len() + target.len() + 256);
    buf.extend_from_slice(req.method);
    let method = span(0, buf.len())?;
    let t0 = buf.len();
    buf.extend_from_slice(target);
    let t1 = buf.len();
    let q = target.iter().position(|&b| b == b'?');
    let (path, query) = match q {
        Some(i) => (span(t0, t0 + i)?, span(t0 + i + 1, t1)?),
        None => (span(t0, t1)?, span(t1, t1)?),
    };

    let mut headers = Vec::new();
    let mut host_seen = false;
    let mut length: Option<u64> = None;
    let mut forwarding = false;
    let mut cookie_parts: Vec<&[u8]> = Vec::new();
    let mut expect_continue = false;
    // Every field counts toward the limit, each `cookie` too (as each field line on HTTP/1.1).
    for (seen, (name, value)) in req.fields.enumerate() {
        if seen >= limits.max_headers || too_long(name, value, limits) {
            return Err(ProtoError::HeadersTooLarge);
        }
        if name == b"cookie" {
            cookie_parts.push(value);
            continue;
        }
        if name == b"content-length" {
            let n = parse_content_length(value)?;
            if length.is_some_and(|l| l != n) {
                return Err(ProtoError::BadRequest("h2: conflicting content-length"));
            }
            length = Some(n);
        }
        if name == b"host" {
            check_host_field(host_seen, value, req.authority)?;
            host_seen = true;
        }
        if name == b"expect" {
            expect_continue |=
                list_elements(value).any(|e| e.eq_ignore_ascii_case(b"100-continue"));
        }
        forwarding |= crate::forwarded::is_forwarding_header(name);
        push_field(&mut buf, &mut headers, name, value)?;
    }
    if !cookie_parts.is_empty() {
        push_cookie(&mut buf, &mut headers, &cookie_parts)?;
    }
    if !host_seen {
        if let Some(a) = req.authority {
            push_field(&mut buf, &mut headers, b"host", a)?;
        }
    }
    if buf.len()
        > limits
            .max_header_bytes
            .saturating_add(limits.max_request_line)
    {
        return Err(ProtoError::HeadersTooLarge);
    }
    if let Some(n) = length {
        if n > limits.max_body {
            return Err(ProtoError::PayloadTooLarge);
        }
    }
    let body = match (req.end_of_stream, length) {
        (true, _) | (false, Some(0)) => BodyFraming::None,
        (false, Some(n)) => BodyFraming::Length(n),
        (false, None) => BodyFraming::Chunked,
    };
    let is_head = req.method == b"HEAD";
    Ok(RequestHead {
        buf,
        method,
        target: span(t0, t1)?,
        authority: span(t0, t0)?,
        path,
        query,
        headers,
        version: Version::Http2,
        body,
        keep_alive: true,
        // An interim 100 is owed only while a body is to come (RFC 9110 §10.1.1).
        expect_continue: expect_continue && body != BodyFraming::None,
        is_head,
        forwarding,
    })
}

/// The pseudo-header fields' checks: no CONNECT, a valid `:authority`, an origin-form `:path`
/// (or `*` for OPTIONS) within `--limit-request-line` (RFC 9113 §8.3.1).
fn check_pseudo(
    method: &[u8],
    authority: Option<&[u8]>,
    target: &[u8],
    limits: &Limits,
) -> Result<(), ProtoError> {
    if method == b"CONNECT" {
        return Err(ProtoError::BadRequest("h2: CONNECT is not supported"));
    }
    if authority.is_some_and(|a| !valid_host(a)) {
        return Err(ProtoError::BadRequest("h2: invalid :authority"));
    }
    if target.len() > limits.max_request_line {
        return Err(ProtoError::UriTooLong);
    }
    if target != b"*" && !target.starts_with(b"/") {
        return Err(ProtoError::BadRequest("h2: :path is not origin-form"));
    }
    if target == b"*" && method != b"OPTIONS" {
        return Err(ProtoError::BadRequest(
            "h2: :path * on a method other than OPTIONS",
        ));
    }
    Ok(())
}

/// A `host` field: one at most, valid, and the same host as `:authority` (RFC 9113 §8.3.1).
fn check_host_field(
    seen_before: bool,
    value: &[u8],
    authority: Option<&[u8]>,
) -> Result<(), ProtoError> {
    if seen_before {
        return Err(ProtoError::BadRequest("h2: more than one host field"));
    }
    if !valid_host(value) {
        return Err(ProtoError::BadRequest("h2: invalid host field"));
    }
    if authority.is_some_and(|a| !same_host(a, value)) {
        return Err(ProtoError::BadRequest("h2: host differs from :authority"));
    }
    Ok(())
}

/// The `cookie` fields of a stream as one field, joined with "; " (RFC 9113 §8.2.3), as an
/// HTTP/1.1 client sends it.
fn push_cookie(
    buf: &mut Vec<u8>,
    headers: &mut Vec<(Range<u32>, Range<u32>)>,
    parts: &[&[u8]],
) -> Result<(), ProtoError> {
    let n0 = buf.len();
    buf.extend_from_slice(b"cookie");
    let v0 = buf.len();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            buf.extend_from_slice(b"; ");
        }
        buf.extend_from_slice(part);
    }
    headers.push((span(n0, v0)?, span(v0, buf.len())?));
    Ok(())
}

/// Appends one field to the head's buffer and its name and value spans to `headers`.
fn push_field(
    buf: &mut Vec<u8>,
    headers: &mut Vec<(Range<u32>, Range<u32>)>,
    name: &[u8],
    value: &[u8],
) -> Result<(), ProtoError> {
    let n0 = buf.len();
    buf.extend_from_slice(name);
    let v0 = buf.len();
    buf.extend_from_slice(value);
    headers.push((span(n0, v0)?, span(v0, buf.len())?));
    Ok(())
}

/// `Limits::max_field_bytes` for an HTTP/2 field: its name and value.
fn too_long(name: &[u8], value: &[u8], limits: &Limits) -> bool {
    name.len().saturating_add(value.len()) > limits.max_field_bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(fields: &[(&[u8], &[u8])], eos: bool) -> Result<RequestHead, ProtoError> {
        request_head(
            StreamRequest {
                method: b"GET",
                path: b"/a/b?x=1",
                authority: Some(b"example.org:8443"),
                fields: fields.iter().copied(),
                end_of_stream: eos,
            },
            &Limits::default(),
        )
    }

    #[test]
    fn a_field_longer_than_max_field_bytes_is_refused() {
        let at = |max: usize| {
            request_head(
                StreamRequest {
                    method: b"GET",
                    path: b"/",
                    authority: Some(b"h"),
                    fields: [(&b"x-a"[..], &b"12345"[..])].into_iter(),
                    end_of_stream: true,
                },
                &Limits {
                    max_field_bytes: max,
                    ..Limits::default()
                },
            )
        };
        assert!(at(8).is_ok());
        assert_eq!(at(7).unwrap_err(), ProtoError::HeadersTooLarge);
    }

    #[test]
    fn expect_100_continue_is_noted_only_while_a_body_is_to_come() {
        let expect: &[(&[u8], &[u8])] = &[(b"expect", b"100-Continue"), (b"content-length", b"5")];
        assert!(head(expect, false).unwrap().expect_continue);
        assert!(!head(expect, true).unwrap().expect_continue);
        assert!(
            !head(&[(b"content-length", b"5")], false)
                .unwrap()
                .expect_continue
        );
    }

    #[test]
    fn authority_becomes_host_and_cookies_join() {
        let h = head(
            &[
                (b"cookie", b"a=1"),
                (b"accept", b"*/*"),
                (b"cookie", b"b=2"),
            ],
            true,
        )
        .unwrap();
        assert_eq!(h.method(), b"GET");
        assert_eq!(h.path(), b"/a/b");
        assert_eq!(h.query(), b"x=1");
        assert_eq!(h.host(), Some(&b"example.org:8443"[..]));
        assert_eq!(h.header(b"cookie"), Some(&b"a=1; b=2"[..]));
        assert_eq!(h.version.as_str(), "HTTP/2");
        assert_eq!(h.body, BodyFraming::None);
    }

    #[test]
    fn preface_detection() {
        assert_eq!(starts_with_preface(b"GET / HTTP/1.1\r\n"), Some(false));
        assert_eq!(starts_with_preface(b"PRI * HTTP/2"), None);
        assert_eq!(starts_with_preface(b""), None);
        let mut whole = PREFACE.to_vec();
        whole.extend_from_slice(b"\0\0\x12\x04");
        assert_eq!(starts_with_preface(&whole), Some(true));
        assert_eq!(starts_with_preface(b"PRX"), Some(false));
    }

    #[test]
    fn body_framing() {
        assert_eq!(head(&[], false).unwrap().body, BodyFraming::Chunked);
        let h = head(&[(b"content-length", b"12")], false).unwrap();
        assert_eq!(h.body, BodyFraming::Length(12));
        assert!(head(&[(b"content-length", b"x")], false).is_err());
        assert!(head(
            &[(b"content-length", b"1"), (b"content-length", b"2")],
            false
        )
        .is_err());
    }

    fn with(
        method: &[u8],
        authority: Option<&[u8]>,
        fields: &[(&[u8], &[u8])],
    ) -> Result<RequestHead, ProtoError> {
        request_head(
            StreamRequest {
                method,
                path: b"/",
                authority,
                fields: fields.iter().copied(),
                end_of_stream: true,
            },
            &Limits::default(),
        )
    }

    #[test]
    fn a_host_field_naming_the_authority_is_kept_once() {
        let h = head(&[(b"host", b"Example.org:8443")], true).unwrap();
        assert_eq!(h.host(), Some(&b"Example.org:8443"[..]));
        assert_eq!(h.headers().filter(|(n, _)| *n == b"host").count(), 1);
        // Without :authority, the host field is the host.
        let h = with(b"GET", None, &[(b"host", b"other")]).unwrap();
        assert_eq!(h.host(), Some(&b"other"[..]));
    }

    #[test]
    fn a_host_field_naming_another_entity_is_malformed() {
        let e = head(&[(b"host", b"other")], true).unwrap_err();
        assert_eq!(e.status(), 400);
        let two: &[(&[u8], &[u8])] = &[(b"host", b"a"), (b"host", b"a")];
        assert_eq!(with(b"GET", None, two).unwrap_err().status(), 400);
    }

    #[test]
    fn authority_and_host_pass_the_http1_host_check() {
        for bad in [
            &b"good.example@evil.example"[..],
            b"user:pw@example.org",
            b"a b",
        ] {
            assert_eq!(with(b"GET", Some(bad), &[]).unwrap_err().status(), 400);
            assert_eq!(
                with(b"GET", None, &[(b"host", bad)]).unwrap_err().status(),
                400
            );
        }
    }

    #[test]
    fn connect_is_refused() {
        let e = with(b"CONNECT", Some(b"example.org:443"), &[]).unwrap_err();
        assert_eq!(e.status(), 400);
    }

    #[test]
    fn cookie_fields_count_toward_the_field_limit() {
        let limits = Limits {
            max_headers: 3,
            ..Limits::default()
        };
        let cookies: Vec<(&[u8], &[u8])> = vec![(b"cookie", b"a=1"); 4];
        let r = request_head(
            StreamRequest {
                method: b"GET",
                path: b"/",
                authority: None,
                fields: cookies.iter().copied(),
                end_of_stream: true,
            },
            &limits,
        );
        assert_eq!(r.unwrap_err(), ProtoError::HeadersTooLarge);
        let r = request_head(
            StreamRequest {
                method: b"GET",
                path: b"/",
                authority: None,
                fields: cookies[..3].iter().copied(),
                end_of_stream: true,
            },
            &limits,
        );
        assert_eq!(r.unwrap().header(b"cookie"), Some(&b"a=1; a=1; a=1"[..]));
    }

    #[test]
    fn bad_paths_are_refused() {
        let r = request_head(
            StreamRequest {
                method: b"GET",
                path: b"http://x/",
                authority: None,
                fields: std::iter::empty(),
                end_of_stream: true,
            },
            &Limits::default(),
        );
        assert!(r.is_err());
    }
}
