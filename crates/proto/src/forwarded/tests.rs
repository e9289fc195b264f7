//! The forwarding headers' tests: trusted and untrusted peers, each header's syntax, and the
//! client address and scheme resolved from them.

use super::*;

fn trust() -> TrustList {
    TrustList::parse("127.0.0.1,::1,unix,10.0.0.0/8").unwrap()
}

fn xf(headers: &[(&str, &str)]) -> Resolved {
    let h: Vec<(&[u8], &[u8])> = headers
        .iter()
        .map(|(n, v)| (n.as_bytes(), v.as_bytes()))
        .collect();
    resolve(h.iter().copied(), Family::XForwarded, &trust())
}

fn fw(headers: &[(&str, &str)]) -> Resolved {
    let h: Vec<(&[u8], &[u8])> = headers
        .iter()
        .map(|(n, v)| (n.as_bytes(), v.as_bytes()))
        .collect();
    resolve(h.iter().copied(), Family::Forwarded, &trust())
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn trust_list_networks_unix_and_star() {
    let t = trust();
    assert!(t.trusts(ip("127.0.0.1")) && t.trusts(ip("::1")) && t.trusts(ip("10.9.8.7")));
    assert!(
        t.trusts(ip("::ffff:10.1.1.1")),
        "an IPv4-mapped peer is its IPv4 address"
    );
    assert!(!t.trusts(ip("11.0.0.1")) && !t.trusts(ip("127.0.0.2")));
    assert!(t.trusts_unix());
    let star = TrustList::parse("*").unwrap();
    assert!(star.trusts(ip("8.8.8.8")) && star.trusts_unix());
    assert!(TrustList::parse("").unwrap().is_empty());
    assert!(TrustList::parse("0.0.0.0/0").unwrap().trusts(ip("1.2.3.4")));
    assert!(TrustList::parse("10.0.0.0/33").is_err());
    assert!(TrustList::parse("example.com").is_err());
}

#[test]
fn the_right_most_untrusted_address_is_the_client() {
    let r = xf(&[("X-Forwarded-For", "6.6.6.6, 203.0.113.9, 10.1.1.1")]);
    assert_eq!(r.client, Some((ip("203.0.113.9"), None)));
    // Split over two headers: one list.
    let r = xf(&[
        ("X-Forwarded-For", "6.6.6.6"),
        ("x-forwarded-for", "203.0.113.9"),
    ]);
    assert_eq!(r.client, Some((ip("203.0.113.9"), None)));
    // All trusted: the left-most.
    let r = xf(&[("X-Forwarded-For", "10.0.0.2, 10.0.0.3")]);
    assert_eq!(r.client, Some((ip("10.0.0.2"), None)));
    let r = xf(&[("X-Forwarded-For", "[2001:db8::1]:4711")]);
    assert_eq!(r.client, Some((ip("2001:db8::1"), Some(4711))));
    let r = xf(&[("X-Forwarded-For", "198.51.100.1:8080")]);
    assert_eq!(r.client, Some((ip("198.51.100.1"), Some(8080))));
}

#[test]
fn garbage_is_ignored_and_counted_only_where_it_is_read() {
    let r = xf(&[("X-Forwarded-For", "not-an-ip, 10.0.0.1")]);
    assert_eq!((r.client, r.malformed), (None, 1));
    // Left of the client: only the client wrote it; not read.
    let r = xf(&[("X-Forwarded-For", "garbage, 203.0.113.9")]);
    assert_eq!(
        (r.client, r.malformed),
        (Some((ip("203.0.113.9"), None)), 0)
    );
    let r = xf(&[("X-Forwarded-Proto", "https, http")]);
    assert_eq!((r.scheme, r.malformed), (None, 1));
    let r = xf(&[("X-Forwarded-Proto", "https"), ("X-Forwarded-Ssl", "off")]);
    assert_eq!((r.scheme, r.malformed), (None, 1));
    let r = xf(&[("X-Forwarded-Proto", "gopher")]);
    assert_eq!((r.scheme, r.malformed), (None, 1));
    let r = xf(&[("X-Forwarded-Host", "a b")]);
    assert_eq!((r.host, r.malformed), (None, 1));
    let r = xf(&[("X-Forwarded-Port", "99999")]);
    assert_eq!((r.port, r.malformed), (None, 1));
    let huge = vec!["10.0.0.1"; 10_000].join(",");
    let r = xf(&[("X-Forwarded-For", &huge)]);
    assert_eq!(r.client, Some((ip("10.0.0.1"), None)), "capped, no error");
}

#[test]
fn scheme_host_and_port() {
    let r = xf(&[
        ("X-Forwarded-Proto", "HTTPS"),
        ("X-Forwarded-Host", "shop.example:8443"),
        ("X-Forwarded-Port", "8443"),
    ]);
    assert_eq!(r.scheme, Some(Scheme::Https));
    assert_eq!(r.host.as_deref(), Some(&b"shop.example:8443"[..]));
    assert_eq!(r.port, Some(8443));
    assert_eq!(xf(&[("X-Forwarded-Ssl", "on")]).scheme, Some(Scheme::Https));
    assert_eq!(
        xf(&[("X-Forwarded-Host", "[2001:db8::2]:443")])
            .host
            .as_deref(),
        Some(&b"[2001:db8::2]:443"[..])
    );
}

#[test]
fn only_the_chosen_family_is_read() {
    let r = xf(&[("Forwarded", "for=203.0.113.9;proto=https")]);
    assert_eq!(r, Resolved::default());
    let r = fw(&[
        ("X-Forwarded-For", "203.0.113.9"),
        ("X-Forwarded-Proto", "https"),
    ]);
    assert_eq!(r, Resolved::default());
}

#[test]
fn rfc_7239_forwarded() {
    let r = fw(&[(
        "Forwarded",
        "for=6.6.6.6;proto=http, for=\"[2001:db8:cafe::17]:4711\";proto=https;host=a.example, for=10.0.0.5",
    )]);
    assert_eq!(r.client, Some((ip("2001:db8:cafe::17"), Some(4711))));
    assert_eq!(r.scheme, Some(Scheme::Https));
    assert_eq!(r.host.as_deref(), Some(&b"a.example"[..]));
    let r = fw(&[("Forwarded", "For=\"192.0.2.43:47011\"")]);
    assert_eq!(r.client, Some((ip("192.0.2.43"), Some(47011))));
    let r = fw(&[("Forwarded", "for=unknown;proto=https")]);
    assert_eq!((r.client, r.scheme), (None, Some(Scheme::Https)));
    let r = fw(&[("Forwarded", "for=_hidden, for=10.0.0.1")]);
    assert_eq!(r.client, None);
}

#[test]
fn broken_forwarded_is_ignored_and_counted() {
    for bad in [
        "for",
        "for=\"1.2.3.4",
        "for=1.2.3.4;;",
        "=x",
        "for=1.2.3.4 garbage",
    ] {
        let r = fw(&[("Forwarded", bad)]);
        assert_eq!((r.client, r.malformed), (None, 1), "{bad}");
    }
    let r = fw(&[("Forwarded", "for=1.2.3.4;proto=https;proto=http")]);
    assert_eq!((r.scheme, r.malformed), (Some(Scheme::Https), 1));
    let r = fw(&[("Forwarded", "for=999.1.1.1")]);
    assert_eq!((r.client, r.malformed), (None, 1));
}

#[test]
fn the_trust_decision_for_each_hop() {
    let list = TrustList::parse("10.0.0.0/8, unix").unwrap();
    let t = Some(&list);
    assert!(trusted(t, Hop::Ip(ip("10.1.2.3"))) && trusted(t, Hop::Unix));
    assert!(!trusted(t, Hop::Ip(ip("192.0.2.1"))) && !trusted(None, Hop::Unix));
    let any = TrustList::parse("*").unwrap();
    assert!(
        !trusted(Some(&any), Hop::Unnamed),
        "an unnamed sender never"
    );
    let proxy = Some(ip("10.0.0.1"));
    assert_eq!(Hop::of(proxy, PeerOrigin::Socket), Hop::Ip(ip("10.0.0.1")));
    assert_eq!(Hop::of(proxy, PeerOrigin::ProxyUnnamed), Hop::Unnamed);
    assert_eq!(Hop::of(None, PeerOrigin::ProxyUnnamed), Hop::Unnamed);
    assert_eq!(Hop::of(None, PeerOrigin::Socket), Hop::Unix);
}

#[test]
fn forwarded_reads_a_trusted_hops_headers_only() {
    let wire = b"GET / HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 6.6.6.6\r\n\
                 X-Forwarded-Proto: https\r\n\r\n";
    let (head, _) = crate::h1::HeadParser::new()
        .parse(wire, &crate::Limits::default())
        .unwrap()
        .unwrap();
    let list = TrustList::parse("127.0.0.1").unwrap();
    let t = Some(&list);
    let local = Hop::Ip(ip("127.0.0.1"));
    let r = forwarded(&head, local, t, Family::XForwarded).unwrap();
    assert_eq!(
        (r.client, r.scheme),
        (Some((ip("6.6.6.6"), None)), Some(Scheme::Https))
    );
    assert_eq!(forwarded(&head, Hop::Unnamed, t, Family::XForwarded), None);
    assert_eq!(
        forwarded(&head, Hop::Ip(ip("6.6.6.7")), t, Family::XForwarded),
        None
    );
    assert_eq!(forwarded(&head, local, None, Family::XForwarded), None);
    assert_eq!(
        forwarded(&head, local, t, Family::Forwarded),
        None,
        "other family"
    );
    assert!(is_forwarding_header(b"X-FORWARDED-HOST") && is_forwarding_header(b"Forwarded"));
    assert!(!is_forwarding_header(b"x-forwarded-") && !is_forwarding_header(b"forward"));
}
