//! Response encoding: status line, headers, framing (Content-Length, chunked or close-delimited),
//! Connection, Date and Server, all into one buffer so that a small response leaves in one write.

use crate::ProtoError;
use crate::Version;

/// How the response body is delimited on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseFraming {
    /// The app gave Content-Length (or the server computed it): written as is / added.
    Length(u64),
    /// Unknown length on HTTP/1.1: `Transfer-Encoding: chunked`.
    Chunked,
    /// Unknown length on HTTP/1.0: no framing header; the connection closes after the body.
    CloseDelimited,
    /// No body by definition (HEAD request, 1xx, 204, 304): no framing header is added, but an
    /// app-given Content-Length is kept.
    NoBody,
}

/// What the app (through the bridge) says about the response, already validated.
pub struct ResponseHead<'a> {
    pub version: Version,
    /// e.g. b"200 OK" (already validated with `validate_status`).
    pub status: &'a [u8],
    /// App headers except the hop-by-hop ones the bridge removed (Connection, Transfer-Encoding,
    /// Keep-Alive...). Content-Length, if the app set it, is included here and not added again.
    pub headers: &'a [(&'a [u8], &'a [u8])],
    pub framing: ResponseFraming,
    /// Whether the connection stays open after this response.
    pub keep_alive: bool,
    /// 29-byte IMF-fixdate (see `crate::date`), added as `Date` unless the app set one.
    pub date: &'a [u8],
    /// Value of the `Server` header, added unless the app set one; empty = do not add.
    pub server: &'a [u8],
}

/// Append the encoded head (through the blank line) to `out`.
/// Adds `Content-Length` for `Length(n)` only when the app did not set it, `Transfer-Encoding:
/// chunked` for `Chunked`, and `Connection: close` when !keep_alive, or `Connection: keep-alive`
/// when keep_alive on HTTP/1.0.
pub fn encode_response_head(out: &mut Vec<u8>, head: &ResponseHead<'_>) {
    let _ = (out, head);
    todo!()
}

/// Validate a WSGI status string: 3 digits, a space, a reason with no CR, LF, NUL or other
/// control byte (tab allowed).
pub fn validate_status(status: &[u8]) -> Result<(), ProtoError> {
    let _ = status;
    todo!()
}
/// Validate a header name: an RFC 9110 token (non-empty, tchar only).
pub fn validate_header_name(name: &[u8]) -> Result<(), ProtoError> {
    let _ = name;
    todo!()
}
/// Validate a header value: no CR, LF, NUL or other control byte except tab.
pub fn validate_header_value(value: &[u8]) -> Result<(), ProtoError> {
    let _ = value;
    todo!()
}

/// Chunk framing for `len` bytes of data: the hex size line, written into `buf`; returns the
/// used prefix. The data follows, then `CHUNK_END`. Lets the I/O layer writev framing around
/// the app's buffers without copying them.
pub fn chunk_header(len: usize, buf: &mut [u8; 18]) -> &[u8] {
    let _ = (len, buf);
    todo!()
}
/// Written after each chunk's data.
pub const CHUNK_END: &[u8] = b"\r\n";
/// The last chunk with no trailers.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// A complete minimal error response (e.g. 400, 408, 413, 414, 431, 500, 503) with a short
/// plain-text body of the reason phrase, `Connection: close` unless keep_alive, Date and Server.
pub fn encode_error_response(
    out: &mut Vec<u8>,
    status: u16,
    reason: &str,
    keep_alive: bool,
    date: &[u8],
    server: &[u8],
) {
    let _ = (out, status, reason, keep_alive, date, server);
    todo!()
}
