//! Conditional requests (RFC 9110 §13): the four preconditions in the order of §13.2.2, and
//! If-Range (§13.1.5). Evaluated against the *selected* representation's validators (after
//! content negotiation), for GET and HEAD only: other methods were answered 405 before.

use crate::date::parse_http_date;

use super::fields::{single, Fields, IF_MATCH, IF_NONE_MATCH};
use super::validators::etag_list_matches;

/// Outcome of the preconditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Precondition {
    /// Serve the representation (200, or 206/416 if Range applies).
    Proceed,
    /// 304 Not Modified: the client's copy is current.
    NotModified,
    /// 412 Precondition Failed: the client's If-Match / If-Unmodified-Since does not hold.
    Failed,
}

/// RFC 9110 §13.2.2 for a GET or HEAD:
/// 1. If-Match present: false (strong comparison, `*` matches) → 412.
/// 2. Else If-Unmodified-Since (a valid date, and a Last-Modified exists): modified after it →
///    412.
/// 3. If-None-Match present: true (weak comparison) → 304.
/// 4. Else If-Modified-Since (a valid date): not modified after it → 304.
///
/// An invalid date makes its field ignored (§13.1.3, §13.1.4).
pub(super) fn evaluate_preconditions(
    f: &Fields<'_>,
    etag: &[u8],
    last_modified: Option<u64>,
) -> Precondition {
    if f.if_match.present() {
        if !etag_list_matches(f.lines(f.if_match, IF_MATCH), etag, true) {
            return Precondition::Failed;
        }
    } else if let (Some(since), Some(lm)) = (date(single(f.if_unmodified_since)), last_modified) {
        if lm > since {
            return Precondition::Failed;
        }
    }
    if f.if_none_match.present() {
        if etag_list_matches(f.lines(f.if_none_match, IF_NONE_MATCH), etag, false) {
            return Precondition::NotModified;
        }
    } else if let (Some(since), Some(lm)) = (date(single(f.if_modified_since)), last_modified) {
        if lm <= since {
            return Precondition::NotModified;
        }
    }
    Precondition::Proceed
}

fn date(value: Option<&[u8]>) -> Option<u64> {
    value.and_then(parse_http_date)
}

/// Does If-Range (RFC 9110 §13.1.5) let the Range apply? An entity-tag must match the current
/// ETag by *strong* comparison (a `W/` tag never does). A date must equal Last-Modified
/// exactly, and Last-Modified must be a strong validator: at least one second before `now`
/// (§8.8.2.2; a file modified within the current second could change again unseen). Anything
/// else (no Last-Modified, unknown `now`, an invalid value) → false: send the whole file.
pub(super) fn if_range_holds(
    value: &[u8],
    etag: &[u8],
    last_modified: Option<u64>,
    now: Option<u64>,
) -> bool {
    match value.first() {
        Some(b'"') => value == etag,
        Some(b'W') if value.starts_with(b"W/") => false,
        _ => match (parse_http_date(value), last_modified, now) {
            (Some(date), Some(lm), Some(now)) => date == lm && lm < now,
            _ => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::super::fields::request;
    use super::Precondition::*;
    use super::*;

    const ETAG: &[u8] = b"\"abc\"";
    /// Last-Modified: Sun, 06 Nov 1994 08:49:37 GMT (the RFC's example date).
    const LM: u64 = 784_111_777;
    const BEFORE: &str = "Sun, 06 Nov 1994 08:49:36 GMT";
    const AT: &str = "Sun, 06 Nov 1994 08:49:37 GMT";
    const AFTER: &str = "Sun, 06 Nov 1994 08:49:38 GMT";

    fn eval(fields: &[(&str, &str)]) -> Precondition {
        eval_lm(fields, Some(LM))
    }
    fn eval_lm(fields: &[(&str, &str)], lm: Option<u64>) -> Precondition {
        let mut raw = String::from("GET /x HTTP/1.1\r\nHost: h\r\n");
        for (n, v) in fields {
            raw.push_str(&format!("{n}: {v}\r\n"));
        }
        raw.push_str("\r\n");
        let head = request(&raw);
        evaluate_preconditions(&Fields::new(&head), ETAG, lm)
    }

    #[test]
    fn no_conditions_proceed() {
        assert_eq!(eval(&[]), Proceed);
    }

    #[test]
    fn if_match() {
        assert_eq!(eval(&[("If-Match", "\"abc\"")]), Proceed);
        assert_eq!(eval(&[("If-Match", "*")]), Proceed);
        assert_eq!(eval(&[("If-Match", "\"xyz\", \"abc\"")]), Proceed);
        assert_eq!(eval(&[("If-Match", "\"xyz\"")]), Failed);
        assert_eq!(
            eval(&[("If-Match", "W/\"abc\"")]),
            Failed,
            "strong comparison"
        );
        assert_eq!(eval(&[("If-Match", "garbage")]), Failed);
        assert_eq!(
            eval(&[("If-Match", "\"xyz\""), ("If-Match", "\"abc\"")]),
            Proceed,
            "lines combine"
        );
    }

    #[test]
    fn if_unmodified_since() {
        assert_eq!(eval(&[("If-Unmodified-Since", AT)]), Proceed);
        assert_eq!(eval(&[("If-Unmodified-Since", AFTER)]), Proceed);
        assert_eq!(eval(&[("If-Unmodified-Since", BEFORE)]), Failed);
        assert_eq!(
            eval(&[("If-Unmodified-Since", "Sunday, 06-Nov-94 08:49:36 GMT")]),
            Failed,
            "obsolete date forms count"
        );
        assert_eq!(eval(&[("If-Unmodified-Since", "yesterday")]), Proceed);
        assert_eq!(eval_lm(&[("If-Unmodified-Since", BEFORE)], None), Proceed);
        // Ignored when If-Match is present (§13.2.2 step 2).
        assert_eq!(
            eval(&[("If-Match", "\"abc\""), ("If-Unmodified-Since", BEFORE)]),
            Proceed
        );
        assert_eq!(
            eval(&[("If-Match", "\"no\""), ("If-Unmodified-Since", AFTER)]),
            Failed
        );
    }

    #[test]
    fn if_none_match() {
        assert_eq!(eval(&[("If-None-Match", "\"abc\"")]), NotModified);
        assert_eq!(eval(&[("If-None-Match", "W/\"abc\"")]), NotModified, "weak");
        assert_eq!(eval(&[("If-None-Match", "*")]), NotModified);
        assert_eq!(eval(&[("If-None-Match", "\"x\", \"abc\"")]), NotModified);
        assert_eq!(eval(&[("If-None-Match", "\"x\"")]), Proceed);
        assert_eq!(eval(&[("If-None-Match", "\"abc\"-gz")]), Proceed, "junk");
    }

    #[test]
    fn if_modified_since() {
        assert_eq!(eval(&[("If-Modified-Since", AT)]), NotModified);
        assert_eq!(eval(&[("If-Modified-Since", AFTER)]), NotModified);
        assert_eq!(eval(&[("If-Modified-Since", BEFORE)]), Proceed);
        assert_eq!(
            eval(&[("If-Modified-Since", "Sun Nov  6 08:49:37 1994")]),
            NotModified
        );
        assert_eq!(eval(&[("If-Modified-Since", "not a date")]), Proceed);
        assert_eq!(
            eval(&[("If-Modified-Since", AT), ("If-Modified-Since", AT)]),
            Proceed,
            "more than one member: ignored"
        );
        assert_eq!(eval_lm(&[("If-Modified-Since", AT)], None), Proceed);
        // Ignored when If-None-Match is present (§13.2.2 step 4).
        assert_eq!(
            eval(&[("If-None-Match", "\"x\""), ("If-Modified-Since", AFTER)]),
            Proceed
        );
    }

    #[test]
    fn precedence_412_before_304() {
        assert_eq!(
            eval(&[("If-Match", "\"no\""), ("If-None-Match", "\"abc\"")]),
            Failed
        );
        assert_eq!(
            eval(&[
                ("If-Unmodified-Since", BEFORE),
                ("If-Modified-Since", AFTER)
            ]),
            Failed
        );
        assert_eq!(
            eval(&[("If-Match", "*"), ("If-None-Match", "*")]),
            NotModified
        );
    }

    #[test]
    fn if_range_entity_tag_form() {
        let holds = |v: &str| if_range_holds(v.as_bytes(), ETAG, Some(LM), Some(LM + 10));
        assert!(holds("\"abc\""));
        assert!(!holds("\"abd\""));
        assert!(!holds("W/\"abc\""), "weak tags never match");
        assert!(!holds("\"abc\" "));
        assert!(!holds(""));
        assert!(!holds("garbage"));
    }

    #[test]
    fn if_range_date_form() {
        let holds = |v: &str, lm: Option<u64>, now: Option<u64>| {
            if_range_holds(v.as_bytes(), ETAG, lm, now)
        };
        assert!(holds(AT, Some(LM), Some(LM + 1)), "exact match, strong");
        assert!(!holds(AFTER, Some(LM), Some(LM + 10)), "not exact: later");
        assert!(
            !holds(BEFORE, Some(LM), Some(LM + 10)),
            "not exact: earlier"
        );
        assert!(!holds(AT, Some(LM), Some(LM)), "modified this second: weak");
        assert!(!holds(AT, None, Some(LM + 10)));
        assert!(!holds(AT, Some(LM), None));
    }
}
