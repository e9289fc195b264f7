//! Fuzz target: the chunked body decoder. The first two bytes pick split points, the rest is
//! the body. It must decode or be refused, never panic or hang, never consume past the end of
//! the body; and whole, byte-by-byte and three-piece feeding must give the same data, the same
//! consumed count and the same error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluicegate_proto::h1::BodyDecoder;
use sluicegate_proto::testing::{feed_decoder, Fed};
use sluicegate_proto::BodyFraming;

/// Drive the decoder like the I/O layer (the proto crate's one feeding helper).
fn feed(pieces: &[&[u8]]) -> Fed {
    feed_decoder(
        BodyDecoder::new(BodyFraming::Chunked, 1 << 20, 1024),
        pieces,
    )
}

fuzz_target!(|input: &[u8]| {
    let (a, b, body) = match input {
        [a, b, body @ ..] => (*a as usize, *b as usize, body),
        _ => return,
    };
    let whole = feed(&[body]);
    let bytes: Vec<&[u8]> = body.chunks(1).collect();
    assert_eq!(feed(&bytes), whole, "byte by byte differs from whole");
    let a = a.min(body.len());
    let b = (a + b).min(body.len());
    assert_eq!(
        feed(&[&body[..a], &body[a..b], &body[b..]]),
        whole,
        "split at {a},{b} differs from whole"
    );
    if let Ok((_, consumed, true)) = whole {
        // Whatever follows the body is left alone.
        let mut piped = body[..consumed].to_vec();
        piped.extend_from_slice(b"GET / HTTP/1.1\r\n\r\n");
        assert_eq!(feed(&[&piped]), whole, "trailing bytes changed the result");
    }
});
