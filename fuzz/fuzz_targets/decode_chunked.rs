//! Fuzz target: the chunked body decoder. The first two bytes pick split points, the rest is
//! the body. It must decode or be refused, never panic or hang, never consume past the end of
//! the body; and whole, byte-by-byte and three-piece feeding must give the same data, the same
//! consumed count and the same error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluicegate_proto::h1::BodyDecoder;
use sluicegate_proto::{BodyFraming, ProtoError};

type Outcome = Result<(Vec<u8>, usize, bool), ProtoError>;

/// Drive the decoder like the I/O layer: append each piece, decode until it needs more.
fn feed(pieces: &[&[u8]]) -> Outcome {
    let mut d = BodyDecoder::new(BodyFraming::Chunked, 1 << 20, 1024);
    let (mut pending, mut data, mut consumed) = (Vec::new(), Vec::new(), 0);
    for piece in pieces.iter().chain([&&b""[..]]) {
        pending.extend_from_slice(piece);
        loop {
            let step = d.decode(&pending)?;
            assert!(step.consumed <= pending.len());
            data.extend_from_slice(step.data);
            let (n, got, done) = (step.consumed, !step.data.is_empty(), step.done);
            consumed += n;
            pending.drain(..n);
            if done {
                assert_eq!(d.received(), data.len() as u64);
                return Ok((data, consumed, true));
            }
            if n == 0 && !got {
                break;
            }
        }
    }
    Ok((data, consumed, false))
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
