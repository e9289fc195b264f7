//! Interim answers the app asks for: `103 Early Hints` (RFC 8297), sent before the final answer
//! so that a client may start fetching what the page will need while the app still works. What
//! this module decides: which clients may be sent one (never an HTTP/1.0 client), which of the
//! app's headers may go in one (never a framing header), and its bytes on the wire. The headers
//! are validated beforehand as `start_response`'s are (`response::classify_app_header`).

use crate::Version;

/// The status line of an early-hints answer (always `HTTP/1.1`, as `encode_response_head`
/// writes every status line).
pub const EARLY_HINTS_LINE: &[u8] = b"HTTP/1.1 103 Early Hints\r\n";

/// Whether a client that sent a request of `version` may be sent an interim (1xx) answer on
/// its HTTP/1.x connection: HTTP/1.1 only. RFC 9110 §15.2: a server must not send a 1xx
/// answer to an HTTP/1.0 client, which would take it for the final one. An HTTP/2 stream's
/// interim answers are HEADERS frames, not bytes from here.
pub fn sends_interim(version: Version) -> bool {
    version == Version::Http11
}

/// Whether the app's header `name` may go in an interim answer: not `Content-Length` (RFC 9110
/// §8.6: a server must not send it in a 1xx answer, which has no content) nor
/// `Transfer-Encoding` (§6.1: it frames content), which `classify_app_header` would have
/// dropped as hop-by-hop anyway.
pub fn interim_header_allowed(name: &[u8]) -> bool {
    !name.eq_ignore_ascii_case(b"content-length")
        && !name.eq_ignore_ascii_case(b"transfer-encoding")
}

/// Append a `103 Early Hints` answer with `headers` (already validated: names are tokens,
/// values hold no CR, LF or NUL) to `out`, through the blank line that ends it. Headers that
/// [`interim_header_allowed`] refuses are left out.
pub fn encode_early_hints<'a>(
    out: &mut Vec<u8>,
    headers: impl Iterator<Item = (&'a [u8], &'a [u8])>,
) {
    out.extend_from_slice(EARLY_HINTS_LINE);
    for (name, value) in headers {
        if !interim_header_allowed(name) {
            continue;
        }
        out.extend_from_slice(name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.trim_ascii());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_http11_client_is_sent_an_interim_answer() {
        assert!(sends_interim(Version::Http11));
        assert!(!sends_interim(Version::Http10));
        assert!(!sends_interim(Version::Http2));
    }

    #[test]
    fn early_hints_carry_the_apps_headers_but_no_framing() {
        let mut out = Vec::new();
        let headers: [(&[u8], &[u8]); 3] = [
            (b"Link", b" </style.css>; rel=preload; as=style "),
            (b"Content-Length", b"5"),
            (b"Link", b"</app.js>; rel=preload; as=script"),
        ];
        encode_early_hints(&mut out, headers.into_iter());
        assert_eq!(
            out,
            b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\
              Link: </app.js>; rel=preload; as=script\r\n\r\n"
        );
    }

    #[test]
    fn early_hints_without_headers_are_a_bare_status_line() {
        let mut out = Vec::new();
        encode_early_hints(&mut out, std::iter::empty());
        assert_eq!(out, b"HTTP/1.1 103 Early Hints\r\n\r\n");
    }
}
