//! A stream's response head as both protocols' crates take it (`http::Response`), from the
//! app's status and fields ([`response_of`]): HTTP/2's `StreamReply` and HTTP/3's `H3Reply`
//! send the same value, framed by their crate (HPACK or QPACK).

use std::io;

/// A response head (or an interim one) for `h2` or `h3` from the app's status and fields. Built in
/// place, not with `http::response::Builder`, which moves the whole response through a `Result`
/// at every field (a third of the head's instructions).
pub fn response_of<'a>(
    status: u16,
    fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
) -> io::Result<http::Response<()>> {
    let mut response = http::Response::new(());
    *response.status_mut() = http::StatusCode::from_u16(status).map_err(invalid)?;
    let headers = response.headers_mut();
    for (name, value) in fields {
        // `from_bytes` lowercases the name itself.
        let name = http::HeaderName::from_bytes(name).map_err(invalid)?;
        // HTTP/1.1 ignores a value's surrounding whitespace, HTTP/2 forbids it (RFC 9113
        // §8.2.1: a client such as the `h2` library refuses the whole response). Django's
        // Set-Cookie values start with a space (`SimpleCookie.output(header="")`).
        let value = http::HeaderValue::from_bytes(value.trim_ascii()).map_err(invalid)?;
        headers.try_append(name, value).map_err(invalid)?;
    }
    Ok(response)
}

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, e.to_string())
}
