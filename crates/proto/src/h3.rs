//! An HTTP/3 request stream's head as the wire-neutral [`RequestHead`]. HTTP/3's request
//! fields follow HTTP/2's rules (RFC 9114 §4.3: the same pseudo-header fields, lower-case
//! names, `:authority` for Host, cookies that may come split, no CONNECT for a WSGI app), so
//! the head is made by [`crate::h2::request_head`] and marked [`Version::Http3`], which the
//! environ's `SERVER_PROTOCOL` and the access log read. The `h3` crate has decoded QPACK and
//! checked the fields' syntax and the pseudo-headers' order before.
//!
//! What HTTP/2's `h2` crate checks itself and `h3` does not is decided here, so that a stream
//! the rules call malformed (RFC 9114 §4.1.2: a stream error H3_MESSAGE_ERROR, never an
//! answer) never reaches the app: [`malformed_field`] (connection-specific fields, `te` other
//! than `trailers`, a `content-length` on a stream that ended with its head) and
//! [`BodyCount`] (the DATA received against the `content-length`).

use crate::h2::StreamRequest;
use crate::{Limits, ProtoError, RequestHead, Version};

/// The head of one request stream; refuses what HTTP/2's streams and HTTP/1.1's parser refuse,
/// with the same errors.
pub fn request_head<'a, F>(
    req: StreamRequest<'a, F>,
    limits: &Limits,
) -> Result<RequestHead, ProtoError>
where
    F: Iterator<Item = (&'a [u8], &'a [u8])>,
{
    let mut head = crate::h2::request_head(req, limits)?;
    head.version = Version::Http3;
    Ok(head)
}

/// Why a request stream's fields make it malformed (RFC 9114 §4.2, §4.1.2), or `None`:
/// a connection-specific field (`connection`, `keep-alive`, `proxy-connection`,
/// `transfer-encoding`, `upgrade`), a `te` other than `trailers`, or a non-zero
/// `content-length` on a stream whose head ended it (`end_of_stream`). Names are lower-case.
pub fn malformed_field<'a>(
    fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    end_of_stream: bool,
) -> Option<&'static str> {
    for (name, value) in fields {
        match name {
            b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding"
            | b"upgrade" => return Some("h3: connection-specific field"),
            b"te" if !value.trim_ascii().eq_ignore_ascii_case(b"trailers") => {
                return Some("h3: te other than trailers")
            }
            b"content-length" if end_of_stream && value.iter().any(|&b| b != b'0') => {
                return Some("h3: content-length on a stream without a body")
            }
            _ => {}
        }
    }
    None
}

/// A request body's DATA counted against its `content-length` (RFC 9114 §4.1.2: more than
/// declared, or the stream's end short of it, makes the request malformed).
#[derive(Debug, Clone, Copy)]
pub struct BodyCount {
    declared: Option<u64>,
    received: u64,
}

impl BodyCount {
    /// `declared`: the `content-length`, if the request had one.
    pub fn new(declared: Option<u64>) -> BodyCount {
        BodyCount {
            declared,
            received: 0,
        }
    }

    /// `n` more bytes of DATA: an error once they pass the declared length.
    pub fn data(&mut self, n: usize) -> Result<(), ProtoError> {
        self.received = self.received.saturating_add(n as u64);
        match self.declared {
            Some(d) if self.received > d => {
                Err(ProtoError::BadRequest("h3: DATA past the content-length"))
            }
            _ => Ok(()),
        }
    }

    /// The stream ended: an error if short of the declared length.
    pub fn end(&self) -> Result<(), ProtoError> {
        match self.declared {
            Some(d) if self.received < d => Err(ProtoError::BadRequest(
                "h3: stream ended short of the content-length",
            )),
            _ => Ok(()),
        }
    }

    /// Bytes received so far.
    pub fn received(&self) -> u64 {
        self.received
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BodyFraming;

    #[test]
    fn connection_specific_fields_and_te_are_malformed() {
        let one = |n: &'static [u8], v: &'static [u8]| malformed_field([(n, v)].into_iter(), false);
        for n in [
            &b"connection"[..],
            b"keep-alive",
            b"proxy-connection",
            b"transfer-encoding",
            b"upgrade",
        ] {
            assert!(one(n, b"x").is_some(), "{n:?}");
        }
        assert!(one(b"te", b"gzip").is_some());
        assert!(one(b"te", b"trailers").is_none());
        assert!(one(b"x-connection", b"close").is_none());
        assert!(one(b"content-length", b"5").is_none());
        let ended =
            |v: &'static [u8]| malformed_field([(&b"content-length"[..], v)].into_iter(), true);
        assert!(ended(b"5").is_some());
        assert!(ended(b"0").is_none());
    }

    #[test]
    fn data_is_counted_against_the_content_length() {
        let mut c = BodyCount::new(Some(5));
        assert!(c.data(3).is_ok());
        assert!(c.end().is_err());
        assert!(c.data(2).is_ok() && c.end().is_ok());
        assert!(c.data(1).is_err());
        let mut open = BodyCount::new(None);
        assert!(open.data(1 << 40).is_ok() && open.end().is_ok());
        assert_eq!(open.received(), 1 << 40);
    }

    #[test]
    fn a_request_stream_is_an_http3_head_with_host_from_authority() {
        let head = request_head(
            StreamRequest {
                method: b"POST",
                path: b"/echo?x=1",
                authority: Some(b"example.org:8443"),
                fields: [(&b"content-length"[..], &b"5"[..])].into_iter(),
                end_of_stream: false,
            },
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(head.version, Version::Http3);
        assert_eq!(head.version.as_str(), "HTTP/3");
        assert_eq!(head.body, BodyFraming::Length(5));
        assert!(head
            .headers()
            .any(|(n, v)| n == b"host" && v == b"example.org:8443"));
    }

    #[test]
    fn a_body_over_the_limit_is_refused_with_the_head() {
        let refused = request_head(
            StreamRequest {
                method: b"POST",
                path: b"/",
                authority: Some(b"h"),
                fields: [(&b"content-length"[..], &b"11"[..])].into_iter(),
                end_of_stream: false,
            },
            &Limits {
                max_body: 10,
                ..Limits::default()
            },
        );
        assert_eq!(refused.unwrap_err(), ProtoError::PayloadTooLarge);
    }
}
