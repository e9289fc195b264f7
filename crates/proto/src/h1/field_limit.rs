//! `Limits::max_field_bytes` for HTTP/1.1 heads (`--limit-field-bytes`, gunicorn's
//! `--limit-request-field_size`): each header field line, from its name to its CRLF (included,
//! as gunicorn counts it), is at most that many bytes; a longer one is 431. It protects the app,
//! and what it hands headers to, from one huge field inside an otherwise small head.

use crate::head::FieldRanges;
use crate::ProtoError;

/// Check every field line of `head` (`fields`: its name and value ranges, as parsed); `max`
/// `usize::MAX`: no limit of its own.
pub(super) fn check(head: &[u8], fields: &FieldRanges, max: usize) -> Result<(), ProtoError> {
    if max == usize::MAX {
        return Ok(());
    }
    for (name, value) in fields {
        // The value's range stops before trailing whitespace; the line goes on to its CR.
        let end = value.end as usize;
        let cr = end + memchr::memchr(b'\r', &head[end..]).unwrap_or(0);
        if cr + 2 - name.start as usize > max {
            return Err(ProtoError::HeadersTooLarge);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::h1::HeadParser;
    use crate::{Limits, ProtoError};

    fn parse(fields: &str, max: usize) -> Result<usize, ProtoError> {
        let head = format!("GET / HTTP/1.1\r\nHost: h\r\n{fields}\r\n");
        let limits = Limits {
            max_field_bytes: max,
            ..Limits::default()
        };
        let parsed = HeadParser::new().parse(head.as_bytes(), &limits)?;
        Ok(parsed.expect("a whole head").0.headers().count())
    }

    #[test]
    fn a_field_line_counts_from_its_name_to_its_crlf() {
        // "X-A: 12345\r\n" is 12 bytes; trailing whitespace counts when there is some.
        assert_eq!(parse("X-A: 12345\r\n", 12), Ok(2));
        assert_eq!(
            parse("X-A: 12345\r\n", 11),
            Err(ProtoError::HeadersTooLarge)
        );
        assert_eq!(
            parse("X-A: 12345  \r\n", 13),
            Err(ProtoError::HeadersTooLarge)
        );
        // Host: h (9 bytes with its CRLF) is a field line too.
        assert_eq!(parse("", 8), Err(ProtoError::HeadersTooLarge));
        assert_eq!(parse("", 9), Ok(1));
        assert_eq!(parse("X-A: 12345\r\n", usize::MAX), Ok(2));
    }
}
