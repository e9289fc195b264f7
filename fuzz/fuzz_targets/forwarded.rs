//! Fuzz target: trusted forwarding (`--forwarded-allow-ips` and the forwarding headers). The
//! first line of the input is a trust list, each following line a `name: value` header; both
//! families are resolved. Nothing may panic, and what is resolved must be well-formed: a
//! client taken from the headers, ports never 0, a host only when one was sent.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluicegate_proto::forwarded::{resolve, Family, TrustList};

fuzz_target!(|data: &[u8]| {
    let mut lines = data.split(|&b| b == b'\n');
    let trust = lines
        .next()
        .and_then(|l| std::str::from_utf8(l).ok())
        .and_then(|l| TrustList::parse(l).ok())
        .unwrap_or_default();
    let headers: Vec<(&[u8], &[u8])> = lines
        .filter_map(|l| {
            let i = l.iter().position(|&b| b == b':')?;
            Some((&l[..i], l[i + 1..].trim_ascii()))
        })
        .collect();
    for family in [Family::XForwarded, Family::Forwarded] {
        let r = resolve(headers.iter().copied(), family, &trust);
        if let Some((_, Some(port))) = r.client {
            assert!(port > 0);
        }
        assert!(r.port != Some(0));
        if r.host.is_some() || r.client.is_some() || r.scheme.is_some() {
            assert!(!headers.is_empty());
        }
    }
});
