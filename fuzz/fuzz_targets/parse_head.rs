//! Fuzz target: the request head parser. Arbitrary bytes must parse, need more, or be refused,
//! never panic or hang; and the answer must not depend on how the bytes arrived: whole, one
//! byte at a time into a growing buffer (one parser, as the I/O layer drives it), and with a
//! pipelined request appended must agree. Run twice: default limits and tiny limits (so the
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

fn check(data: &[u8], limits: &Limits) {
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
    };
    check(data, &tiny);
});
