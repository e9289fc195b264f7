//! The head's byte rules and its field lines: the pre-scan that checks every byte of a complete
//! head (bare CR, control bytes, obs-fold) and counts its lines, then the field lines read into
//! (name, trimmed value) ranges.

use crate::head::FieldRanges;
use crate::token::{bytes_to_look_at, is_field_value_byte, is_ows, is_tchar};
use crate::ProtoError;

use super::{bad, find_near, rng};

/// How many line ends the pre-scan keeps for `parse_fields` (past them, it searches).
pub(super) const LINE_ENDS: usize = 32;

/// The index of the LF of each of the head's first [`LINE_ENDS`] lines (the request line's
/// first), as the pre-scan found them.
pub(super) struct LineEnds(pub(super) [u32; LINE_ENDS]);

/// The head's byte rules, checked over the whole head in one pass: every CR is
/// followed by LF (the scan already checked CR and LF; re-checked here so `build` stands on its
/// own), no control byte but HTAB, no
/// line starting with whitespace (obs-fold, or whitespace before the first field, RFC 9112 §2.2
/// and §5.2). Returns the number of field lines; `ends` gets where the first lines end.
pub(super) fn prescan(
    head: &[u8],
    line_lf: usize,
    ends: &mut LineEnds,
) -> Result<usize, ProtoError> {
    let mut lines = 0usize;
    let mut look = |i: usize, b: u8| -> Result<(), ProtoError> {
        if b == b'\r' {
            if head.get(i + 1) != Some(&b'\n') {
                return Err(bad("bare CR in the head"));
            }
        } else if b == b'\n' {
            if lines < LINE_ENDS {
                ends.0[lines] = i as u32;
            }
            lines += 1;
            if head.get(i + 1).is_some_and(|&next| is_ows(next)) {
                return Err(if i == line_lf {
                    bad("whitespace before the first header field")
                } else {
                    bad("obsolete line folding in a header field")
                });
            }
        } else if !is_field_value_byte(b) {
            return Err(if b == 0 {
                bad("NUL byte in the head")
            } else {
                bad("control byte in the head")
            });
        }
        Ok(())
    };
    // Eight bytes at a time: only the bytes below 0x20 (CR, LF, HTAB, control bytes) and DEL
    // are looked at, each found by its bit in the word's mask.
    let mut words = head.chunks_exact(8);
    let mut at = 0;
    for word in &mut words {
        let mut mask = bytes_to_look_at(u64::from_le_bytes(word.try_into().unwrap()));
        while mask != 0 {
            let j = (mask.trailing_zeros() / 8) as usize;
            look(at + j, word[j])?;
            mask &= mask - 1;
        }
        at += 8;
    }
    for (j, &b) in words.remainder().iter().enumerate() {
        if b < 0x20 || b == 0x7f {
            look(at + j, b)?;
        }
    }
    // Minus the request line and the final empty line.
    Ok(lines - 2)
}

/// Parse the field lines (`head[from..]`, ending with the empty line) into (name, trimmed
/// value) ranges relative to `head`.
///
/// Our own loop, not httparse's: by now the pre-scan has checked every byte httparse would
/// (CR only in CRLF, no control byte but HTAB, no line starting with whitespace), so what is
/// left is the name (a token up to the colon: no whitespace before it) and trimming the value.
/// httparse checked every byte again, and cost 830 of a hello world's 17,400 instructions;
/// this costs about a fifth of that. httparse stays the oracle: a test here and the
/// `parse_head` fuzz target check that both read every accepted head the same.
pub(super) fn parse_fields(
    head: &[u8],
    from: usize,
    count: usize,
    ends: &LineEnds,
    mut fields: FieldRanges,
) -> Result<FieldRanges, ProtoError> {
    fields.reserve(count);
    // The head ends with CRLFCRLF: the last field line's CRLF, then the empty line's.
    let end = head.len() - 2;
    let mut i = from;
    // Field line k is the head's line k + 1.
    for k in 1..=count {
        // The line's only CR is its CRLF's (pre-scan).
        let cr = match ends.0.get(k) {
            Some(&lf) => lf as usize - 1,
            None => i + find_near(b'\r', &head[i..end]).expect("every line ends with CRLF"),
        };
        let line = &head[i..cr];
        let colon = find_near(b':', line).ok_or(bad(
            "invalid header field name (or whitespace before the colon)",
        ))?;
        if colon == 0 {
            return Err(bad("empty header field name"));
        }
        // Every byte looked at (no early exit): a tight loop for names of a few words.
        if !line[..colon].iter().fold(true, |ok, &b| ok & is_tchar(b)) {
            return Err(bad(
                "invalid header field name (or whitespace before the colon)",
            ));
        }
        let (mut v0, mut v1) = (i + colon + 1, cr);
        while v0 < v1 && is_ows(head[v0]) {
            v0 += 1;
        }
        while v1 > v0 && is_ows(head[v1 - 1]) {
            v1 -= 1;
        }
        fields.push((rng(i, i + colon), rng(v0, v1)));
        i = cr + 2;
    }
    debug_assert_eq!(i, end);
    Ok(fields)
}
