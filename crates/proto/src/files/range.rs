//! Range requests (RFC 9110 §14): parse `Range: bytes=...` against the selected
//! representation's size and decide 206 (one range), 416 (none satisfiable) or the whole file.
//!
//! Several satisfiable ranges get the whole file (200), never multipart/byteranges: RFC 9110
//! §14.2 lets a server ignore Range, clients (browsers, video players, download managers) ask
//! for one range at a time, and it removes the classic abuse of many small or overlapping
//! ranges that make a server send a file many times over (CVE-2011-3192, "Apache Killer").

use crate::token::list_elements;

/// Most range-specs read from one Range field; beyond this the field is ignored (200). Bounds
/// the parsing work; legitimate clients send one.
pub const MAX_RANGES: usize = 16;

/// What to send for a Range field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeDecision {
    /// Ignore the field: 200 with the whole representation. For a missing, invalid (any
    /// malformed range-spec), non-`bytes` or oversized field, several satisfiable ranges, or a
    /// zero-length representation.
    Full,
    /// 206 with `Content-Range: bytes first-last/size`; `len > 0`, `offset + len <= size`.
    Partial { offset: u64, len: u64 },
    /// 416 with `Content-Range: bytes */size`: no range-spec overlaps the representation.
    Unsatisfiable,
}

/// Decide the Range field `value` (trimmed) for a representation of `size` bytes.
///
/// Grammar (§14.1.1): `"bytes" "=" 1#( first-pos "-" [ last-pos ] / "-" suffix-length )`,
/// unit case-insensitive, OWS only around the list's commas, empty list elements skipped.
/// `last-pos` past the end is clamped; a suffix longer than the file is the whole file;
/// `-0` is syntactically valid but unsatisfiable. Numbers too large for u64 saturate (and so
/// are simply beyond the end).
pub fn evaluate_range(value: &[u8], size: u64) -> RangeDecision {
    let Some(eq) = memchr::memchr(b'=', value) else {
        return RangeDecision::Full;
    };
    if !value[..eq].eq_ignore_ascii_case(b"bytes") {
        return RangeDecision::Full;
    }
    let mut specs = 0;
    let mut satisfiable = 0;
    let mut chosen = RangeDecision::Unsatisfiable;
    for spec in list_elements(&value[eq + 1..]) {
        specs += 1;
        if specs > MAX_RANGES {
            return RangeDecision::Full;
        }
        let Some(parsed) = parse_spec(spec) else {
            return RangeDecision::Full;
        };
        if let Some(range) = satisfy(parsed, size) {
            satisfiable += 1;
            chosen = range;
        }
    }
    match (specs, satisfiable) {
        (0, _) => RangeDecision::Full, // "bytes=" or "bytes= , ": no range-spec at all
        _ if size == 0 => RangeDecision::Full,
        (_, 0) => RangeDecision::Unsatisfiable,
        (_, 1) => chosen,
        _ => RangeDecision::Full,
    }
}

/// `first-last`, `first-` (last = None) or `-suffix` (first = None, last = Some(suffix)).
type Spec = (Option<u64>, Option<u64>);

fn parse_spec(spec: &[u8]) -> Option<Spec> {
    let dash = memchr::memchr(b'-', spec)?;
    let (first, last) = (&spec[..dash], &spec[dash + 1..]);
    match (first.is_empty(), last.is_empty()) {
        (true, true) => None,
        (true, false) => Some((None, Some(digits(last)?))),
        (false, true) => Some((Some(digits(first)?), None)),
        (false, false) => {
            let (first, last) = (digits(first)?, digits(last)?);
            // last < first makes the whole field invalid (§14.1.1).
            (first <= last).then_some((Some(first), Some(last)))
        }
    }
}

/// `1*DIGIT`, saturating at u64::MAX.
fn digits(s: &[u8]) -> Option<u64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0u64, |n, &d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

fn satisfy((first, last): Spec, size: u64) -> Option<RangeDecision> {
    let (offset, end) = match (first, last) {
        (Some(first), _) if first >= size => return None,
        (Some(first), Some(last)) => (first, last.min(size - 1)),
        (Some(first), None) => (first, size - 1),
        (None, Some(suffix)) if suffix > 0 && size > 0 => (size - suffix.min(size), size - 1),
        _ => return None,
    };
    Some(RangeDecision::Partial {
        offset,
        len: end - offset + 1,
    })
}

#[cfg(test)]
mod tests {
    use super::RangeDecision::*;
    use super::*;

    fn eval(v: &str, size: u64) -> RangeDecision {
        evaluate_range(v.as_bytes(), size)
    }
    fn part(offset: u64, len: u64) -> RangeDecision {
        Partial { offset, len }
    }

    /// RFC 9110 §14.1.2's examples on a 10000-byte representation.
    #[test]
    fn rfc_examples() {
        assert_eq!(eval("bytes=0-499", 10_000), part(0, 500), "first 500 bytes");
        assert_eq!(eval("bytes=500-999", 10_000), part(500, 500), "second 500");
        assert_eq!(eval("bytes=-500", 10_000), part(9_500, 500), "final 500");
        assert_eq!(eval("bytes=9500-", 10_000), part(9_500, 500), "final 500");
        assert_eq!(
            eval("bytes=0-0,-1", 10_000),
            Full,
            "first and last: two ranges"
        );
        // Other valid (but not canonical) specs of the second 500 bytes.
        assert_eq!(eval("bytes=500-600,601-999", 10_000), Full);
        assert_eq!(eval("bytes=500-700,601-999", 10_000), Full, "overlapping");
    }

    #[test]
    fn single_ranges_at_the_edges() {
        assert_eq!(eval("bytes=0-0", 1), part(0, 1));
        assert_eq!(eval("bytes=0-", 1), part(0, 1));
        assert_eq!(eval("bytes=-1", 1), part(0, 1));
        assert_eq!(
            eval("bytes=-100", 10),
            part(0, 10),
            "suffix longer than the file"
        );
        assert_eq!(eval("bytes=5-1000", 10), part(5, 5), "last-pos clamped");
        assert_eq!(eval("bytes=9-9", 10), part(9, 1));
        assert_eq!(eval("bytes=0-18446744073709551615", 10), part(0, 10));
        assert_eq!(
            eval("bytes=0-99999999999999999999999", 10),
            part(0, 10),
            "saturates"
        );
    }

    #[test]
    fn unsatisfiable() {
        assert_eq!(eval("bytes=10-", 10), Unsatisfiable);
        assert_eq!(eval("bytes=10-20", 10), Unsatisfiable);
        assert_eq!(eval("bytes=-0", 10), Unsatisfiable);
        assert_eq!(eval("bytes=10-20, 30-", 10), Unsatisfiable);
        assert_eq!(eval("bytes=99999999999999999999999-", 10), Unsatisfiable);
    }

    #[test]
    fn one_satisfiable_among_unsatisfiable_ones_is_served() {
        assert_eq!(eval("bytes=100-200, 0-4", 10), part(0, 5));
        assert_eq!(eval("bytes=-0, 2-3", 10), part(2, 2));
    }

    #[test]
    fn whitespace_per_the_grammar() {
        assert_eq!(
            eval("bytes=0-1 , 5-6", 10),
            Full,
            "OWS around commas: two ranges"
        );
        assert_eq!(
            eval("bytes= 0-4", 10),
            part(0, 5),
            "OWS before a list element"
        );
        assert_eq!(eval("bytes=0-4 ,", 10), part(0, 5));
        assert_eq!(
            eval("bytes=,, 0-4", 10),
            part(0, 5),
            "empty elements skipped"
        );
        assert_eq!(eval("bytes=\t0-4\t", 10), part(0, 5));
        // Not allowed inside a range-spec or around "=".
        for bad in ["bytes=0 -4", "bytes=0- 4", "bytes =0-4", "bytes=- 4"] {
            assert_eq!(eval(bad, 10), Full, "{bad:?}");
        }
    }

    #[test]
    fn invalid_fields_are_ignored() {
        for bad in [
            "",
            "bytes",
            "bytes=",
            "bytes= , ",
            "bytes=-",
            "bytes=a-b",
            "bytes=1-a",
            "bytes=5-4",
            "bytes=0-4,5-4",
            "bytes=0x1-2",
            "bytes=+1-2",
            "bytes=1--2",
            "bytes=1-2-3",
            "bytes=0-4;x",
            "bytes==0-4",
            "items=0-4",
            "bytes 0-4",
            "=0-4",
        ] {
            assert_eq!(eval(bad, 10), Full, "{bad:?}");
        }
        assert_eq!(
            eval("BYTES=0-4", 10),
            part(0, 5),
            "unit is case-insensitive"
        );
        assert_eq!(eval("Bytes=0-4", 10), part(0, 5));
    }

    #[test]
    fn too_many_ranges_are_ignored() {
        let many: Vec<String> = (0..=MAX_RANGES)
            .map(|i| format!("{}-{}", i * 2, i * 2))
            .collect();
        assert_eq!(eval(&format!("bytes={}", many.join(",")), 1000), Full);
        let unsat: Vec<String> = (0..=MAX_RANGES).map(|i| format!("{}-", 100 + i)).collect();
        assert_eq!(eval(&format!("bytes={}", unsat.join(",")), 10), Full);
        let at_limit = "2000-,".repeat(MAX_RANGES - 1) + "0-0";
        assert_eq!(eval(&format!("bytes={at_limit}"), 10), part(0, 1));
    }

    #[test]
    fn zero_length_representation_ignores_range() {
        for v in ["bytes=0-", "bytes=-5", "bytes=0-0", "bytes=-0"] {
            assert_eq!(eval(v, 0), Full, "{v:?}");
        }
    }

    #[test]
    fn ranges_never_exceed_the_file() {
        // Exhaustive over small files and positions.
        for size in 0..6u64 {
            for a in 0..8u64 {
                for b in a..8u64 {
                    for v in [
                        format!("bytes={a}-{b}"),
                        format!("bytes={a}-"),
                        format!("bytes=-{b}"),
                    ] {
                        if let Partial { offset, len } = eval(&v, size) {
                            assert!(len > 0 && offset + len <= size, "{v} on {size}");
                        }
                    }
                }
            }
        }
    }
}
