//! The uwsgi protocol (what nginx's `uwsgi_pass` speaks): turns one uwsgi request packet into
//! the same wire-neutral [`RequestHead`] the HTTP parser makes, plus the CGI facts that only
//! uwsgi carries ([`UwsgiFacts`]: the client's address, the scheme, the server's name and port).
//!
//! Why one type: the WSGI bridge only ever sees a `RequestHead`, so behind `uwsgi_pass` an
//! application gets the environ it would get behind `proxy_pass` over HTTP, built by the same
//! code. The packet is `modifier1: u8` (0 = WSGI request), `datasize: u16 LE`, `modifier2: u8`
//! (0), then `datasize` bytes of variables, each `key_size: u16 LE, key, val_size: u16 LE, val`;
//! the request body (CONTENT_LENGTH bytes) follows the packet on the stream.
//!
//! Strictness: the packet comes from a trusted proxy, but its variables carry client bytes, so
//! they meet the HTTP parser's rules: a method is a token, the target is origin-form (or `*` for
//! OPTIONS) without control bytes, space or `#`, header values carry no control byte, and
//! CONTENT_LENGTH is plain digits. One rule is relaxed: bytes >= 0x80 are allowed in the target,
//! because nginx forwards a client's raw UTF-8 request line unchanged in REQUEST_URI. Lengths
//! that run past the packet, an unknown modifier and over-limit sizes are refused; nothing is
//! repaired. Like the HTTP parser, the answer depends only on the bytes given, so a packet fed
//! whole or in pieces parses the same.

use std::ops::Range;

use crate::h1::parse::parse_content_length;
use crate::host::valid_host;
use crate::token::{is_field_value_byte, is_tchar, is_token, trim_ows};
use crate::{BodyFraming, Limits, ProtoError, RequestHead, Version};

/// Packet header: modifier1, datasize (u16 little-endian), modifier2.
const PACKET_HEADER_LEN: usize = 4;
/// modifier1 of a WSGI/CGI-style request: the only kind served.
const MODIFIER1_WSGI: u8 = 0;
/// modifier2 that goes with it.
const MODIFIER2_WSGI: u8 = 0;
/// Digits for percent-encoding PATH_INFO back into a target.
const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// Header variables (`suffix`: after `HTTP_`) the packet itself decides: nginx sends
/// CONTENT_TYPE / CONTENT_LENGTH, and has removed any chunked coding (it sends CONTENT_LENGTH;
/// behind `proxy_pass` it does not forward Transfer-Encoding either). Told by length first.
#[inline]
fn is_framing_header(suffix: &[u8]) -> bool {
    matches!(
        suffix,
        b"CONTENT_TYPE" | b"CONTENT_LENGTH" | b"TRANSFER_ENCODING"
    )
}

/// Header fields a packet's variables are read into before the first regrowth.
const FIELDS_ROOM: usize = 12;

/// Parse one uwsgi request packet at the start of `buf`.
/// Ok(None): more bytes needed. Ok(Some((head, facts, n))): the packet was n bytes (4 + datasize); the body starts at buf[n..].
///
/// Err(e): the request is refused with `e.status()` and the connection closes. The modifiers
/// and the size limit are decided as soon as the 4-byte header is in, before the variables.
pub fn parse_packet(
    buf: &[u8],
    limits: &Limits,
) -> Result<Option<(RequestHead, UwsgiFacts, usize)>, ProtoError> {
    let Some(&[modifier1, size_lo, size_hi, modifier2]) = buf.get(..PACKET_HEADER_LEN) else {
        return Ok(None);
    };
    if modifier1 != MODIFIER1_WSGI || modifier2 != MODIFIER2_WSGI {
        return Err(bad("uwsgi: unsupported modifier"));
    }
    let datasize = usize::from(u16::from_le_bytes([size_lo, size_hi]));
    if datasize > limits.max_header_bytes {
        return Err(ProtoError::HeadersTooLarge);
    }
    let n = PACKET_HEADER_LEN + datasize;
    let Some(vars) = buf.get(PACKET_HEADER_LEN..n) else {
        return Ok(None);
    };
    let (head, facts) = build(&Vars::read(vars, limits)?, datasize, limits)?;
    Ok(Some((head, facts, n)))
}

#[inline]
fn bad(what: &'static str) -> ProtoError {
    ProtoError::BadRequest(what)
}

/// Where a header field of the head comes from.
enum FieldName<'a> {
    /// An `HTTP_*` variable: the part after the prefix.
    Http(&'a [u8]),
    ContentType,
    ContentLength,
}

/// The variables the head is built from, borrowed from the packet. For the single-valued CGI
/// variables a later one replaces an earlier one (as uWSGI itself does), so that a
/// `uwsgi_param` after `include uwsgi_params` overrides it.
#[derive(Default)]
struct Vars<'a> {
    method: Option<&'a [u8]>,
    request_uri: Option<&'a [u8]>,
    path_info: Option<&'a [u8]>,
    query_string: Option<&'a [u8]>,
    protocol: Option<&'a [u8]>,
    content_length: Option<&'a [u8]>,
    https: Option<&'a [u8]>,
    request_scheme: Option<&'a [u8]>,
    uwsgi_scheme: Option<&'a [u8]>,
    remote_addr: Option<&'a [u8]>,
    remote_port: Option<&'a [u8]>,
    server_name: Option<&'a [u8]>,
    server_port: Option<&'a [u8]>,
    /// Header fields in packet order (name source, value as sent).
    fields: Vec<(FieldName<'a>, &'a [u8])>,
}

impl<'a> Vars<'a> {
    /// Walk the variables of a complete packet body.
    fn read(mut rest: &'a [u8], limits: &Limits) -> Result<Self, ProtoError> {
        // Room for what nginx passes from a browser (Host, User-Agent, Accept and a few
        // more): one allocation, not one and then its regrowths.
        let mut vars = Vars {
            fields: Vec::with_capacity(FIELDS_ROOM),
            ..Vars::default()
        };
        let mut http_vars = 0usize;
        while !rest.is_empty() {
            let key = take_sized(&mut rest)?;
            let value = take_sized(&mut rest)?;
            if key.is_empty() {
                return Err(bad("uwsgi: empty variable name"));
            }
            // HTTP_*: a request header field (CGI, RFC 3875 §4.1.18). (A slice pattern, not
            // `strip_prefix`, which stayed a call per variable.)
            if let [b'H', b'T', b'T', b'P', b'_', suffix @ ..] = key {
                http_vars += 1;
                if http_vars > limits.max_headers {
                    return Err(ProtoError::HeadersTooLarge);
                }
                if !is_framing_header(suffix) {
                    vars.fields.push((FieldName::Http(suffix), value));
                }
                continue;
            }
            match known(key) {
                Some(Known::Method) => vars.method = Some(value),
                Some(Known::RequestUri) => vars.request_uri = Some(value),
                Some(Known::PathInfo) => vars.path_info = Some(value),
                Some(Known::QueryString) => vars.query_string = Some(value),
                Some(Known::Protocol) => vars.protocol = Some(value),
                Some(Known::Https) => vars.https = Some(value),
                Some(Known::RequestScheme) => vars.request_scheme = Some(value),
                Some(Known::UwsgiScheme) => vars.uwsgi_scheme = Some(value),
                Some(Known::RemoteAddr) => vars.remote_addr = Some(value),
                Some(Known::RemotePort) => vars.remote_port = Some(value),
                Some(Known::ServerName) => vars.server_name = Some(value),
                Some(Known::ServerPort) => vars.server_port = Some(value),
                Some(Known::ContentType) => vars.set_field(FieldName::ContentType, value),
                Some(Known::ContentLength) => {
                    // The one variable that frames the stream: two that disagree are refused,
                    // as conflicting Content-Length fields are in HTTP.
                    if vars.content_length.is_some_and(|prev| prev != value) {
                        return Err(bad("uwsgi: conflicting CONTENT_LENGTH variables"));
                    }
                    vars.content_length = Some(value);
                    vars.set_field(FieldName::ContentLength, value);
                }
                // DOCUMENT_ROOT, SCRIPT_NAME, custom uwsgi_param keys...: not part of the head.
                None => {}
            }
        }
        Ok(vars)
    }

    /// Content-Type / Content-Length: one field, at the first variable's place, last value.
    fn set_field(&mut self, name: FieldName<'a>, value: &'a [u8]) {
        let kind = std::mem::discriminant(&name);
        match self
            .fields
            .iter_mut()
            .find(|(n, _)| std::mem::discriminant(n) == kind)
        {
            Some(field) => field.1 = value,
            None => self.fields.push((name, value)),
        }
    }

    /// The scheme the proxy reports: any variable saying https wins (a proxy that terminated
    /// TLS says so in one of them), then any saying http.
    fn scheme(&self) -> Option<&'static str> {
        let says = |v: Option<&[u8]>, yes: &[&[u8]], no: &[&[u8]]| match v {
            Some(v) if yes.iter().any(|y| v.eq_ignore_ascii_case(y)) => Some(true),
            Some(v) if no.iter().any(|n| v.eq_ignore_ascii_case(n)) => Some(false),
            _ => None,
        };
        let votes = [
            says(self.https, &[b"on", b"1"], &[b"off", b"0"]),
            says(self.request_scheme, &[b"https"], &[b"http"]),
            says(self.uwsgi_scheme, &[b"https"], &[b"http"]),
        ];
        if votes.contains(&Some(true)) {
            Some("https")
        } else if votes.contains(&Some(false)) {
            Some("http")
        } else {
            None
        }
    }

    fn facts(&self) -> UwsgiFacts {
        UwsgiFacts::new(
            self.remote_addr,
            self.remote_port,
            self.server_name,
            self.server_port,
            self.scheme(),
        )
    }
}

/// The CGI variables the head and the facts are made of.
#[derive(Clone, Copy)]
enum Known {
    Method,
    RequestUri,
    PathInfo,
    QueryString,
    Protocol,
    Https,
    RequestScheme,
    UwsgiScheme,
    RemoteAddr,
    RemotePort,
    ServerName,
    ServerPort,
    ContentType,
    ContentLength,
}

/// Which of [`Known`] `key` is. Its length, first and last bytes leave one candidate, so one
/// compare decides (a `match` on the names compared up to five of the same length), and each
/// compare is against a literal of a known length: inline word compares, no `memcmp` call.
fn known(key: &[u8]) -> Option<Known> {
    let (&first, &last) = (key.first()?, key.last()?);
    Some(match (key.len(), first, last) {
        (14, b'R', b'D') if key == b"REQUEST_METHOD" => Known::Method,
        (11, b'R', b'I') if key == b"REQUEST_URI" => Known::RequestUri,
        (9, b'P', b'O') if key == b"PATH_INFO" => Known::PathInfo,
        (12, b'Q', b'G') if key == b"QUERY_STRING" => Known::QueryString,
        (15, b'S', b'L') if key == b"SERVER_PROTOCOL" => Known::Protocol,
        (5, b'H', b'S') if key == b"HTTPS" => Known::Https,
        (14, b'R', b'E') if key == b"REQUEST_SCHEME" => Known::RequestScheme,
        (12, b'U', b'E') if key == b"UWSGI_SCHEME" => Known::UwsgiScheme,
        (11, b'R', b'R') if key == b"REMOTE_ADDR" => Known::RemoteAddr,
        (11, b'R', b'T') if key == b"REMOTE_PORT" => Known::RemotePort,
        (11, b'S', b'E') if key == b"SERVER_NAME" => Known::ServerName,
        (11, b'S', b'T') if key == b"SERVER_PORT" => Known::ServerPort,
        (12, b'C', b'E') if key == b"CONTENT_TYPE" => Known::ContentType,
        (14, b'C', b'H') if key == b"CONTENT_LENGTH" => Known::ContentLength,
        _ => return None,
    })
}

/// One `size: u16 LE, bytes` string off the front of `rest`.
fn take_sized<'a>(rest: &mut &'a [u8]) -> Result<&'a [u8], ProtoError> {
    const RUNS_PAST: ProtoError = ProtoError::BadRequest("uwsgi: variable runs past the packet");
    let bytes: &'a [u8] = rest;
    let [lo, hi, after @ ..] = bytes else {
        return Err(RUNS_PAST);
    };
    let size = usize::from(u16::from_le_bytes([*lo, *hi]));
    if size > after.len() {
        return Err(RUNS_PAST);
    }
    let (s, after) = after.split_at(size);
    *rest = after;
    Ok(s)
}

/// A range into the head's buffer. The buffer is built from one packet (< 64 KiB, the target
/// at most tripled by percent-encoding), so this cannot fail in practice; it is checked anyway.
fn span(start: usize, end: usize) -> Result<Range<u32>, ProtoError> {
    match (u32::try_from(start), u32::try_from(end)) {
        (Ok(s), Ok(e)) => Ok(s..e),
        _ => Err(ProtoError::HeadersTooLarge),
    }
}

/// Build the owned head: `buf` = method, target, then each field's name and value (about as
/// many bytes as the packet's `datasize`, which sizes the one allocation).
fn build(
    vars: &Vars<'_>,
    datasize: usize,
    limits: &Limits,
) -> Result<(RequestHead, UwsgiFacts), ProtoError> {
    let method = match vars.method {
        None => return Err(bad("uwsgi: no REQUEST_METHOD")),
        Some(m) if !is_token(m) => return Err(bad("uwsgi: invalid REQUEST_METHOD")),
        Some(m) => m,
    };
    let version = version(vars.protocol)?;
    let body = match vars.content_length {
        None | Some(b"") => BodyFraming::None,
        Some(v) => match parse_content_length(v)? {
            0 => BodyFraming::None,
            n if n > limits.max_body => return Err(ProtoError::PayloadTooLarge),
            n => BodyFraming::Length(n),
        },
    };

    let mut buf = Vec::with_capacity(datasize);
    buf.extend_from_slice(method);
    let method_range = span(0, buf.len())?;

    let t0 = buf.len();
    push_target(&mut buf, vars)?;
    let target = &buf[t0..];
    if target.len() > limits.max_request_line {
        return Err(ProtoError::UriTooLong);
    }
    let (path, query) = split_target(target, method)?;
    let (path, query) = (
        span(t0 + path.start, t0 + path.end)?,
        span(t0 + query.start, t0 + query.end)?,
    );
    let target = span(t0, buf.len())?;

    let mut headers = Vec::with_capacity(vars.fields.len());
    for (name, value) in &vars.fields {
        let value = trim_ows(value);
        if matches!(name, FieldName::ContentType | FieldName::ContentLength) && value.is_empty() {
            // nginx sends both variables on every request, empty when the client sent none.
            continue;
        }
        if !value.iter().all(|&b| is_field_value_byte(b)) {
            return Err(bad(
                "uwsgi: CR, LF, NUL or another control byte in a header value",
            ));
        }
        // The same Host check as HTTP/1.1's and HTTP/2's: nginx passes the client's Host on.
        if matches!(name, FieldName::Http(s) if s.len() == 4 && s.eq_ignore_ascii_case(b"HOST"))
            && !valid_host(value)
        {
            return Err(bad("uwsgi: invalid HTTP_HOST"));
        }
        let n0 = buf.len();
        match name {
            FieldName::Http(suffix) => push_header_name(&mut buf, suffix)?,
            FieldName::ContentType => buf.extend_from_slice(b"Content-Type"),
            FieldName::ContentLength => buf.extend_from_slice(b"Content-Length"),
        }
        let v0 = buf.len();
        buf.extend_from_slice(value);
        headers.push((span(n0, v0)?, span(v0, buf.len())?));
    }

    let head = RequestHead {
        buf,
        method: method_range,
        target,
        // The target is always origin-form: the host is the Host header nginx passes on.
        authority: span(t0, t0)?,
        path,
        query,
        headers,
        version,
        body,
        // nginx opens one connection per uwsgi request and reads the response until the close.
        keep_alive: false,
        // nginx answers `Expect: 100-continue` itself before it reads the body it forwards.
        expect_continue: false,
        is_head: method == b"HEAD",
        // Not read on a uwsgi listener: nginx's own variables say who the client is.
        forwarding: false,
    };
    Ok((head, vars.facts()))
}

/// SERVER_PROTOCOL to a version. nginx reports the client's protocol, so an HTTP/2 or HTTP/3
/// client arrives as "HTTP/2.0" / "HTTP/3.0"; the response still goes back to nginx in HTTP/1.x
/// framing on this connection, so those are served as 1.1.
fn version(protocol: Option<&[u8]>) -> Result<Version, ProtoError> {
    match protocol {
        None | Some(b"" | b"HTTP/1.1" | b"HTTP/2.0" | b"HTTP/3.0") => Ok(Version::Http11),
        Some(b"HTTP/1.0") => Ok(Version::Http10),
        Some([b'H', b'T', b'T', b'P', b'/', major, b'.', minor])
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            Err(ProtoError::VersionNotSupported)
        }
        Some(_) => Err(bad("uwsgi: invalid SERVER_PROTOCOL")),
    }
}

/// Append the request target: REQUEST_URI as sent, else PATH_INFO (re-encoded, since CGI's
/// PATH_INFO is already decoded) plus `?QUERY_STRING` when there is a query.
fn push_target(buf: &mut Vec<u8>, vars: &Vars<'_>) -> Result<(), ProtoError> {
    if let Some(uri) = vars.request_uri.filter(|u| !u.is_empty()) {
        buf.extend_from_slice(uri);
        return Ok(());
    }
    let Some(path) = vars.path_info.filter(|p| !p.is_empty()) else {
        return Err(bad("uwsgi: no REQUEST_URI or PATH_INFO"));
    };
    for &b in path {
        // Decoding the result (as the bridge does for PATH_INFO) must give `path` back, so
        // '%' and everything that may not stand raw in a target is escaped.
        if is_target_byte(b) && b != b'%' && b != b'?' && b < 0x80 {
            buf.push(b);
        } else {
            buf.extend_from_slice(&[
                b'%',
                HEX_UPPER[usize::from(b >> 4)],
                HEX_UPPER[usize::from(b & 0xf)],
            ]);
        }
    }
    if let Some(query) = vars.query_string.filter(|q| !q.is_empty()) {
        buf.push(b'?');
        buf.extend_from_slice(query);
    }
    Ok(())
}

/// A byte that may stand raw in the target: the HTTP parser's set (visible ASCII but '#'),
/// plus bytes >= 0x80, which nginx passes through from the client's request line.
#[inline]
fn is_target_byte(b: u8) -> bool {
    ((0x21..=0x7e).contains(&b) && b != b'#') || b >= 0x80
}

/// Validate the target and split it into (path, query) ranges relative to it, as the HTTP
/// parser does for origin-form (and `*` for OPTIONS).
fn split_target(target: &[u8], method: &[u8]) -> Result<(Range<usize>, Range<usize>), ProtoError> {
    if target.is_empty() {
        return Err(bad("uwsgi: empty request target"));
    }
    if !target.iter().all(|&b| is_target_byte(b)) {
        return Err(bad("uwsgi: invalid byte in the request target"));
    }
    let end = target.len();
    if target == b"*" {
        if method != b"OPTIONS" {
            return Err(bad(
                "uwsgi: asterisk-form target on a method other than OPTIONS",
            ));
        }
        return Ok((0..end, end..end));
    }
    if !target.starts_with(b"/") {
        return Err(bad("uwsgi: request target does not start with '/'"));
    }
    Ok(match memchr::memchr(b'?', target) {
        Some(q) => (0..q, q + 1..end),
        None => (0..end, end..end),
    })
}

/// Append the field name of `HTTP_<suffix>`: '_' becomes '-', each word title-cased
/// (`X_FORWARDED_FOR` → `X-Forwarded-For`), as a client would most likely have written it.
fn push_header_name(buf: &mut Vec<u8>, suffix: &[u8]) -> Result<(), ProtoError> {
    let n0 = buf.len();
    // Copied, then changed in place, the token check in the same pass (a tchar stays one when
    // its case changes, as '_' and '-' both are): a mapped iterator's steps stayed calls.
    buf.extend_from_slice(suffix);
    let (mut ok, mut word_start) = (!suffix.is_empty(), true);
    for b in &mut buf[n0..] {
        let c = *b;
        ok &= is_tchar(c);
        *b = match c {
            b'_' => b'-',
            _ if word_start => c.to_ascii_uppercase(),
            _ => c.to_ascii_lowercase(),
        };
        word_start = c == b'_';
    }
    if !ok {
        return Err(bad("uwsgi: invalid header variable name"));
    }
    Ok(())
}

mod facts;
pub use facts::UwsgiFacts;
#[cfg(test)]
use facts::{ipv4, port};

#[cfg(test)]
mod facts_tests;
#[cfg(test)]
mod tests;
