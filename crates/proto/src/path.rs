//! Request-target helpers: percent-decoding of the path for PATH_INFO. Kept apart from the
//! parser because the parser hands out the raw, still-encoded path (REQUEST_URI needs it) and
//! only the WSGI bridge decides when to decode.

use std::borrow::Cow;

use crate::token::hex_val;

/// Percent-decode a path. Invalid escapes (`%zz`, a trailing `%`) are kept literally, as most
/// servers do. Borrowed when there is nothing to decode. `%2F` decodes to `/` (WSGI cannot tell
/// them apart; the raw target is still available to apps as REQUEST_URI / RAW_URI).
pub fn percent_decode(path: &[u8]) -> Cow<'_, [u8]> {
    let Some(first) = next_escape(path, 0) else {
        return Cow::Borrowed(path);
    };
    let mut out = Vec::with_capacity(path.len());
    out.extend_from_slice(&path[..first]);
    let mut i = first;
    while i < path.len() {
        if let Some(byte) = escape_at(path, i) {
            out.push(byte);
            i += 3;
        } else {
            out.push(path[i]);
            i += 1;
        }
    }
    Cow::Owned(out)
}

/// The decoded byte if `path[i..]` starts with a valid `%XX` escape.
#[inline]
fn escape_at(path: &[u8], i: usize) -> Option<u8> {
    if path[i] != b'%' || i + 2 >= path.len() {
        return None;
    }
    Some(hex_val(path[i + 1])? << 4 | hex_val(path[i + 2])?)
}

/// Index of the first valid escape at or after `from`.
fn next_escape(path: &[u8], mut from: usize) -> Option<usize> {
    while let Some(off) = memchr::memchr(b'%', &path[from..]) {
        let i = from + off;
        if escape_at(path, i).is_some() {
            return Some(i);
        }
        from = i + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Vec<u8> {
        percent_decode(s.as_bytes()).into_owned()
    }

    #[test]
    fn nothing_to_decode_is_borrowed() {
        for s in ["", "/", "/a/b", "/100%", "/%zz", "/%4", "/a%"] {
            assert!(
                matches!(percent_decode(s.as_bytes()), Cow::Borrowed(_)),
                "{s}"
            );
            assert_eq!(dec(s), s.as_bytes());
        }
    }

    #[test]
    fn decodes_valid_escapes() {
        assert_eq!(dec("/a%20b"), b"/a b");
        assert_eq!(dec("%2F%2f"), b"//");
        assert_eq!(dec("/%e2%82%AC"), "/€".as_bytes());
        assert_eq!(dec("/%00"), b"/\0");
        assert_eq!(dec("/%ff"), b"/\xff");
        assert!(matches!(percent_decode(b"/%41"), Cow::Owned(_)));
    }

    #[test]
    fn invalid_escapes_kept_literally_next_to_valid_ones() {
        assert_eq!(dec("/%zz%41"), b"/%zzA");
        assert_eq!(dec("/%41%"), b"/A%");
        assert_eq!(dec("/%41%4"), b"/A%4");
        assert_eq!(dec("/%%41"), b"/%A");
        assert_eq!(dec("/%2541"), b"/%41", "decoded once, not twice");
        assert_eq!(dec("%g1%41"), b"%g1A");
    }
}
