//! Fuzz target: the uwsgi packet parser. Arbitrary bytes must parse, need more, or be refused,
//! never panic; and the answer must not depend on how the bytes arrived: every shorter prefix
//! of an accepted packet needs more, and bytes after the packet (the body) change nothing. Run
//! twice: default limits and tiny limits (so the 413/414/431 paths are reached by short inputs).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluicegate_proto::uwsgi::parse_packet;
use sluicegate_proto::{Limits, ProtoError};

type Outcome = Result<Option<(String, String, usize)>, ProtoError>;

fn parse(buf: &[u8], limits: &Limits) -> Outcome {
    parse_packet(buf, limits)
        .map(|o| o.map(|(head, facts, n)| (format!("{head:?}"), format!("{facts:?}"), n)))
}

fn check(data: &[u8], limits: &Limits) {
    let whole = parse(data, limits);

    if let Ok(Some((_, _, n))) = &whole {
        assert!(*n <= data.len(), "packet longer than the input");
        for i in 0..*n {
            assert_eq!(parse(&data[..i], limits), Ok(None), "prefix {i}");
        }
    }

    if !matches!(whole, Ok(None)) {
        let mut piped = data.to_vec();
        piped.extend_from_slice(b"body bytes");
        assert_eq!(
            parse(&piped, limits),
            whole,
            "trailing bytes changed the result"
        );
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
