//! Protocol errors. Every error knows its HTTP answer (status and reason) so that exactly one
//! place in the I/O layer writes error responses. Every protocol error closes the connection:
//! after a framing error the server can no longer know where the next request starts.

/// A request the server refuses. `status()` is the answer; the connection is then closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtoError {
    /// 400: malformed syntax; the static string says what, for the log (never sent to clients).
    BadRequest(&'static str),
    /// 414: the request line is longer than `Limits::max_request_line`.
    UriTooLong,
    /// 431: the header section is larger than `Limits::max_header_bytes` or has more than
    /// `Limits::max_headers` fields.
    HeadersTooLarge,
    /// 413: the declared or received body is larger than `Limits::max_body`.
    PayloadTooLarge,
    /// 501: a transfer coding we do not implement (e.g. `gzip, chunked`).
    NotImplemented,
    /// 505: a well-formed but unsupported version such as HTTP/2.0 or HTTP/0.9-style lines.
    VersionNotSupported,
}

impl ProtoError {
    /// The status code to answer with.
    pub fn status(&self) -> u16 {
        match self {
            ProtoError::BadRequest(_) => 400,
            ProtoError::UriTooLong => 414,
            ProtoError::HeadersTooLarge => 431,
            ProtoError::PayloadTooLarge => 413,
            ProtoError::NotImplemented => 501,
            ProtoError::VersionNotSupported => 505,
        }
    }
    /// The status line's reason phrase, e.g. "Bad Request" (RFC 9110 §15 wording, so 413 is
    /// "Content Too Large", its RFC 9110 name).
    pub fn reason(&self) -> &'static str {
        match self {
            ProtoError::BadRequest(_) => "Bad Request",
            ProtoError::UriTooLong => "URI Too Long",
            ProtoError::HeadersTooLarge => "Request Header Fields Too Large",
            ProtoError::PayloadTooLarge => "Content Too Large",
            ProtoError::NotImplemented => "Not Implemented",
            ProtoError::VersionNotSupported => "HTTP Version Not Supported",
        }
    }
    /// A short description for the error log.
    pub fn detail(&self) -> &'static str {
        match self {
            ProtoError::BadRequest(s) => s,
            ProtoError::UriTooLong => "request line longer than the request line limit",
            ProtoError::HeadersTooLarge => "header section larger than the header limits",
            ProtoError::PayloadTooLarge => "request body larger than the body limit",
            ProtoError::NotImplemented => "transfer coding not implemented",
            ProtoError::VersionNotSupported => "HTTP version not supported",
        }
    }
}

impl std::fmt::Display for ProtoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.status(), self.reason(), self.detail())
    }
}
impl std::error::Error for ProtoError {}

#[cfg(test)]
mod tests {
    use super::ProtoError::*;
    use super::*;

    #[test]
    fn every_variant_knows_its_answer() {
        let cases: [(ProtoError, u16, &str); 6] = [
            (BadRequest("bad thing"), 400, "Bad Request"),
            (UriTooLong, 414, "URI Too Long"),
            (HeadersTooLarge, 431, "Request Header Fields Too Large"),
            (PayloadTooLarge, 413, "Content Too Large"),
            (NotImplemented, 501, "Not Implemented"),
            (VersionNotSupported, 505, "HTTP Version Not Supported"),
        ];
        for (e, status, reason) in cases {
            assert_eq!(e.status(), status);
            assert_eq!(e.reason(), reason);
            assert!(!e.detail().is_empty());
        }
    }

    #[test]
    fn bad_request_detail_is_its_string_and_display_has_all_three() {
        let e = BadRequest("bare LF in head");
        assert_eq!(e.detail(), "bare LF in head");
        assert_eq!(e.to_string(), "400 Bad Request: bare LF in head");
    }
}
