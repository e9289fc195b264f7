//! Fuzz target: the request head parser. Arbitrary bytes must parse, need more, or be refused,
//! never panic or hang; and the answer must not depend on how the bytes arrived: whole, one
//! byte at a time into a growing buffer (one parser, as the I/O layer drives it), and with a
//! pipelined request appended must agree. A head that parses must read as httparse reads its
//! field lines (the oracle for our own field-line loop: same names, same trimmed values). Run twice: default limits and tiny limits (so the
//! 414/431 paths are reached by short inputs).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluicegate_proto::h1::HeadParser;
use sluicegate_proto::{Limits, ProtoError};

type Outcome = Result<Option<(String, usize)>, ProtoError>;

fn parse(p: &mut HeadParser, buf: &[u8], limits: &Limits) -> Outcome {
    p.parse(buf, limits)
        .map(|o| o.map(|(head, n)| (format!("{head:?}"), n)))
}

/// httparse's names and values for the field lines of the head that ends at `data[n]`.
fn httparse_fields(data: &[u8], n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let head = &data[..n];
    let start = head.iter().position(|&b| b != b'\r' && b != b'\n').unwrap();
    let lf = start + head[start..].iter().position(|&b| b == b'\n').unwrap();
    let section = &head[lf + 1..];
    let mut slots = vec![httparse::EMPTY_HEADER; section.len() / 2 + 1];
    match httparse::parse_headers(section, &mut slots) {
        Ok(httparse::Status::Complete((len, h))) => {
            assert_eq!(len, section.len(), "httparse ends the section elsewhere");
            h.iter()
                .map(|h| {
                    let v = h.value;
                    let a = v
                        .iter()
                        .position(|&b| b != b' ' && b != b'\t')
                        .unwrap_or(v.len());
                    let z = v
                        .iter()
                        .rposition(|&b| b != b' ' && b != b'\t')
                        .map_or(a, |z| z + 1);
                    (h.name.as_bytes().to_vec(), v[a..z].to_vec())
                })
                .collect()
        }
        other => panic!("accepted by us, not by httparse: {other:?}"),
    }
}

fn check(data: &[u8], limits: &Limits) {
    if let Ok(Some((head, n))) = HeadParser::new().parse(data, limits) {
        let ours: Vec<_> = head
            .headers()
            .map(|(a, b)| (a.to_vec(), b.to_vec()))
            .collect();
        assert_eq!(
            ours,
            httparse_fields(data, n),
            "field lines read differently"
        );
    }
    let whole = parse(&mut HeadParser::new(), data, limits);

    let mut p = HeadParser::new();
    let mut trickled = Ok(None);
    for i in 0..=data.len() {
        trickled = parse(&mut p, &data[..i], limits);
        if !matches!(trickled, Ok(None)) {
            break;
        }
    }
    assert_eq!(trickled, whole, "byte by byte differs from whole");

    if !matches!(whole, Ok(None)) {
        let mut piped = data.to_vec();
        piped.extend_from_slice(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        let with_next = parse(&mut HeadParser::new(), &piped, limits);
        assert_eq!(with_next, whole, "trailing bytes changed the result");
    }
}

fuzz_target!(|data: &[u8]| {
    check(data, &Limits::default());
    let tiny = Limits {
        max_request_line: 24,
        max_header_bytes: 64,
        max_headers: 3,
        max_body: 100,
        max_field_bytes: 16,
    };
    check(data, &tiny);
});
