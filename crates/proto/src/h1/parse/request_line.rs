//! The request line: `method SP request-target SP HTTP-version` (RFC 9112 §3), its target's
//! form (origin, absolute, asterisk) and the ranges of its method, target, authority, path and
//! query.

use std::ops::Range;

use crate::host::valid_host;
use crate::token::is_token;
use crate::{ProtoError, Version};

use super::{bad, find_near, rng};

pub(super) struct RequestLine {
    pub(super) method: Range<u32>,
    pub(super) target: Range<u32>,
    /// The authority of an absolute-form target; empty otherwise.
    pub(super) authority: Range<u32>,
    pub(super) path: Range<u32>,
    pub(super) query: Range<u32>,
    pub(super) version: Version,
}

/// `method SP request-target SP HTTP-version` (RFC 9112 §3), single spaces, nothing else.
pub(super) fn parse_request_line(head: &[u8], line_lf: usize) -> Result<RequestLine, ProtoError> {
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
