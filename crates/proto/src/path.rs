//! Request-target helpers: percent-decoding of the path for PATH_INFO.

use std::borrow::Cow;

/// Percent-decode a path. Invalid escapes (`%zz`, a trailing `%`) are kept literally, as most
/// servers do. Borrowed when there is nothing to decode. `%2F` decodes to `/` (WSGI cannot tell
/// them apart; the raw target is still available to apps as REQUEST_URI / RAW_URI).
pub fn percent_decode(path: &[u8]) -> Cow<'_, [u8]> {
    let _ = path;
    todo!()
}
