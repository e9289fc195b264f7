//! Test support shared by the crate's unit tests, its robustness tests and the fuzz targets:
//! feeding a body decoder the way the I/O layer does, so every one of them checks the same
//! contract (habit 6: whole, one byte at a time, split, with trailing bytes — same result).
//! Not part of the server's API.

use crate::h1::BodyDecoder;
use crate::ProtoError;

/// What feeding a decoder gave: (body data, bytes consumed, done), or the error.
pub type Fed = Result<(Vec<u8>, usize, bool), ProtoError>;

/// Play the I/O layer: append each piece to a pending buffer, decode until the decoder needs
/// more, drop what it consumed; stop at `done`. A last empty feed follows, so that a body that
/// needs no bytes is seen done however it was split. Checks on the way that the decoder never
/// consumes more than it was given, that data is a zero-copy slice of the input right before
/// what was consumed, and that `received()` counts the data.
pub fn feed_decoder(mut d: BodyDecoder, pieces: &[&[u8]]) -> Fed {
    let (mut pending, mut data, mut consumed) = (Vec::new(), Vec::new(), 0);
    for piece in pieces.iter().chain([&&b""[..]]) {
        pending.extend_from_slice(piece);
        loop {
            let step = d.decode(&pending)?;
            assert!(step.consumed <= pending.len(), "consumed past the input");
            if !step.data.is_empty() {
                let at = step.data.as_ptr() as usize - pending.as_ptr() as usize;
                assert_eq!(
                    at + step.data.len(),
                    step.consumed,
                    "data is not a slice of input"
                );
            }
            data.extend_from_slice(step.data);
            let (n, got_data, done) = (step.consumed, !step.data.is_empty(), step.done);
            consumed += n;
            pending.drain(..n);
            assert_eq!(done, d.is_done());
            if done {
                assert_eq!(d.received(), data.len() as u64);
                return Ok((data, consumed, true));
            }
            if n == 0 && !got_data {
                break;
            }
        }
    }
    Ok((data, consumed, false))
}

/// Limits so small that almost every input passes one of them: robustness tests use them to
/// reach every refusal.
pub fn tiny_limits() -> crate::Limits {
    crate::Limits {
        max_request_line: 8,
        max_header_bytes: 64,
        max_headers: 1,
        max_body: 2,
        max_field_bytes: 6,
    }
}
