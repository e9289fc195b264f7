//! Named limits on what a client may send. Each protects the server against one kind of abuse
//! and is changed by one command-line option (named in its doc).

/// Default for `--limit-request-line`: longest request line (method, target, version), bytes.
pub const DEFAULT_MAX_REQUEST_LINE: usize = 8 * 1024;
/// Default for `--limit-header-bytes`: largest header section including the request line.
pub const DEFAULT_MAX_HEADER_BYTES: usize = 64 * 1024;
/// Default for `--limit-headers`: most header fields in one request (also trailer fields).
pub const DEFAULT_MAX_HEADERS: usize = 100;
/// Default for `--limit-body`: largest request body, bytes (1 GiB).
pub const DEFAULT_MAX_BODY: u64 = 1 << 30;
/// Default for `--limit-field-bytes`: no limit on one header field line of its own (the whole
/// head is bounded by `max_header_bytes`); gunicorn's `--limit-request-field_size` sets one.
pub const NO_FIELD_LIMIT: usize = usize::MAX;

/// The limits in force for one listener. Built once from the validated config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_request_line: usize,
    pub max_header_bytes: usize,
    pub max_headers: usize,
    pub max_body: u64,
    /// Longest header field line, name through value and its CRLF (an HTTP/2 field: name and
    /// value); protects the app and what it hands headers to from one huge field.
    pub max_field_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_request_line: DEFAULT_MAX_REQUEST_LINE,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
            max_headers: DEFAULT_MAX_HEADERS,
            max_body: DEFAULT_MAX_BODY,
            max_field_bytes: NO_FIELD_LIMIT,
        }
    }
}
