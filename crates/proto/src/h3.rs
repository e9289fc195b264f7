//! An HTTP/3 request stream's head as the wire-neutral [`RequestHead`]. HTTP/3's request
//! fields follow HTTP/2's rules (RFC 9114 §4.3: the same pseudo-header fields, lower-case
//! names, `:authority` for Host, cookies that may come split, no CONNECT for a WSGI app), so
//! the head is made by [`crate::h2::request_head`] and marked [`Version::Http3`], which the
//! environ's `SERVER_PROTOCOL` and the access log read. The `h3` crate has decoded QPACK and
//! checked the fields' syntax before.

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BodyFraming;

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
