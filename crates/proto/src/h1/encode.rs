//! Response encoding: status line, headers, framing (Content-Length, chunked or close-delimited),
//! Connection, Date and Server, all into one buffer so that a small response leaves in one write.
//! Also the checks the WSGI bridge runs on what the app returns (habit 9): a CR or LF that
//! reached the wire here would let an app's data split the response (response splitting).

use crate::token::{all_field_value_bytes, is_token, push_dec, u64_to_dec, U64_DEC_LEN};
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
    /// The app's headers already encoded (`Name: value\r\n` each, validated, hop-by-hop ones
    /// removed) and which of Date, Server and Content-Length they hold: written first, as one
    /// copy. Content-Length, if the app set it, is here and not added again.
    pub lines: EncodedLines<'a>,
    /// Further headers as (name, value) pairs, after `lines` (the server's Content-Length,
    /// Server-Timing, Alt-Svc; or an app's headers not encoded ahead).
    pub headers: &'a [(&'a [u8], &'a [u8])],
    pub framing: ResponseFraming,
    /// Whether the connection stays open after this response.
    pub keep_alive: bool,
    /// 29-byte IMF-fixdate (see `crate::date`), added as `Date` unless the app set one.
    pub date: &'a [u8],
    /// Value of the `Server` header, added unless the app set one; empty = do not add.
    pub server: &'a [u8],
    /// Header lines the server adds to every answer, already encoded and validated
    /// (`Name: value\r\n` each: `--add-header`, a static file's `Expires`); written after
    /// Server, whatever the app set (as uWSGI's add-header appends). Usually empty.
    pub extra: &'a [u8],
}

/// Header lines encoded ahead (`Name: value\r\n` each), and which of the three headers the
/// server would otherwise add they hold.
#[derive(Debug, Clone, Copy, Default)]
pub struct EncodedLines<'a> {
    pub bytes: &'a [u8],
    pub has_date: bool,
    pub has_server: bool,
    pub has_length: bool,
}

/// Which of Date, Server and Content-Length a header name is, for [`EncodedLines`]' flags:
/// (date, server, length).
#[inline]
pub fn names_added_header(name: &[u8]) -> (bool, bool, bool) {
    // Length first: most names match none of the three and leave after one compare.
    match name.len() {
        4 => (name.eq_ignore_ascii_case(b"date"), false, false),
        6 => (false, name.eq_ignore_ascii_case(b"server"), false),
        14 => (false, false, name.eq_ignore_ascii_case(b"content-length")),
        _ => (false, false, false),
    }
}

/// Append the encoded head (through the blank line) to `out`.
/// Adds `Content-Length` for `Length(n)` only when the app did not set it, `Transfer-Encoding:
/// chunked` for `Chunked`, and `Connection: close` when !keep_alive, or `Connection: keep-alive`
/// when keep_alive on HTTP/1.0.
///
/// The status line always says `HTTP/1.1`, for 1.0 requests too: RFC 9110 §6.2 has a server
/// send its highest conformant version, and 1.0 clients accept it. `head.version` is the
/// *request's* version and only decides the keep-alive signalling. The caller must not ask for
/// `Chunked` on an HTTP/1.0 request (a 1.0 client cannot decode it: use `CloseDelimited`).
/// `Date` is skipped if `head.date` is empty.
pub fn encode_response_head(out: &mut Vec<u8>, head: &ResponseHead<'_>) {
    // One reservation for everything: the fixed parts below are ~90 bytes at most.
    let app_len: usize = head
        .headers
        .iter()
        .map(|(n, v)| n.len() + v.len() + 4)
        .sum();
    let lines = &head.lines;
    out.reserve(
        128 + head.status.len()
            + lines.bytes.len()
            + app_len
            + head.date.len()
            + head.server.len()
            + head.extra.len(),
    );

    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(head.status);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(lines.bytes);

    let (mut has_date, mut has_server, mut has_length) =
        (lines.has_date, lines.has_server, lines.has_length);
    for (name, value) in head.headers {
        out.extend_from_slice(name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
        let (d, s, l) = names_added_header(name);
        has_date |= d;
        has_server |= s;
        has_length |= l;
    }
    if !has_date && !head.date.is_empty() {
        out.extend_from_slice(b"Date: ");
        out.extend_from_slice(head.date);
        out.extend_from_slice(b"\r\n");
    }
    if !has_server && !head.server.is_empty() {
        out.extend_from_slice(b"Server: ");
        out.extend_from_slice(head.server);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(head.extra);
    match head.framing {
        ResponseFraming::Length(n) if !has_length => {
            out.extend_from_slice(b"Content-Length: ");
            push_dec(out, n);
            out.extend_from_slice(b"\r\n");
        }
        ResponseFraming::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        ResponseFraming::Length(_) | ResponseFraming::CloseDelimited | ResponseFraming::NoBody => {}
    }
    if !head.keep_alive {
        out.extend_from_slice(b"Connection: close\r\n");
    } else if head.version == Version::Http10 {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// Longest decimal u64: the size of [`decimal`]'s buffer.
pub const DECIMAL_LEN: usize = U64_DEC_LEN;

/// `n` in decimal, written into the end of `buf`; returns the used suffix (a header value such
/// as a Content-Length the caller adds itself, without an allocation).
#[inline]
pub fn decimal(n: u64, buf: &mut [u8; DECIMAL_LEN]) -> &[u8] {
    u64_to_dec(n, buf)
}

/// Validate a WSGI status string: 3 digits, a space, a reason with no CR, LF, NUL or other
/// control byte (tab allowed). The code must be 100-999 (a leading 0 is no status code).
pub fn validate_status(status: &[u8]) -> Result<(), ProtoError> {
    let ok = status.len() >= 4
        && (b'1'..=b'9').contains(&status[0])
        && status[1].is_ascii_digit()
        && status[2].is_ascii_digit()
        && status[3] == b' '
        && all_field_value_bytes(&status[4..]);
    if ok {
        Ok(())
    } else {
        Err(ProtoError::BadRequest(
            "invalid status line from the application",
        ))
    }
}
/// Validate a header name: an RFC 9110 token (non-empty, tchar only).
pub fn validate_header_name(name: &[u8]) -> Result<(), ProtoError> {
    if is_token(name) {
        Ok(())
    } else {
        Err(ProtoError::BadRequest(
            "invalid header name from the application",
        ))
    }
}
/// Validate a header value: no CR, LF, NUL or other control byte except tab (obs-text, bytes
/// 0x80-0xFF, is allowed).
pub fn validate_header_value(value: &[u8]) -> Result<(), ProtoError> {
    if all_field_value_bytes(value) {
        Ok(())
    } else {
        Err(ProtoError::BadRequest(
            "invalid header value from the application",
        ))
    }
}

/// Chunk framing for `len` bytes of data: the hex size line, written into `buf`; returns the
/// used prefix. The data follows, then `CHUNK_END`. Lets the I/O layer writev framing around
/// the app's buffers without copying them. (`len` must not be 0: that would be the last chunk.)
/// This and [`write_fixed_chunk_size`] are the crate's only chunk-size writers.
pub fn chunk_header(len: usize, buf: &mut [u8; 18]) -> &[u8] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = ((usize::BITS - len.leading_zeros()).div_ceil(4)).max(1) as usize;
    // Lowest digit last, one shift a digit (`write_hex` shifts by each digit's place); `& 15`
    // lets the compiler drop the bounds checks (at most 16 digits): about half the
    // instructions of an 8 KiB block's size line (benchmarks/results/2026-11-27-k8b/).
    let mut n = len;
    for i in (0..digits).rev() {
        buf[i & 15] = HEX[n & 0xf];
        n >>= 4;
    }
    buf[digits] = b'\r';
    buf[digits + 1] = b'\n';
    &buf[..digits + 2]
}

/// Width of a fixed-width chunk size field ([`OPEN_CHUNK_HEADER`]): up to 4 GiB - 1 per chunk.
pub const FIXED_CHUNK_DIGITS: usize = 8;
/// The head of a chunk whose size is not known yet: a fixed-width size field (leading zeros
/// are valid chunk-size syntax, RFC 9112 §7.1) that [`write_fixed_chunk_size`] fills in as
/// data is appended, so blocks that pile up become one chunk without moving any bytes.
pub const OPEN_CHUNK_HEADER: &[u8] = b"00000000\r\n";
/// The largest size a fixed-width chunk size field can hold.
pub const FIXED_CHUNK_MAX: usize = (1 << (4 * FIXED_CHUNK_DIGITS)) - 1;

/// Overwrite the size field of an [`OPEN_CHUNK_HEADER`] (its first `FIXED_CHUNK_DIGITS` bytes)
/// with `len` in fixed-width hex. `len` must be at most [`FIXED_CHUNK_MAX`].
#[inline]
pub fn write_fixed_chunk_size(len: usize, field: &mut [u8]) {
    debug_assert!(len <= FIXED_CHUNK_MAX);
    write_hex(len, &mut field[..FIXED_CHUNK_DIGITS]);
}

/// `n` in lowercase hex, right-aligned in `out` (zero-padded to its width).
#[inline]
fn write_hex(n: usize, out: &mut [u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let w = out.len();
    for (i, b) in out.iter_mut().enumerate() {
        *b = HEX[(n >> (4 * (w - 1 - i))) & 0xf];
    }
}

/// Written after each chunk's data.
pub const CHUNK_END: &[u8] = b"\r\n";
/// The last chunk with no trailers.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// A complete minimal error response (e.g. 400, 408, 413, 414, 431, 500, 503) with a short
/// plain-text body of the reason phrase, `Connection: close` unless keep_alive, Date and Server
/// (each skipped when empty). `reason` must be a valid reason phrase (no CR/LF).
pub fn encode_error_response(
    out: &mut Vec<u8>,
    status: u16,
    reason: &str,
    keep_alive: bool,
    date: &[u8],
    server: &[u8],
) {
    out.reserve(160 + 2 * reason.len() + date.len() + server.len());
    out.extend_from_slice(b"HTTP/1.1 ");
    push_dec(out, u64::from(status));
    out.push(b' ');
    out.extend_from_slice(reason.as_bytes());
    out.extend_from_slice(b"\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ");
    push_dec(out, reason.len() as u64 + 1);
    out.extend_from_slice(b"\r\n");
    if !keep_alive {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    if !date.is_empty() {
        out.extend_from_slice(b"Date: ");
        out.extend_from_slice(date);
        out.extend_from_slice(b"\r\n");
    }
    if !server.is_empty() {
        out.extend_from_slice(b"Server: ");
        out.extend_from_slice(server);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(reason.as_bytes());
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATE: &[u8] = b"Sun, 06 Nov 1994 08:49:37 GMT";

    fn head<'a>(
        version: Version,
        headers: &'a [(&'a [u8], &'a [u8])],
        framing: ResponseFraming,
        keep_alive: bool,
    ) -> ResponseHead<'a> {
        ResponseHead {
            version,
            status: b"200 OK",
            lines: EncodedLines::default(),
            headers,
            framing,
            keep_alive,
            date: DATE,
            server: b"sluicegate",
            extra: b"",
        }
    }

    fn encode(h: &ResponseHead<'_>) -> String {
        let mut out = b"prefix|".to_vec();
        encode_response_head(&mut out, h);
        let s = String::from_utf8(out).unwrap();
        s.strip_prefix("prefix|").expect("appends").to_string()
    }

    #[test]
    fn extra_lines_follow_server_even_when_the_app_set_the_same_name() {
        let mut h = head(
            Version::Http11,
            &[(b"X-Frame-Options", b"SAMEORIGIN")],
            ResponseFraming::Length(0),
            true,
        );
        h.extra = b"X-Frame-Options: DENY\r\nExpires: Sun, 06 Nov 1994 09:49:37 GMT\r\n";
        assert_eq!(
            encode(&h),
            "HTTP/1.1 200 OK\r\nX-Frame-Options: SAMEORIGIN\r\n\
             Date: Sun, 06 Nov 1994 08:49:37 GMT\r\nServer: sluicegate\r\n\
             X-Frame-Options: DENY\r\nExpires: Sun, 06 Nov 1994 09:49:37 GMT\r\n\
             Content-Length: 0\r\n\r\n"
        );
    }

    #[test]
    fn lines_encoded_ahead_come_first_and_their_date_server_length_are_not_added_again() {
        let pairs: &[(&[u8], &[u8])] = &[(b"X-After", b"1")];
        let mut h = head(Version::Http11, pairs, ResponseFraming::Length(4), true);
        h.lines = EncodedLines {
            bytes: b"Date: app\r\nServer: app\r\nContent-Length: 4\r\n",
            has_date: true,
            has_server: true,
            has_length: true,
        };
        assert_eq!(
            encode(&h),
            "HTTP/1.1 200 OK\r\nDate: app\r\nServer: app\r\nContent-Length: 4\r\n\
             X-After: 1\r\n\r\n"
        );
        // The same lines without their flags: the server adds its own (the flags are the
        // caller's word, not read from the bytes).
        h.lines = EncodedLines {
            bytes: b"X-Before: 0\r\n",
            ..EncodedLines::default()
        };
        assert_eq!(
            encode(&h),
            format!(
                "HTTP/1.1 200 OK\r\nX-Before: 0\r\nX-After: 1\r\nDate: {}\r\n\
                 Server: sluicegate\r\nContent-Length: 4\r\n\r\n",
                std::str::from_utf8(DATE).unwrap()
            )
        );
    }

    #[test]
    fn names_of_added_headers_are_told_apart_whatever_their_case() {
        assert_eq!(names_added_header(b"DATE"), (true, false, false));
        assert_eq!(names_added_header(b"server"), (false, true, false));
        assert_eq!(names_added_header(b"Content-length"), (false, false, true));
        assert_eq!(names_added_header(b"Dat"), (false, false, false));
        assert_eq!(names_added_header(b"X-Serve"), (false, false, false));
    }

    #[test]
    fn minimal_keep_alive_11_with_length() {
        let got = encode(&head(
            Version::Http11,
            &[],
            ResponseFraming::Length(5),
            true,
        ));
        assert_eq!(
            got,
            "HTTP/1.1 200 OK\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nServer: sluicegate\r\n\
             Content-Length: 5\r\n\r\n"
        );
    }

    #[test]
    fn app_headers_in_order_then_chunked_and_close() {
        let hs: &[(&[u8], &[u8])] = &[(b"Content-Type", b"text/html"), (b"X-A", b"1")];
        let got = encode(&head(Version::Http11, hs, ResponseFraming::Chunked, false));
        assert_eq!(
            got,
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-A: 1\r\n\
             Date: Sun, 06 Nov 1994 08:49:37 GMT\r\nServer: sluicegate\r\n\
             Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn http10_request_gets_11_status_line_and_keep_alive_header() {
        let got = encode(&head(
            Version::Http10,
            &[],
            ResponseFraming::Length(0),
            true,
        ));
        assert!(got.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(got.ends_with("Content-Length: 0\r\nConnection: keep-alive\r\n\r\n"));
        let got = encode(&head(
            Version::Http10,
            &[],
            ResponseFraming::CloseDelimited,
            false,
        ));
        assert!(got.ends_with("Server: sluicegate\r\nConnection: close\r\n\r\n"));
        assert!(!got.contains("Content-Length") && !got.contains("Transfer-Encoding"));
    }

    #[test]
    fn app_set_date_server_length_are_not_duplicated() {
        let hs: &[(&[u8], &[u8])] = &[
            (b"dAtE", b"x"),
            (b"SERVER", b"app"),
            (b"content-length", b"7"),
        ];
        let got = encode(&head(Version::Http11, hs, ResponseFraming::Length(7), true));
        assert_eq!(
            got,
            "HTTP/1.1 200 OK\r\ndAtE: x\r\nSERVER: app\r\ncontent-length: 7\r\n\r\n"
        );
    }

    #[test]
    fn empty_server_and_date_are_not_added() {
        let mut h = head(Version::Http11, &[], ResponseFraming::NoBody, true);
        h.server = b"";
        h.date = b"";
        assert_eq!(encode(&h), "HTTP/1.1 200 OK\r\n\r\n");
    }

    #[test]
    fn no_body_keeps_app_content_length_and_adds_none() {
        let hs: &[(&[u8], &[u8])] = &[(b"Content-Length", b"42")];
        let mut h = head(Version::Http11, hs, ResponseFraming::NoBody, true);
        h.status = b"304 Not Modified";
        let got = encode(&h);
        assert!(got.starts_with("HTTP/1.1 304 Not Modified\r\nContent-Length: 42\r\n"));
        assert_eq!(got.matches("Content-Length").count(), 1);
        assert!(!got.contains("Transfer-Encoding"));
    }

    #[test]
    fn large_content_length() {
        let got = encode(&head(
            Version::Http11,
            &[],
            ResponseFraming::Length(u64::MAX),
            true,
        ));
        assert!(got.contains("Content-Length: 18446744073709551615\r\n"));
    }

    #[test]
    fn status_validation() {
        for ok in [
            "200 OK",
            "404 Not Found",
            "999 ",
            "200 Tab\there",
            "200 caf\u{e9}",
        ] {
            assert_eq!(validate_status(ok.as_bytes()), Ok(()), "{ok:?}");
        }
        for bad in [
            "",
            "200",
            "20 OK",
            "2000 OK",
            "200OK",
            "099 X",
            "abc OK",
            "200 A\r\nX: y",
            "200 A\nB",
            "200 A\0",
            "200 A\x7f",
            "200 A\x01",
            " 200 OK",
        ] {
            assert_eq!(
                validate_status(bad.as_bytes()).map_err(|e| e.status()),
                Err(400),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn header_name_and_value_validation() {
        assert!(validate_header_name(b"X-Custom_Header.1~").is_ok());
        for bad in [
            &b""[..],
            b"X Y",
            b"X:Y",
            b"X\r\n",
            b"\xc3\xa9",
            b"(x)",
            b"a\0",
        ] {
            assert!(validate_header_name(bad).is_err(), "{bad:?}");
        }
        for ok in [
            &b""[..],
            b"plain",
            b"with\ttab",
            b" spaced ",
            b"obs-text \x80\xff",
        ] {
            assert!(validate_header_value(ok).is_ok(), "{ok:?}");
        }
        for bad in [&b"a\rb"[..], b"a\nb", b"a\0b", b"a\x7fb", b"\x1b[31m"] {
            assert!(validate_header_value(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn chunk_headers_are_lowercase_hex() {
        let mut buf = [0u8; 18];
        for (len, want) in [
            (0usize, "0\r\n"),
            (1, "1\r\n"),
            (15, "f\r\n"),
            (16, "10\r\n"),
            (255, "ff\r\n"),
            (4096, "1000\r\n"),
            (0xdead_beef, "deadbeef\r\n"),
            (usize::MAX, "ffffffffffffffff\r\n"),
        ] {
            assert_eq!(chunk_header(len, &mut buf), want.as_bytes());
        }
        let max = format!("{:x}\r\n", usize::MAX);
        assert_eq!(chunk_header(usize::MAX, &mut buf), max.as_bytes());
    }

    #[test]
    fn error_responses() {
        let mut out = Vec::new();
        encode_error_response(&mut out, 400, "Bad Request", false, DATE, b"sluicegate");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n\
             Content-Length: 12\r\nConnection: close\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
             Server: sluicegate\r\n\r\nBad Request\n"
        );
        let mut out = Vec::new();
        encode_error_response(&mut out, 503, "Service Unavailable", true, b"", b"");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n\
             Content-Length: 20\r\n\r\nService Unavailable\n"
        );
    }

    #[test]
    fn proto_errors_encode_through_the_one_writer() {
        let e = ProtoError::HeadersTooLarge;
        let mut out = Vec::new();
        encode_error_response(&mut out, e.status(), e.reason(), false, DATE, b"s");
        assert!(out.starts_with(b"HTTP/1.1 431 Request Header Fields Too Large\r\n"));
    }
}
