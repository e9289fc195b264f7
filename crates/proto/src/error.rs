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
        todo!()
    }
    /// The status line's reason phrase, e.g. "Bad Request".
    pub fn reason(&self) -> &'static str {
        todo!()
    }
    /// A short description for the error log.
    pub fn detail(&self) -> &'static str {
        todo!()
    }
}

impl std::fmt::Display for ProtoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.status(), self.reason(), self.detail())
    }
}
impl std::error::Error for ProtoError {}
