//! The uwsgi parser's tests of what the packet says beside the head: the forwarded values
//! (`UwsgiFacts`) and which variables are told apart (`known`).

use std::net::IpAddr;

use super::tests::{ok, packet};
use super::*;
use crate::forwarded::Scheme;

#[test]
fn uwsgi_facts_keep_each_value_apart_and_the_ones_not_sent() {
    let (_, facts) = ok(&packet(&[
        ("REQUEST_METHOD", "GET"),
        ("REQUEST_URI", "/"),
        ("SERVER_PORT", "8443"),
        ("REMOTE_PORT", "51234"),
        ("SERVER_NAME", ""),
    ]));
    assert_eq!(facts.remote_addr(), None);
    assert_eq!(facts.remote_port(), Some(&b"51234"[..]));
    assert_eq!(facts.server_name(), Some(&b""[..]));
    assert_eq!(facts.server_port(), Some(&b"8443"[..]));
    let r = facts.resolved();
    assert_eq!(
        (r.client, r.server_name, r.port, r.malformed),
        (None, None, Some(8443), 0)
    );
}

#[test]
fn uwsgi_facts_resolve_to_the_client_server_name_and_port() {
    let (_, facts) = ok(&packet(&[
        ("REQUEST_METHOD", "GET"),
        ("REQUEST_URI", "/"),
        ("REMOTE_ADDR", "2001:db8::7"),
        ("REMOTE_PORT", "51234"),
        ("SERVER_NAME", "example.com"),
        ("SERVER_PORT", "80"),
        ("HTTPS", "on"),
    ]));
    let r = facts.resolved();
    let ip: IpAddr = "2001:db8::7".parse().unwrap();
    assert_eq!(r.client, Some((ip, Some(51234))));
    assert_eq!(r.server_name, Some(b"example.com".to_vec()));
    assert_eq!(
        (r.port, r.scheme, r.malformed),
        (Some(80), Some(Scheme::Https), 0)
    );
}

#[test]
fn uwsgi_known_variables_are_told_by_their_whole_name() {
    for (name, expect) in [
        ("REQUEST_METHOD", true),
        ("REQUEST_URI", true),
        ("PATH_INFO", true),
        ("QUERY_STRING", true),
        ("SERVER_PROTOCOL", true),
        ("HTTPS", true),
        ("REQUEST_SCHEME", true),
        ("UWSGI_SCHEME", true),
        ("REMOTE_ADDR", true),
        ("REMOTE_PORT", true),
        ("SERVER_NAME", true),
        ("SERVER_PORT", true),
        ("CONTENT_TYPE", true),
        ("CONTENT_LENGTH", true),
        // Same length, first and last byte as a known one: not it.
        ("SCRIPT_NAME", false),
        ("RXXXXXXXXXD", false),
        ("REQUEST_MXXHOD", false),
        ("DOCUMENT_ROOT", false),
        ("", false),
    ] {
        assert_eq!(known(name.as_bytes()).is_some(), expect, "{name}");
    }
    // SCRIPT_NAME stays out of the facts: SERVER_NAME is read, not its look-alike.
    let (_, facts) = ok(&packet(&[
        ("REQUEST_METHOD", "GET"),
        ("REQUEST_URI", "/"),
        ("SERVER_NAME", "a"),
        ("SCRIPT_NAME", "/b"),
    ]));
    assert_eq!(facts.server_name(), Some(&b"a"[..]));
}

#[test]
fn uwsgi_ports_read_as_the_generic_parser_reads_them() {
    for v in [
        &b"80"[..],
        b"080",
        b"+80",
        b"0",
        b"65535",
        b"65536",
        b"99999",
        b"123456",
        b"",
        b"1a",
        b"-1",
        b" 80",
    ] {
        let generic = std::str::from_utf8(v)
            .ok()
            .map(|s| s.parse::<u16>().map_err(|_| ()));
        assert_eq!(port(v), generic, "{:?}", String::from_utf8_lossy(v));
    }
    assert_eq!(port(b"\xff80"), None);
}

#[test]
fn uwsgi_client_addresses_read_as_the_generic_parser_reads_them() {
    // The IPv4 fast path (`ipv4`) takes only what `str::parse::<IpAddr>` reads to the same
    // address; what it leaves is read by the generic parser, so the facts resolve the same.
    for v in [
        &b"127.0.0.1"[..],
        b"0.0.0.0",
        b"255.255.255.255",
        b"10.20.30.40",
        b"256.1.1.1",
        b"1.2.3.256",
        b"01.2.3.4",
        b"1.2.3.04",
        b"00.0.0.0",
        b"1.2.3",
        b"1.2.3.4.5",
        b"1.2.3.",
        b".1.2.3",
        b"1..2.3",
        b"1.2.3.4 ",
        b" 1.2.3.4",
        b"1.2.3.1000",
        b"+1.2.3.4",
        b"1.2.3.-4",
        b"::1",
        b"::ffff:1.2.3.4",
        b"2001:db8::7",
        b"",
        b"\xff.1.1.1",
        b"localhost",
    ] {
        let generic = std::str::from_utf8(v)
            .ok()
            .and_then(|s| s.parse::<IpAddr>().ok());
        if let Some(fast) = ipv4(v) {
            assert_eq!(
                Some(IpAddr::V4(fast)),
                generic,
                "{:?}",
                String::from_utf8_lossy(v)
            );
        }
        let facts = UwsgiFacts::new(Some(v), Some(b"51234"), None, None, None);
        let r = facts.resolved();
        assert_eq!(
            r.client.map(|(ip, _)| ip),
            generic,
            "{:?}",
            String::from_utf8_lossy(v)
        );
        let malformed = u32::from(generic.is_none() && !v.is_empty());
        assert_eq!(r.malformed, malformed, "{:?}", String::from_utf8_lossy(v));
    }
    assert!(ipv4(b"127.0.0.1").is_some());
}

#[test]
fn uwsgi_facts_too_long_to_keep_inline_read_the_same() {
    // Values that together pass the inline room go to one allocation: each still reads back
    // as sent, and they resolve the same.
    let name = "n".repeat(200);
    let (_, facts) = ok(&packet(&[
        ("REQUEST_METHOD", "GET"),
        ("REQUEST_URI", "/"),
        ("REMOTE_ADDR", "192.0.2.1"),
        ("REMOTE_PORT", "51234"),
        ("SERVER_NAME", &name),
        ("SERVER_PORT", "8080"),
    ]));
    assert_eq!(facts.remote_addr(), Some(&b"192.0.2.1"[..]));
    assert_eq!(facts.remote_port(), Some(&b"51234"[..]));
    assert_eq!(facts.server_name(), Some(name.as_bytes()));
    assert_eq!(facts.server_port(), Some(&b"8080"[..]));
    let r = facts.resolved();
    let ip: IpAddr = "192.0.2.1".parse().unwrap();
    assert_eq!(r.client, Some((ip, Some(51234))));
    assert_eq!(r.server_name, Some(name.into_bytes()));
    assert_eq!((r.port, r.malformed), (Some(8080), 0));
    // Just at the room, and one byte past it.
    for extra in [0, 1] {
        let name = "s".repeat(64 - 9 - 5 - 4 + extra);
        let facts = UwsgiFacts::new(
            Some(b"192.0.2.1"),
            Some(b"51234"),
            Some(name.as_bytes()),
            Some(b"8080"),
            None,
        );
        assert_eq!(facts.remote_addr(), Some(&b"192.0.2.1"[..]));
        assert_eq!(facts.server_name(), Some(name.as_bytes()));
        assert_eq!(facts.server_port(), Some(&b"8080"[..]));
    }
}
