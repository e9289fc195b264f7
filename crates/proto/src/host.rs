//! The one Host check, applied alike to HTTP/1.1's `Host` field and absolute-form authority
//! and to HTTP/2's `:authority` pseudo-header and `host` field: a value the app sees as
//! `HTTP_HOST` (and that frameworks build absolute URLs and allowed-host checks from) is
//! `uri-host [":" port]` and nothing else. Userinfo (`user:pw@host`, `good@evil`) is refused:
//! RFC 9110 §4.2.4 deprecates it and has recipients treat it as an error; spaces, controls and
//! other bytes outside RFC 3986's reg-name, IP-literal and port are refused as well, and so are
//! brackets anywhere but around a whole IP-literal (`[::1`, `[::1]x`, `a]b`, `[zz]`: RFC 3986
//! §3.2.2, `IP-literal = "[" ( IPv6address / IPvFuture ) "]"`, then only `":" port`).

use crate::token::alnum_and;

/// A byte of `uri-host [":" port]` (RFC 3986 reg-name / IP-literal / IPv4, and the port).
#[inline]
fn is_host_byte(b: u8) -> bool {
    HOST_BYTE[b as usize]
}

/// [`is_host_byte`] as a table: one load per byte of every request's Host.
static HOST_BYTE: [bool; 256] = alnum_and(b"-._~!$&'()*+,;=%:[]");

/// Whether `value` may be a request's Host (empty is allowed: HTTP/1.1 sends `Host:` with an
/// empty value for a target without an authority, RFC 9112 §3.2).
#[inline]
pub fn valid_host(value: &[u8]) -> bool {
    // A fold, not `all`: no early exit, one table load per byte (every request pays this); a
    // value with a bracket (rare) is then read as an IP-literal.
    let (ok, bracket) = value.iter().fold((true, false), |(ok, bracket), &b| {
        (ok & is_host_byte(b), bracket | (b == b'[') | (b == b']'))
    });
    ok && (!bracket || valid_ip_literal_host(value))
}

/// `"[" ( IPv6address / IPvFuture ) "]" [ ":" port ]`, port being digits (RFC 3986 §3.2.2-3).
fn valid_ip_literal_host(value: &[u8]) -> bool {
    let Some(rest) = value.strip_prefix(b"[") else {
        return false;
    };
    let Some(end) = rest.iter().position(|&b| b == b']') else {
        return false;
    };
    let (literal, after) = (&rest[..end], &rest[end + 1..]);
    let port_ok = match after.split_first() {
        None => true,
        Some((b':', port)) => port.iter().all(u8::is_ascii_digit),
        Some(_) => false,
    };
    port_ok && (ipv_future(literal) || ipv6(literal))
}

/// `IPv6address` (RFC 3986 §3.2.2; no zone identifier).
fn ipv6(literal: &[u8]) -> bool {
    std::str::from_utf8(literal)
        .ok()
        .is_some_and(|s| s.parse::<std::net::Ipv6Addr>().is_ok())
}

/// `IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )`.
fn ipv_future(literal: &[u8]) -> bool {
    let Some(rest) = literal
        .strip_prefix(b"v")
        .or_else(|| literal.strip_prefix(b"V"))
    else {
        return false;
    };
    let Some(dot) = rest.iter().position(|&b| b == b'.') else {
        return false;
    };
    let (version, tail) = (&rest[..dot], &rest[dot + 1..]);
    !version.is_empty()
        && version.iter().all(u8::is_ascii_hexdigit)
        && !tail.is_empty()
        && tail
            .iter()
            .all(|&b| is_host_byte(b) && b != b'[' && b != b']' && b != b'%')
}

/// Whether an HTTP/2 `host` field names the same entity as `:authority` (RFC 9113 §8.3.1: a
/// request where they differ is malformed). Host names are case-insensitive (RFC 3986 §3.2.2).
pub fn same_host(authority: &[u8], host: &[u8]) -> bool {
    authority.eq_ignore_ascii_case(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_with_ports_and_literals_pass() {
        for ok in [
            &b"example.org"[..],
            b"example.org:8443",
            b"[::1]:80",
            b"[::1]",
            b"[2001:db8::7]:",
            b"[v1.fe80::a+en1]",
            b"127.0.0.1",
            b"",
            b"xn--bcher-kva.example",
        ] {
            assert!(valid_host(ok), "{:?}", String::from_utf8_lossy(ok));
        }
    }

    #[test]
    fn userinfo_spaces_and_controls_are_refused() {
        for bad in [
            &b"good.example@evil.example"[..],
            b"user:pw@example.org",
            b"a b",
            b"a\tb",
            b"a\0b",
            b"a/b",
            b"a\\b",
            b"\xc3\xa9.example",
            b"[::1",
            b"[::1]x",
            b"[::1]:8x",
            b"[::1]]",
            b"[[::1]]",
            b"a]b",
            b"a[b",
            b"[zz]",
            b"[]",
            b"[v.x]",
            b"[v1.]",
            b"x[::1]",
        ] {
            assert!(!valid_host(bad), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn same_host_ignores_case_only() {
        assert!(same_host(b"Example.ORG:80", b"example.org:80"));
        assert!(!same_host(b"example.org", b"example.org:80"));
        assert!(!same_host(b"a.example", b"b.example"));
    }
}
