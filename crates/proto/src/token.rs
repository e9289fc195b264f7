//! Byte classes of RFC 9110 §5.6 (token, field value, control bytes) and the small integer
//! formatters, shared by the parser, the body decoder and the encoder so that all three agree
//! on exactly which bytes are legal where.

/// A 256-entry byte class: ASCII letters and digits, and the bytes of `extra` (one load per
/// byte on the hot path, where a `matches!` over the specials is a chain of compares).
pub(crate) const fn alnum_and(extra: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut b = 0usize;
    while b < 256 {
        t[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    let mut i = 0;
    while i < extra.len() {
        t[extra[i] as usize] = true;
        i += 1;
    }
    t
}

/// `tchar` of RFC 9110 §5.6.2.
static TCHAR: [bool; 256] = alnum_and(b"!#$%&'*+-.^_`|~");

/// One `tchar` (RFC 9110 §5.6.2).
#[inline]
pub(crate) fn is_tchar(b: u8) -> bool {
    TCHAR[b as usize]
}

/// A non-empty RFC 9110 token.
#[inline]
pub(crate) fn is_token(s: &[u8]) -> bool {
    // Every byte looked at (no early exit): a tight loop for the few bytes of a name.
    !s.is_empty() && s.iter().fold(true, |ok, &b| ok & is_tchar(b))
}

pub(crate) const ONES: u64 = 0x0101_0101_0101_0101;
const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// The high bit of each byte of `w` (eight head bytes, little-endian) that is below 0x20 (CR,
/// LF, HTAB, a control byte) or DEL; exact, with no carry between bytes.
#[inline]
pub(crate) fn bytes_to_look_at(w: u64) -> u64 {
    // b < 0x20 exactly when its high bit is clear and (b & 0x7f) + 0x60 stays below 0x80.
    let below_space = !((w & LOW7) + ONES * 0x60) & !w & !LOW7;
    below_space | zero_bytes(w ^ (ONES * 0x7f))
}

/// The high bit of each zero byte of `y`; exact.
#[inline]
pub(crate) fn zero_bytes(y: u64) -> u64 {
    !(((y & LOW7) + LOW7) | y) & !LOW7
}

/// `s` equals `lower`, a lowercase ASCII word, ignoring ASCII case: what
/// `s.eq_ignore_ascii_case(lower)` says, eight bytes at a time (a word's capitals made small by
/// their bits, no per-byte branch). The framing fields' names and tokens are matched with it on
/// every request (`h1::parse::framing`): the byte-by-byte compare cost about 19 instructions a
/// byte there (callgrind, `Connection: Keep-Alive`: 190 of a hello world's 19,100).
#[inline]
pub(crate) fn eq_lowercase(s: &[u8], lower: &[u8]) -> bool {
    debug_assert!(!lower.iter().any(u8::is_ascii_uppercase));
    let n = s.len();
    if n != lower.len() {
        return false;
    }
    let word = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    if n >= 8 {
        let mut i = 0;
        while i + 8 <= n {
            if to_lower_word(word(s, i)) != word(lower, i) {
                return false;
            }
            i += 8;
        }
        // The last eight bytes, overlapping the words compared already.
        n.is_multiple_of(8) || to_lower_word(word(s, n - 8)) == word(lower, n - 8)
    } else if n >= 4 {
        // The first four and the last four, which overlap for fewer than eight.
        let half = |b: &[u8]| {
            let first = u32::from_le_bytes(b[..4].try_into().unwrap());
            let last = u32::from_le_bytes(b[n - 4..].try_into().unwrap());
            u64::from(first) | u64::from(last) << 32
        };
        to_lower_word(half(s)) == half(lower)
    } else {
        s.iter()
            .zip(lower)
            .all(|(a, b)| a.to_ascii_lowercase() == *b)
    }
}

/// `w` (eight bytes, little-endian) with its ASCII capitals made small; every other byte, one
/// with the high bit set included, as it was. Exact, with no carry between bytes.
#[inline]
fn to_lower_word(w: u64) -> u64 {
    let low = w & LOW7;
    // Of (b & 0x7f): at least 'A' (0x41) when + 0x3f sets the high bit; above 'Z' (0x5a) when
    // + 0x25 does. A capital is at least 'A', not above 'Z', and has its own high bit clear.
    let capital = (low + ONES * 0x3f) & !(low + ONES * 0x25) & !w & !LOW7;
    w | (capital >> 2)
}

/// Every byte of `v` is allowed in a field value (`is_field_value_byte`), eight bytes at a
/// time: only the bytes below 0x20 and DEL are looked at one by one (to let HTAB through).
#[inline]
pub(crate) fn all_field_value_bytes(v: &[u8]) -> bool {
    let mut words = v.chunks_exact(8);
    for word in &mut words {
        let mut mask = bytes_to_look_at(u64::from_le_bytes(word.try_into().unwrap()));
        while mask != 0 {
            if word[(mask.trailing_zeros() / 8) as usize] != b'\t' {
                return false;
            }
            mask &= mask - 1;
        }
    }
    words.remainder().iter().all(|&b| is_field_value_byte(b))
}

/// A byte allowed in a field value: VCHAR, SP, HTAB, obs-text. Everything else is a control
/// byte (CTL of RFC 5234: 0x00-0x1F and DEL), which also covers CR, LF and NUL.
#[inline]
pub(crate) fn is_field_value_byte(b: u8) -> bool {
    b == b'\t' || (b >= 0x20 && b != 0x7f)
}

/// Optional whitespace (OWS/BWS of RFC 9110 §5.6.3).
#[inline]
pub(crate) fn is_ows(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// `s` without leading and trailing SP/HTAB.
pub(crate) fn trim_ows(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&b| !is_ows(b)).unwrap_or(s.len());
    let end = s.iter().rposition(|&b| !is_ows(b)).map_or(start, |p| p + 1);
    &s[start..end]
}

/// Elements of a comma-separated list (RFC 9110 §5.6.1), trimmed; empty elements are skipped
/// as the RFC requires of recipients.
pub(crate) fn list_elements(s: &[u8]) -> impl Iterator<Item = &[u8]> {
    s.split(|&b| b == b',')
        .map(trim_ows)
        .filter(|e| !e.is_empty())
}

/// Longest decimal u64 ("18446744073709551615").
pub const U64_DEC_LEN: usize = 20;

/// Write `n` in decimal into the end of `buf`; returns the used suffix. No allocation, no
/// `fmt` machinery (which costs ~10x more for a Content-Length on every response).
#[inline]
pub(crate) fn u64_to_dec(mut n: u64, buf: &mut [u8; U64_DEC_LEN]) -> &[u8] {
    let mut i = U64_DEC_LEN;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}

/// Append `n` in decimal to `out`.
#[inline]
pub(crate) fn push_dec(out: &mut Vec<u8>, n: u64) {
    let mut buf = [0u8; U64_DEC_LEN];
    out.extend_from_slice(u64_to_dec(n, &mut buf));
}

/// Value of one ASCII hex digit.
#[inline]
pub(crate) fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_field_value_bytes_agrees_with_the_byte_rule_everywhere() {
        // Every byte value at every position of every length up to 19 (two words and a tail),
        // in a run of allowed bytes and next to a HTAB.
        for len in 1..20usize {
            for pos in 0..len {
                for b in 0..=255u8 {
                    for fill in [b'a', b'\t', 0x80] {
                        let mut v = vec![fill; len];
                        v[pos] = b;
                        let want = v.iter().all(|&c| is_field_value_byte(c));
                        assert_eq!(all_field_value_bytes(&v), want, "{v:?}");
                    }
                }
            }
        }
        assert!(all_field_value_bytes(b""));
    }

    /// The word-at-a-time compare says what `eq_ignore_ascii_case` says, for every byte in
    /// every place of names of 1 to 20 bytes (the bytes next to the letters' cases, '@' '['
    /// '`' '{', and those with the high bit set, included).
    #[test]
    fn eq_lowercase_is_eq_ignore_ascii_case() {
        for len in 1..=20usize {
            let lower: Vec<u8> = (0..len).map(|i| b"keep-alive-100chunked"[i]).collect();
            assert!(eq_lowercase(&lower, &lower));
            let upper = lower.to_ascii_uppercase();
            assert!(eq_lowercase(&upper, &lower));
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut s = lower.clone();
                    s[at] = b;
                    assert_eq!(
                        eq_lowercase(&s, &lower),
                        s.eq_ignore_ascii_case(&lower),
                        "len {len} at {at} byte {b:#x}"
                    );
                }
            }
            assert!(!eq_lowercase(&lower[..len - 1], &lower));
        }
        assert!(eq_lowercase(b"", b""));
    }

    #[test]
    fn tchar_is_exactly_rfc9110() {
        let specials = b"!#$%&'*+-.^_`|~";
        for b in 0..=255u8 {
            let want = b.is_ascii_alphanumeric() || specials.contains(&b);
            assert_eq!(is_tchar(b), want, "byte {b:#x}");
        }
        assert!(is_token(b"GET"));
        assert!(!is_token(b""));
        assert!(!is_token(b"a b"));
        assert!(!is_token(b"a:b"));
    }

    #[test]
    fn field_value_bytes() {
        assert!(is_field_value_byte(b'\t'));
        assert!(is_field_value_byte(b' '));
        assert!(is_field_value_byte(b'~'));
        assert!(is_field_value_byte(0x80));
        assert!(is_field_value_byte(0xff));
        for b in [0u8, b'\r', b'\n', 0x1f, 0x7f, 0x01] {
            assert!(!is_field_value_byte(b), "byte {b:#x}");
        }
    }

    #[test]
    fn trimming_and_lists() {
        assert_eq!(trim_ows(b" \t a b \t"), b"a b");
        assert_eq!(trim_ows(b"   "), b"");
        assert_eq!(trim_ows(b""), b"");
        let v: Vec<&[u8]> = list_elements(b" a ,, b\t, ,c").collect();
        assert_eq!(v, [&b"a"[..], b"b", b"c"]);
    }

    #[test]
    fn decimal_formatting() {
        for n in [0u64, 1, 9, 10, 99, 100, 12345, u32::MAX as u64, u64::MAX] {
            let mut buf = [0u8; U64_DEC_LEN];
            assert_eq!(u64_to_dec(n, &mut buf), n.to_string().as_bytes());
            let mut out = b"x".to_vec();
            push_dec(&mut out, n);
            assert_eq!(out, format!("x{n}").as_bytes());
        }
    }

    #[test]
    fn hex_digits() {
        assert_eq!(hex_val(b'0'), Some(0));
        assert_eq!(hex_val(b'a'), Some(10));
        assert_eq!(hex_val(b'F'), Some(15));
        assert_eq!(hex_val(b'g'), None);
        assert_eq!(hex_val(b'_'), None);
    }
}
