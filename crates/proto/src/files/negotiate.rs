//! Which representation to send: the file itself or a precompressed sibling (`x.br`, `x.gz`),
//! from the request's Accept-Encoding (RFC 9110 §12.5.3) and what exists on disk. Only
//! precompressed files are served: compressing on the fly would cost CPU per request and
//! defeat `sendfile`.

use crate::token::{list_elements, trim_ows};

/// A representation of a static file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// The file as is.
    Identity,
    /// `file.br`, sent with `Content-Encoding: br`.
    Brotli,
    /// `file.gz`, sent with `Content-Encoding: gzip`.
    Gzip,
}

impl Encoding {
    /// What the I/O layer appends to the file name to find this representation.
    pub fn file_suffix(self) -> &'static [u8] {
        match self {
            Encoding::Identity => b"",
            Encoding::Brotli => b".br",
            Encoding::Gzip => b".gz",
        }
    }
    /// The Content-Encoding value, `None` for identity.
    pub fn content_coding(self) -> Option<&'static [u8]> {
        match self {
            Encoding::Identity => None,
            Encoding::Brotli => Some(b"br"),
            Encoding::Gzip => Some(b"gzip"),
        }
    }
    /// Appended to the ETag so each representation has its own (RFC 9110 §8.8.3).
    pub(super) fn etag_suffix(self) -> &'static [u8] {
        match self {
            Encoding::Identity => b"",
            Encoding::Brotli => b"-br",
            Encoding::Gzip => b"-gz",
        }
    }
}

/// Choose the representation for the Accept-Encoding field lines `values` (all lines of the
/// field, in order; none = no header), given which siblings exist.
///
/// - No Accept-Encoding: identity (the client stated no preference; compressed bytes could
///   surprise it).
/// - Otherwise each coding's q-value is its own entry, else `*`'s, else 0 — except identity,
///   which stays acceptable unless excluded by `identity;q=0` or by `*;q=0` without an
///   identity entry, but, when not listed, as the least preferred choice (q=0.001): a client
///   that sends `gzip;q=0.8` wants gzip. `x-gzip` is `gzip` (RFC 9110 §18.6).
/// - The highest q > 0 among the available representations wins; ties prefer br, then gzip,
///   then identity (smallest first).
/// - If nothing available is acceptable: identity (instead of 406; RFC 9110 allows either).
///
/// An element with a malformed weight (`gzip;q=2`, `br;q=x`) is ignored, as if not sent.
pub fn choose_encoding<'a>(
    values: impl IntoIterator<Item = &'a [u8]>,
    has_br: bool,
    has_gzip: bool,
) -> Encoding {
    let mut values = values.into_iter().peekable();
    if values.peek().is_none() || !(has_br || has_gzip) {
        return Encoding::Identity;
    }
    let mut q = Weights::default();
    for value in values {
        for element in list_elements(value) {
            q.add(element);
        }
    }
    let star = q.star;
    let candidates = [
        (has_br, q.br.or(star).unwrap_or(0), Encoding::Brotli),
        (has_gzip, q.gzip.or(star).unwrap_or(0), Encoding::Gzip),
        (true, q.identity.or(star).unwrap_or(1), Encoding::Identity),
    ];
    let mut best = (0u16, Encoding::Identity);
    for (available, weight, encoding) in candidates {
        if available && weight > best.0 {
            best = (weight, encoding);
        }
    }
    best.1
}

/// Weights (thousandths) of the codings we care about; the first entry for a coding counts.
#[derive(Default)]
struct Weights {
    br: Option<u16>,
    gzip: Option<u16>,
    identity: Option<u16>,
    star: Option<u16>,
}

impl Weights {
    fn add(&mut self, element: &[u8]) {
        let mut parts = element.split(|&b| b == b';');
        let coding = trim_ows(parts.next().unwrap_or_default());
        let mut weight = Some(1000);
        for param in parts.map(trim_ows) {
            if let [b'q' | b'Q', b'=', v @ ..] = param {
                weight = parse_qvalue(v);
            }
        }
        let Some(weight) = weight else {
            return;
        };
        let slot = if coding.eq_ignore_ascii_case(b"br") {
            &mut self.br
        } else if coding.eq_ignore_ascii_case(b"gzip") || coding.eq_ignore_ascii_case(b"x-gzip") {
            &mut self.gzip
        } else if coding.eq_ignore_ascii_case(b"identity") {
            &mut self.identity
        } else if coding == b"*" {
            &mut self.star
        } else {
            return;
        };
        slot.get_or_insert(weight);
    }
}

/// `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )` in thousandths.
fn parse_qvalue(v: &[u8]) -> Option<u16> {
    let (int, frac) = match v {
        [d, b'.', frac @ ..] => (*d, frac),
        [d] => (*d, &[][..]),
        _ => return None,
    };
    if frac.len() > 3 || !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut thousandths = 0u16;
    for i in 0..3 {
        let digit = frac.get(i).map_or(0, |d| u16::from(d - b'0'));
        thousandths = thousandths * 10 + digit;
    }
    match int {
        b'0' => Some(thousandths),
        b'1' if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::Encoding::*;
    use super::*;

    fn choose(header: Option<&str>, br: bool, gz: bool) -> Encoding {
        choose_encoding(header.map(str::as_bytes), br, gz)
    }
    fn both(header: &str) -> Encoding {
        choose(Some(header), true, true)
    }

    #[test]
    fn qvalues() {
        for (v, want) in [
            ("0", Some(0)),
            ("1", Some(1000)),
            ("0.5", Some(500)),
            ("0.05", Some(50)),
            ("0.001", Some(1)),
            ("0.", Some(0)),
            ("1.", Some(1000)),
            ("1.000", Some(1000)),
            ("1.001", None),
            ("0.0001", None),
            ("2", None),
            ("", None),
            (".5", None),
            ("0.a", None),
            ("-1", None),
        ] {
            assert_eq!(parse_qvalue(v.as_bytes()), want, "{v:?}");
        }
    }

    #[test]
    fn no_header_or_no_siblings_is_identity() {
        assert_eq!(choose(None, true, true), Identity);
        assert_eq!(choose(Some("br, gzip"), false, false), Identity);
    }

    #[test]
    fn prefers_br_then_gzip_on_equal_weights() {
        assert_eq!(both("gzip, deflate, br"), Brotli);
        assert_eq!(both("gzip, deflate, br, zstd"), Brotli);
        assert_eq!(choose(Some("gzip, br"), false, true), Gzip);
        assert_eq!(choose(Some("br"), false, true), Identity);
        assert_eq!(both("gzip"), Gzip);
        assert_eq!(both("deflate"), Identity);
        assert_eq!(both("*"), Brotli);
        assert_eq!(choose(Some("*"), false, true), Gzip);
    }

    #[test]
    fn honours_q_values() {
        assert_eq!(both("br;q=0.5, gzip"), Gzip);
        assert_eq!(both("br;q=0.5, gzip;q=0.8"), Gzip);
        assert_eq!(both("br;q=0.8, gzip;q=0.5"), Brotli);
        assert_eq!(both("gzip;q=0, br;q=0"), Identity);
        assert_eq!(both("gzip;q=0"), Identity);
        assert_eq!(choose(Some("gzip;q=0, *"), false, true), Identity);
        assert_eq!(both("gzip;q=0, *"), Brotli);
        assert_eq!(
            both("identity;q=1, br;q=0.5"),
            Identity,
            "client prefers identity"
        );
        assert_eq!(both("identity;q=0.1, br;q=0.5"), Brotli);
        assert_eq!(both("br;q=0.001"), Brotli, "tie with unlisted identity");
        assert_eq!(
            both("*;q=0.5, gzip;q=0.1"),
            Brotli,
            "br and identity from *"
        );
        assert_eq!(choose(Some("*;q=0.5, gzip;q=0.1"), false, true), Identity);
        assert_eq!(both("br ; q=0.9 , gzip ;Q=1"), Gzip, "OWS and case");
        assert_eq!(both("BR, GZIP"), Brotli);
        assert_eq!(choose(Some("x-gzip"), false, true), Gzip);
    }

    #[test]
    fn identity_excluded() {
        assert_eq!(both("identity;q=0"), Identity, "nothing else acceptable");
        assert_eq!(both("identity;q=0, gzip"), Gzip);
        assert_eq!(
            both("*;q=0"),
            Identity,
            "nothing acceptable falls back to identity"
        );
        assert_eq!(both("*;q=0, gzip;q=0.1"), Gzip);
        assert_eq!(
            choose(Some("identity;q=1, *;q=0"), true, true),
            Identity,
            "Chrome's media range requests"
        );
    }

    #[test]
    fn empty_header_means_no_coding() {
        assert_eq!(both(""), Identity);
        assert_eq!(both(" , ,"), Identity);
    }

    #[test]
    fn malformed_weights_drop_the_element_only() {
        assert_eq!(both("br;q=2, gzip"), Gzip);
        assert_eq!(both("br;q=x, gzip;q=0.1"), Gzip);
        assert_eq!(both("br;q=, gzip"), Gzip);
    }

    #[test]
    fn several_field_lines_combine_and_first_entry_counts() {
        let lines: [&[u8]; 2] = [b"gzip;q=0.2", b"br;q=0.1"];
        assert_eq!(choose_encoding(lines, true, true), Gzip);
        let lines: [&[u8]; 2] = [b"br;q=0", b"br"];
        assert_eq!(choose_encoding(lines, true, false), Identity);
    }

    #[test]
    fn encoding_names() {
        assert_eq!(Identity.content_coding(), None);
        assert_eq!(Brotli.content_coding(), Some(&b"br"[..]));
        assert_eq!(Gzip.content_coding(), Some(&b"gzip"[..]));
        assert_eq!(Identity.file_suffix(), b"");
        assert_eq!(Brotli.file_suffix(), b".br");
        assert_eq!(Gzip.file_suffix(), b".gz");
    }
}
