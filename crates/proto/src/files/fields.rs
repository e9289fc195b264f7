//! The request header fields static serving reads, found in one pass over the head instead of
//! one scan per field: a static request looks at seven fields and usually has none of them.

use crate::RequestHead;

/// How often a field occurred.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Field<'a> {
    #[default]
    Absent,
    /// Exactly one field line: its (trimmed) value.
    One(&'a [u8]),
    /// Several field lines (rare): list fields read them all, singletons are ignored.
    Repeated,
}

impl Field<'_> {
    pub(super) fn present(&self) -> bool {
        !matches!(self, Field::Absent)
    }
}

/// The fields, by name. Names are matched case-insensitively (RFC 9110 §5.1).
#[derive(Debug)]
pub(super) struct Fields<'a> {
    head: &'a RequestHead,
    pub(super) accept_encoding: Field<'a>,
    pub(super) if_match: Field<'a>,
    pub(super) if_none_match: Field<'a>,
    pub(super) if_modified_since: Field<'a>,
    pub(super) if_unmodified_since: Field<'a>,
    pub(super) range: Field<'a>,
    pub(super) if_range: Field<'a>,
}

pub(super) const ACCEPT_ENCODING: &[u8] = b"accept-encoding";
pub(super) const IF_MATCH: &[u8] = b"if-match";
pub(super) const IF_NONE_MATCH: &[u8] = b"if-none-match";

impl<'a> Fields<'a> {
    pub(super) fn new(head: &'a RequestHead) -> Self {
        let mut f = Fields {
            head,
            accept_encoding: Field::Absent,
            if_match: Field::Absent,
            if_none_match: Field::Absent,
            if_modified_since: Field::Absent,
            if_unmodified_since: Field::Absent,
            range: Field::Absent,
            if_range: Field::Absent,
        };
        for (name, value) in head.headers() {
            // Length first: most names (Host, User-Agent, Cookie...) leave after one compare.
            let slot = match name.len() {
                5 if name.eq_ignore_ascii_case(b"range") => &mut f.range,
                8 if name.eq_ignore_ascii_case(IF_MATCH) => &mut f.if_match,
                8 if name.eq_ignore_ascii_case(b"if-range") => &mut f.if_range,
                13 if name.eq_ignore_ascii_case(IF_NONE_MATCH) => &mut f.if_none_match,
                15 if name.eq_ignore_ascii_case(ACCEPT_ENCODING) => &mut f.accept_encoding,
                17 if name.eq_ignore_ascii_case(b"if-modified-since") => &mut f.if_modified_since,
                19 if name.eq_ignore_ascii_case(b"if-unmodified-since") => {
                    &mut f.if_unmodified_since
                }
                _ => continue,
            };
            *slot = match slot {
                Field::Absent => Field::One(value),
                _ => Field::Repeated,
            };
        }
        f
    }

    /// All lines of a list field (`name` must be the one `field` was found under).
    pub(super) fn lines(&self, field: Field<'a>, name: &'a [u8]) -> impl Iterator<Item = &'a [u8]> {
        let (one, many) = match field {
            Field::Absent => (None, false),
            Field::One(v) => (Some(v), false),
            Field::Repeated => (None, true),
        };
        let rest = self
            .head
            .headers()
            .filter(move |(n, _)| many && n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v);
        one.into_iter().chain(rest)
    }
}

/// The value of a field that must occur once; a repeated one is treated as absent (RFC 9110
/// §13.1.3: a date field "with more than one member" is ignored).
pub(super) fn single<'a>(field: Field<'a>) -> Option<&'a [u8]> {
    match field {
        Field::One(v) => Some(v),
        _ => None,
    }
}

#[cfg(test)]
pub(super) fn request(raw: &str) -> RequestHead {
    let limits = crate::Limits::default();
    let (head, _) = crate::h1::HeadParser::new()
        .parse(raw.as_bytes(), &limits)
        .expect("valid test request")
        .expect("complete test request");
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pass_classifies_each_field() {
        let head = request(
            "GET / HTTP/1.1\r\nHost: h\r\nRANGE: bytes=0-1\r\nIf-Match: \"a\"\r\n\
             if-none-match: \"b\"\r\nAccept-Encoding: gzip\r\nAccept-Encoding: br\r\n\
             If-Modified-Since: x\r\nIf-Modified-Since: y\r\nIf-Range: \"c\"\r\n\r\n",
        );
        let f = Fields::new(&head);
        assert_eq!(f.range, Field::One(b"bytes=0-1"));
        assert_eq!(f.if_match, Field::One(b"\"a\""));
        assert_eq!(f.if_none_match, Field::One(b"\"b\""));
        assert_eq!(f.if_range, Field::One(b"\"c\""));
        assert_eq!(f.accept_encoding, Field::Repeated);
        assert_eq!(f.if_modified_since, Field::Repeated);
        assert_eq!(f.if_unmodified_since, Field::Absent);
        assert!(!f.if_unmodified_since.present());
        assert_eq!(single(f.if_modified_since), None);
        assert_eq!(single(f.range), Some(&b"bytes=0-1"[..]));
        let ae: Vec<&[u8]> = f.lines(f.accept_encoding, ACCEPT_ENCODING).collect();
        assert_eq!(ae, [&b"gzip"[..], b"br"]);
        let im: Vec<&[u8]> = f.lines(f.if_match, IF_MATCH).collect();
        assert_eq!(im, [&b"\"a\""[..]]);
        assert_eq!(f.lines(f.if_unmodified_since, IF_MATCH).count(), 0);
    }
}
