//! Fuzz target: the PROXY protocol header parser (v1 and v2). Arbitrary bytes must parse, need
//! more, or be refused, never panic; a complete header never claims more bytes than it was
//! given; and the answer must not depend on how the bytes arrived: whole, one byte at a time
//! into a growing buffer (as the I/O layer reads), and with a request appended must agree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluicegate_proto::proxy_protocol::{parse, MAX_HEADER};

fuzz_target!(|data: &[u8]| {
    let whole = parse(data);
    if let Ok(Some((_, n))) = &whole {
        assert!(*n <= data.len(), "consumed {n} of {} bytes", data.len());
        assert!(*n <= MAX_HEADER, "consumed {n}, more than MAX_HEADER");
    }
    if data.len() >= MAX_HEADER {
        assert!(
            !matches!(whole, Ok(None)),
            "needs more after MAX_HEADER bytes"
        );
    }

    let mut trickled = Ok(None);
    for i in 0..=data.len() {
        trickled = parse(&data[..i]);
        if !matches!(trickled, Ok(None)) {
            break;
        }
    }
    assert_eq!(trickled, whole, "byte by byte differs from whole");

    if !matches!(whole, Ok(None)) {
        let mut piped = data.to_vec();
        piped.extend_from_slice(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(parse(&piped), whole, "trailing bytes changed the result");
    }
});
