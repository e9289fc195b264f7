//! Unit tests of the PROXY protocol parser: v1 and v2 headers accepted, refused as malformed,
//! or found incomplete at every prefix, and the longest header of each version.

use super::*;

const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";

fn v4(a: [u8; 4], port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::from(a), port))
}

fn v6(text: &str, port: u16) -> SocketAddr {
    SocketAddr::from((text.parse::<Ipv6Addr>().unwrap(), port))
}

fn proxied(source: SocketAddr, destination: SocketAddr) -> ProxiedAddr {
    ProxiedAddr::Proxied {
        source,
        destination,
    }
}

fn is_malformed(r: Result<Option<(ProxiedAddr, usize)>, ProxyError>) -> bool {
    matches!(r, Err(ProxyError::Malformed(_)))
}

/// Every strict prefix of `header` needs more bytes, the whole parses to `want` consuming
/// exactly the header, and a request after it is left alone.
fn check_complete(header: &[u8], want: &ProxiedAddr) {
    for i in 0..header.len() {
        assert_eq!(parse(&header[..i]), Ok(None), "prefix of {i} bytes");
    }
    let whole = Some((want.clone(), header.len()));
    assert_eq!(parse(header), Ok(whole.clone()));
    let mut with_request = header.to_vec();
    with_request.extend_from_slice(REQUEST);
    assert_eq!(parse(&with_request), Ok(whole));
}

/// A v2 header: signature, the two given bytes, the length, then `payload`.
fn v2(ver_cmd: u8, family: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = V2_SIGNATURE.to_vec();
    h.push(ver_cmd);
    h.push(family);
    h.extend_from_slice(&u16::try_from(payload.len()).unwrap().to_be_bytes());
    h.extend_from_slice(payload);
    h
}

fn tcp4_block() -> Vec<u8> {
    let mut b = vec![192, 0, 2, 1, 198, 51, 100, 7];
    b.extend_from_slice(&56324u16.to_be_bytes());
    b.extend_from_slice(&443u16.to_be_bytes());
    b
}

fn tcp4_addr() -> ProxiedAddr {
    proxied(v4([192, 0, 2, 1], 56324), v4([198, 51, 100, 7], 443))
}

fn tlv(kind: u8, value: &[u8]) -> Vec<u8> {
    let mut t = vec![kind];
    t.extend_from_slice(&u16::try_from(value.len()).unwrap().to_be_bytes());
    t.extend_from_slice(value);
    t
}

// ---- signature detection ----

#[test]
fn empty_and_signature_prefixes_need_more() {
    assert_eq!(parse(b""), Ok(None));
    for i in 1..V1_PREFIX.len() {
        assert_eq!(parse(&V1_PREFIX[..i]), Ok(None));
    }
    for i in 1..V2_SIGNATURE.len() {
        assert_eq!(parse(&V2_SIGNATURE[..i]), Ok(None));
    }
}

#[test]
fn not_a_proxy_header_is_missing() {
    assert_eq!(parse(b"GET / HTTP/1.1\r\n"), Err(ProxyError::Missing));
    assert_eq!(parse(b"G"), Err(ProxyError::Missing));
    assert_eq!(parse(b"PROXYX"), Err(ProxyError::Missing));
    assert_eq!(parse(b"proxy TCP4"), Err(ProxyError::Missing));
    assert_eq!(parse(b"\r\n\r\n"), Ok(None));
    assert_eq!(parse(b"\r\n\r\n\r\n"), Err(ProxyError::Missing));
    // A bare empty line (the request-leading CRLF RFC 9112 tolerates) is not one either.
    assert_eq!(parse(b"\r\nGET"), Err(ProxyError::Missing));
}

// ---- v1 ----

#[test]
fn v1_tcp4() {
    check_complete(
        b"PROXY TCP4 192.0.2.1 198.51.100.7 56324 443\r\n",
        &tcp4_addr(),
    );
}

#[test]
fn v1_tcp6() {
    check_complete(
        b"PROXY TCP6 2001:db8::1 2001:DB8:0:0:0:0:0:2 65535 0\r\n",
        &proxied(v6("2001:db8::1", 65535), v6("2001:db8::2", 0)),
    );
    // What HAProxy sends when the two sides' families differ.
    check_complete(
        b"PROXY TCP6 ::ffff:192.0.2.1 ::1 1 2\r\n",
        &proxied(v6("::ffff:192.0.2.1", 1), v6("::1", 2)),
    );
}

#[test]
fn v1_unknown() {
    check_complete(b"PROXY UNKNOWN\r\n", &ProxiedAddr::Unknown);
    check_complete(
        b"PROXY UNKNOWN whatever \xff goes 1.2.3.4\r\n",
        &ProxiedAddr::Unknown,
    );
    assert!(is_malformed(parse(b"PROXY UNKNOWNX\r\n")));
    assert!(is_malformed(parse(b"PROXY unknown\r\n")));
}

#[test]
fn v1_longest_line_is_accepted() {
    let f = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
    let unknown = format!("PROXY UNKNOWN {f} {f} 65535 65535\r\n");
    assert_eq!(unknown.len(), V1_MAX_LINE);
    check_complete(unknown.as_bytes(), &ProxiedAddr::Unknown);
    let tcp6 = format!("PROXY TCP6 {f} {f} 65535 65535\r\n");
    check_complete(tcp6.as_bytes(), &proxied(v6(f, 65535), v6(f, 65535)));
}

#[test]
fn v1_too_long_line() {
    let mut line = b"PROXY UNKNOWN ".to_vec();
    line.resize(V1_MAX_LINE - 1, b'x');
    assert_eq!(parse(&line), Ok(None));
    line.push(b'x');
    assert!(is_malformed(parse(&line)));
    // A CRLF that would end the line at 108 bytes is too late, even before the LF is in.
    line.pop();
    line.push(b'\r');
    assert!(is_malformed(parse(&line)));
    line.push(b'\n');
    assert!(is_malformed(parse(&line)));
}

#[test]
fn v1_line_end_must_be_crlf() {
    assert!(is_malformed(parse(
        b"PROXY TCP4 192.0.2.1 198.51.100.7 56324 443\n"
    )));
    assert!(is_malformed(parse(
        b"PROXY TCP4 192.0.2.1 198.51.100.7 56324 443\rG"
    )));
    assert!(is_malformed(parse(b"PROXY UNKNOWN\n")));
    // The CR alone: not yet decided.
    assert_eq!(parse(b"PROXY UNKNOWN\r"), Ok(None));
}

#[test]
fn v1_bad_addresses() {
    for line in [
        &b"PROXY TCP4 192.0.2.256 198.51.100.7 1 2\r\n"[..],
        b"PROXY TCP4 192.0.2.01 198.51.100.7 1 2\r\n",
        b"PROXY TCP4 192.0.2 198.51.100.7 1 2\r\n",
        b"PROXY TCP4 2001:db8::1 198.51.100.7 1 2\r\n",
        b"PROXY TCP4 192.0.2.1 ::1 1 2\r\n",
        b"PROXY TCP6 192.0.2.1 ::1 1 2\r\n",
        b"PROXY TCP6 ::1 198.51.100.7 1 2\r\n",
        b"PROXY TCP6 [::1] ::1 1 2\r\n",
        b"PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n",
        b"PROXY TCP6 ::1 ::\xff 1 2\r\n",
        b"PROXY TCP5 192.0.2.1 198.51.100.7 1 2\r\n",
    ] {
        assert!(is_malformed(parse(line)), "{}", line.escape_ascii());
    }
}

#[test]
fn v1_bad_ports() {
    for port in [
        "080", "00", "65536", "99999", "+80", "-1", "8a", "", "123456", " 80",
    ] {
        let line = format!("PROXY TCP4 192.0.2.1 198.51.100.7 {port} 443\r\n");
        assert!(is_malformed(parse(line.as_bytes())), "{line:?}");
        let line = format!("PROXY TCP4 192.0.2.1 198.51.100.7 443 {port}\r\n");
        assert!(is_malformed(parse(line.as_bytes())), "{line:?}");
    }
}

#[test]
fn v1_spaces_and_fields_are_exact() {
    for line in [
        &b"PROXY  TCP4 192.0.2.1 198.51.100.7 1 2\r\n"[..],
        b"PROXY TCP4  192.0.2.1 198.51.100.7 1 2\r\n",
        b"PROXY TCP4 192.0.2.1 198.51.100.7 1 2 \r\n",
        b"PROXY TCP4 192.0.2.1 198.51.100.7 1 2 3\r\n",
        b"PROXY TCP4 192.0.2.1 198.51.100.7 1\r\n",
        b"PROXY TCP4\r\n",
        b"PROXY TCP4\t192.0.2.1 198.51.100.7 1 2\r\n",
        b"PROXY \r\n",
    ] {
        assert!(is_malformed(parse(line)), "{}", line.escape_ascii());
    }
}

// ---- v2 ----

#[test]
fn v2_proxy_ipv4() {
    check_complete(&v2(0x21, V2_TCP4, &tcp4_block()), &tcp4_addr());
}

#[test]
fn v2_proxy_ipv6() {
    let src: Ipv6Addr = "2001:db8::1".parse().unwrap();
    let dst: Ipv6Addr = "2001:db8::2".parse().unwrap();
    let mut block = src.octets().to_vec();
    block.extend_from_slice(&dst.octets());
    block.extend_from_slice(&1234u16.to_be_bytes());
    block.extend_from_slice(&80u16.to_be_bytes());
    check_complete(
        &v2(0x21, V2_TCP6, &block),
        &proxied(v6("2001:db8::1", 1234), v6("2001:db8::2", 80)),
    );
}

#[test]
fn v2_local_is_unknown_whatever_follows() {
    check_complete(&v2(0x20, V2_UNSPEC, b""), &ProxiedAddr::Unknown);
    // The length must still be honoured, and the family is ignored.
    check_complete(&v2(0x20, V2_TCP4, &tcp4_block()), &ProxiedAddr::Unknown);
    check_complete(&v2(0x20, 0xff, b"\x01"), &ProxiedAddr::Unknown);
}

#[test]
fn v2_unspec_and_unix_are_unknown() {
    check_complete(&v2(0x21, V2_UNSPEC, b""), &ProxiedAddr::Unknown);
    check_complete(&v2(0x21, V2_UNSPEC, b"anything"), &ProxiedAddr::Unknown);
    let mut unix = vec![0u8; V2_ADDR_LEN_UNIX];
    unix.extend_from_slice(&tlv(0x04, b""));
    check_complete(&v2(0x21, V2_UNIX_STREAM, &unix), &ProxiedAddr::Unknown);
    assert!(is_malformed(parse(&v2(0x21, V2_UNIX_STREAM, &[0; 215]))));
}

#[test]
fn v2_tlvs_are_skipped() {
    let mut payload = tcp4_block();
    payload.extend_from_slice(&tlv(0x01, b"h2")); // PP2_TYPE_ALPN
    payload.extend_from_slice(&tlv(0x04, b"")); // PP2_TYPE_NOOP, empty
    payload.extend_from_slice(&tlv(0x04, &[0; 5])); // PP2_TYPE_NOOP, padding
    payload.extend_from_slice(&tlv(0x20, &[1, 0, 0, 0, 0])); // PP2_TYPE_SSL
    check_complete(&v2(0x21, V2_TCP4, &payload), &tcp4_addr());
}

#[test]
fn v2_tlv_overrun_is_malformed() {
    // The value claims 3 bytes, only 2 are in the header.
    let mut payload = tcp4_block();
    payload.extend_from_slice(&[0x01, 0x00, 0x03, b'h', b'2']);
    let header = v2(0x21, V2_TCP4, &payload);
    assert!(is_malformed(parse(&header)));
    // Even with the bytes after the header there: they are not the TLV's.
    let mut more = header.clone();
    more.extend_from_slice(REQUEST);
    assert!(is_malformed(parse(&more)));
    // Trailing bytes too few for a TLV header.
    for extra in [&[0x04][..], &[0x04, 0x00]] {
        let mut payload = tcp4_block();
        payload.extend_from_slice(extra);
        assert!(is_malformed(parse(&v2(0x21, V2_TCP4, &payload))));
    }
    // And every prefix of the bad header still only needs more.
    for i in 0..header.len() {
        assert_eq!(parse(&header[..i]), Ok(None));
    }
}

#[test]
fn v2_bad_version_or_command() {
    for ver_cmd in [0x11, 0x31, 0x01, 0xf1, 0x22, 0x2f] {
        let header = v2(ver_cmd, V2_TCP4, &tcp4_block());
        // Refused as soon as the byte is in.
        assert!(is_malformed(parse(&header[..13])), "{ver_cmd:#x}");
        assert!(is_malformed(parse(&header)), "{ver_cmd:#x}");
    }
}

#[test]
fn v2_datagram_is_malformed() {
    for family in [V2_UDP4, V2_UDP6, V2_UNIX_DGRAM] {
        let header = v2(0x21, family, &[0; V2_ADDR_LEN_UNIX]);
        assert_eq!(
            parse(&header),
            Err(ProxyError::Malformed("datagram transport"))
        );
        assert_eq!(
            parse(&header[..14]),
            Err(ProxyError::Malformed("datagram transport"))
        );
    }
}

#[test]
fn v2_invalid_family_is_malformed() {
    for family in [0x01, 0x02, 0x10, 0x13, 0x20, 0x30, 0x41, 0xff] {
        let header = v2(0x21, family, &[0; V2_ADDR_LEN_UNIX]);
        assert!(is_malformed(parse(&header)), "{family:#x}");
    }
}

#[test]
fn v2_length_shorter_than_addresses() {
    let block = tcp4_block();
    let header = v2(0x21, V2_TCP4, &block[..11]);
    // Refused from the length alone, before the payload arrives.
    assert!(is_malformed(parse(&header[..16])));
    assert!(is_malformed(parse(&header)));
    assert!(is_malformed(parse(&v2(0x21, V2_TCP6, &[0; 35]))));
    assert!(is_malformed(parse(&v2(0x21, V2_TCP4, b""))));
}

#[test]
fn v2_partial_needs_more() {
    let header = v2(0x21, V2_TCP4, &tcp4_block());
    assert_eq!(parse(&header[..16]), Ok(None));
    assert_eq!(parse(&header[..header.len() - 1]), Ok(None));
}

#[test]
fn v2_every_prefix_needs_more() {
    let mut payload = tcp4_block();
    payload.extend_from_slice(&tlv(0x01, b"http/1.1"));
    payload.extend_from_slice(&tlv(0x02, b"example.com"));
    let header = v2(0x21, V2_TCP4, &payload);
    for i in 0..header.len() {
        assert_eq!(parse(&header[..i]), Ok(None), "prefix of {i} bytes");
    }
    assert_eq!(parse(&header), Ok(Some((tcp4_addr(), header.len()))));
}

#[test]
fn v2_longest_header() {
    let mut payload = tcp4_block();
    let pad = usize::from(u16::MAX) - payload.len() - V2_TLV_HEADER_LEN;
    payload.extend_from_slice(&tlv(0x04, &vec![0; pad]));
    let header = v2(0x21, V2_TCP4, &payload);
    assert_eq!(header.len(), MAX_HEADER);
    assert_eq!(parse(&header), Ok(Some((tcp4_addr(), MAX_HEADER))));
    assert_eq!(parse(&header[..MAX_HEADER - 1]), Ok(None));
}

#[test]
fn never_needs_more_than_max_header() {
    let mut v1 = b"PROXY ".to_vec();
    v1.resize(MAX_HEADER, b'1');
    assert!(is_malformed(parse(&v1)));
    let mut v2 = v2(0x21, V2_TCP4, &[]);
    v2.truncate(V2_FIXED_LEN - 2);
    v2.extend_from_slice(&[0xff, 0xff]);
    v2.resize(MAX_HEADER, 0x04);
    assert_ne!(parse(&v2), Ok(None));
}
