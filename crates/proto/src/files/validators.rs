//! Validators (RFC 9110 §8.8): the strong ETag and Last-Modified of a file representation, and
//! the entity-tag comparisons that conditional requests need. Derived only from metadata the
//! I/O layer got from `fstat`, so no file is read to validate.

use super::{Encoding, StackBuf};

/// What the I/O layer learned from `fstat` on an open representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileMeta {
    /// `st_size`, bytes.
    pub size: u64,
    /// `st_mtime` (seconds since the Unix epoch; negative before 1970).
    pub mtime_secs: i64,
    /// `st_mtime_nsec`.
    pub mtime_nanos: u32,
    /// `st_ino`: two files written in the same nanosecond with the same size still differ.
    pub inode: u64,
}

/// Longest ETag: `"` + 16 + `.` + 8 + `-` + 16 + `-` + 16 + `-br` + `"` = 64 bytes.
const ETAG_CAP: usize = 64;

/// A strong entity tag, quotes included:
/// `"<mtime secs hex>.<mtime nanos hex>-<size hex>-<inode hex>[-br|-gz]"`.
///
/// Strong because any change of content changes size or mtime (or, for a replaced file, the
/// inode), nanoseconds included; the encoding suffix gives each representation its own tag
/// (RFC 9110 §8.8.3: a gzip body and the plain body are different representations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ETag(StackBuf<ETAG_CAP>);

impl ETag {
    pub fn new(meta: &FileMeta, encoding: Encoding) -> ETag {
        let mut v = StackBuf::new();
        v.push(b"\"");
        // Two's complement keeps pre-1970 times distinct; the tag is opaque to clients.
        v.push_hex(meta.mtime_secs as u64);
        v.push(b".");
        v.push_hex(u64::from(meta.mtime_nanos));
        v.push(b"-");
        v.push_hex(meta.size);
        v.push(b"-");
        v.push_hex(meta.inode);
        v.push(encoding.etag_suffix());
        v.push(b"\"");
        ETag(v)
    }
    /// The field value, quotes included.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

/// The Last-Modified time to announce (and compare against), seconds since the epoch:
/// the mtime, but never later than `now` (RFC 9110 §8.8.2.1: a future mtime becomes the
/// response's Date). `None` for times before 1970, which an HTTP-date cannot show.
pub(super) fn last_modified(meta: &FileMeta, now: Option<u64>) -> Option<u64> {
    let mtime = u64::try_from(meta.mtime_secs).ok()?;
    Some(now.map_or(mtime, |now| mtime.min(now)))
}

/// Whether the If-Match / If-None-Match field lines `values` match the current ETag `current`
/// (always strong here). `*` matches any current representation. `strong` selects the
/// comparison: strong (If-Match, RFC 9110 §8.8.3.2: a `W/` tag never matches) or weak
/// (If-None-Match: `W/"x"` matches `"x"`).
///
/// Entity tags may contain commas, so the list is tokenised by quotes, not split on commas.
/// Parsing of a line stops at the first malformed element (a tag followed by anything but a
/// comma is malformed): tags before it still count.
pub(super) fn etag_list_matches<'a>(
    values: impl IntoIterator<Item = &'a [u8]>,
    current: &[u8],
    strong: bool,
) -> bool {
    values
        .into_iter()
        .any(|value| line_matches(value, current, strong))
}

fn line_matches(mut s: &[u8], current: &[u8], strong: bool) -> bool {
    loop {
        // Skip OWS and empty list elements.
        while let [b' ' | b'\t' | b',', rest @ ..] = s {
            s = rest;
        }
        let weak = match s {
            [] => return false,
            [b'*', ..] => return true,
            [b'W', b'/', rest @ ..] => {
                s = rest;
                true
            }
            _ => false,
        };
        if s.first() != Some(&b'"') {
            return false;
        }
        let Some(close) = memchr::memchr(b'"', &s[1..]) else {
            return false;
        };
        let (tag, rest) = s.split_at(close + 2);
        s = rest;
        while let [b' ' | b'\t', rest @ ..] = s {
            s = rest;
        }
        if !matches!(s, [] | [b',', ..]) {
            return false; // junk right after a tag: this element is malformed
        }
        if tag == current && !(strong && weak) {
            return true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const META: FileMeta = FileMeta {
        size: 21_324,
        mtime_secs: 1_700_000_000,
        mtime_nanos: 123_456_789,
        inode: 0xabc,
    };

    fn tag(meta: &FileMeta, e: Encoding) -> String {
        String::from_utf8(ETag::new(meta, e).as_bytes().to_vec()).unwrap()
    }

    #[test]
    fn etag_format_and_per_encoding_suffix() {
        assert_eq!(
            tag(&META, Encoding::Identity),
            "\"6553f100.75bcd15-534c-abc\""
        );
        assert_eq!(
            tag(&META, Encoding::Brotli),
            "\"6553f100.75bcd15-534c-abc-br\""
        );
        assert_eq!(
            tag(&META, Encoding::Gzip),
            "\"6553f100.75bcd15-534c-abc-gz\""
        );
        let max = FileMeta {
            size: u64::MAX,
            mtime_secs: -1,
            mtime_nanos: 999_999_999,
            inode: u64::MAX,
        };
        let t = tag(&max, Encoding::Brotli);
        assert_eq!(t.len(), ETAG_CAP);
        assert!(t.bytes().all(|b| b == b'"' || (0x21..0x7f).contains(&b)));
        assert_eq!(tag(&FileMeta::default(), Encoding::Identity), "\"0.0-0-0\"");
    }

    #[test]
    fn etag_changes_with_each_input() {
        let base = tag(&META, Encoding::Identity);
        for changed in [
            FileMeta { size: 1, ..META },
            FileMeta {
                mtime_secs: 1,
                ..META
            },
            FileMeta {
                mtime_nanos: 1,
                ..META
            },
            FileMeta { inode: 1, ..META },
        ] {
            assert_ne!(tag(&changed, Encoding::Identity), base);
        }
    }

    #[test]
    fn last_modified_is_clamped_to_now_and_never_before_1970() {
        assert_eq!(last_modified(&META, None), Some(1_700_000_000));
        assert_eq!(
            last_modified(&META, Some(1_800_000_000)),
            Some(1_700_000_000)
        );
        assert_eq!(last_modified(&META, Some(5)), Some(5), "future mtime");
        let old = FileMeta {
            mtime_secs: -5,
            ..META
        };
        assert_eq!(last_modified(&old, Some(5)), None);
    }

    fn m(line: &str, strong: bool) -> bool {
        etag_list_matches([line.as_bytes()], b"\"abc\"", strong)
    }

    #[test]
    fn strong_and_weak_comparison() {
        // RFC 9110 §8.8.3.2's table: W/"1" vs W/"1" no/yes, W/"1" vs "1" no/yes,
        // "1" vs "1" yes/yes (current is always strong here).
        assert!(m("\"abc\"", true));
        assert!(m("\"abc\"", false));
        assert!(!m("W/\"abc\"", true));
        assert!(m("W/\"abc\"", false));
        assert!(!m("\"abd\"", false));
        assert!(!m("\"ABC\"", false), "case-sensitive");
    }

    #[test]
    fn lists_star_and_commas_inside_tags() {
        assert!(m("*", true));
        assert!(m("*", false));
        assert!(m("\"x\", \"abc\"", true));
        assert!(m("\"x\",\"abc\"", true));
        assert!(m(" , \"x\" ,, W/\"y\" ,\t\"abc\" ", true));
        assert!(!m("\"x\", \"y\"", false));
        assert!(!m("\"a,b\", \"c\"", false));
        assert!(etag_list_matches([&b"\"a,b\""[..]], b"\"a,b\"", true));
        assert!(!m("\"abc", false), "unterminated");
        assert!(!m("abc", false), "unquoted");
        assert!(!m("\"x\" junk, \"abc\"", false), "stops at junk");
        assert!(
            !m("\"abc\" junk", false),
            "a tag followed by junk is malformed"
        );
        assert!(!m("\"abc\"-gz", false));
        assert!(
            m("\"abc\", junk", false),
            "tags before a malformed element count"
        );
        assert!(!m("", false));
        assert!(!m("W/", false));
        let lines: [&[u8]; 2] = [b"\"x\"", b"\"abc\""];
        assert!(etag_list_matches(lines, b"\"abc\"", true), "several lines");
    }
}
