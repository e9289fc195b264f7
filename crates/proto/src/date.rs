//! HTTP dates (IMF-fixdate, RFC 9110 §5.6.7), formatted without allocation. The I/O layer caches
//! the formatted value per second; this module is pure.

/// Length of an IMF-fixdate, e.g. "Sun, 06 Nov 1994 08:49:37 GMT".
pub const HTTP_DATE_LEN: usize = 29;

/// Format seconds since the Unix epoch as an IMF-fixdate.
pub fn format_http_date(unix_secs: u64) -> [u8; HTTP_DATE_LEN] {
    let _ = unix_secs;
    todo!()
}

/// Parse an IMF-fixdate (and the two obsolete forms RFC 9110 requires recipients to accept)
/// into seconds since the Unix epoch; `None` if invalid. (For conditional requests.)
pub fn parse_http_date(s: &[u8]) -> Option<u64> {
    let _ = s;
    todo!()
}
