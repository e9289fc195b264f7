//! The server's decisions about a response, in one place: which framing it gets, whether the
//! connection lives on after it, what the app's status and each of its headers mean, and the
//! fixed answers the server sends on its own (`100 Continue`, error answers, the health
//! answer), and how an answer of the server's own (`crate::answer`) is framed on HTTP/1.1.
//!
//! The WSGI bridge and the I/O layer call these and carry out the result; they make no HTTP
//! decision of their own (as hyper's `proto/h1/role.rs` decides framing for its connection
//! code). The encoder (`h1::encode`) then writes what was decided.

use crate::answer::{Answer, AnswerBody, ServerFields};
use crate::h1::encode::{encode_error_response, validate_header_name, validate_header_value};
use crate::h1::encode::{
    encode_response_head, validate_status, EncodedLines, ResponseFraming, ResponseHead,
};
use crate::h1::parse::parse_content_length;
use crate::token::list_elements;
use crate::{BodyFraming, RequestHead, Version};

/// The interim answer to `Expect: 100-continue`, sent when the app first reads the body
/// (RFC 9110 §10.1.1): a client that waits for it sends the body only then.
pub const CONTINUE_100: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// Statuses whose responses never carry a body (RFC 9110 §6.4.1): 1xx, 204 and 304.
#[inline]
pub fn is_bodiless_status(code: u16) -> bool {
    (100..200).contains(&code) || code == 204 || code == 304
}

/// What is known about a response's body when its head is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyLength {
    /// The Content-Length the app set, if any.
    pub declared: Option<u64>,
    /// The whole body's length when the server holds all of it (a list, a file, the end of
    /// the iterable reached before anything was sent).
    pub known: Option<u64>,
}

/// The framing decided for one response, and the Content-Length the server adds to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Framing {
    pub framing: ResponseFraming,
    /// A Content-Length to add to a HEAD answer: the one a GET would carry, when known and the
    /// app set none (RFC 9110 §9.3.2). `None` for every other answer (the encoder adds the
    /// length of `Length(n)` itself).
    pub head_length: Option<u64>,
}

/// Choose a response's framing: no body for HEAD and bodiless statuses; the app's
/// Content-Length, else the known length; chunked on HTTP/1.1; close-delimited on HTTP/1.0
/// (a 1.0 client cannot decode chunks).
#[inline]
pub fn choose_framing(version: Version, is_head: bool, status: u16, len: BodyLength) -> Framing {
    let framing = if is_head || is_bodiless_status(status) {
        ResponseFraming::NoBody
    } else if let Some(n) = len.declared.or(len.known) {
        ResponseFraming::Length(n)
    } else if version == Version::Http11 {
        ResponseFraming::Chunked
    } else {
        ResponseFraming::CloseDelimited
    };
    let head_length = if is_head && len.declared.is_none() {
        len.known
    } else {
        None
    };
    Framing {
        framing,
        head_length,
    }
}

/// Whether the connection may carry another request after this response: the request allowed
/// it, the app did not ask to close, and the body's end is not marked by the close itself.
#[inline]
pub fn keeps_alive(request_allows: bool, app_closes: bool, framing: ResponseFraming) -> bool {
    request_allows && !app_closes && framing != ResponseFraming::CloseDelimited
}

/// Whether a static answer (the server's own, with no request body read) keeps the connection:
/// a request that came with a body was not read, so the connection cannot carry another one.
#[inline]
pub fn own_answer_keeps_alive(request_keep_alive: bool, request_has_body: bool) -> bool {
    request_keep_alive && !request_has_body
}

/// The complete answer the server sends on its own for an error (a protocol error, a timeout,
/// an app that failed before sending anything): the status with its reason as a short text
/// body, `Connection: close` (the connection always closes after it), Date and Server. The one
/// builder of error answers: the I/O layer and the bridge both call it.
pub fn error_answer(status: u16, reason: &str, date: &[u8], server: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(160 + 2 * reason.len() + date.len() + server.len());
    encode_error_response(&mut out, status, reason, false, date, server);
    out
}

/// The status line's text (`"404 Not Found"`) of the statuses the server answers with on its
/// own outside the app (its side listeners and its error answers); RFC 9110 §15 wording.
pub fn status_line(status: u16) -> &'static [u8] {
    match status {
        200 => b"200 OK",
        204 => b"204 No Content",
        206 => b"206 Partial Content",
        301 => b"301 Moved Permanently",
        304 => b"304 Not Modified",
        400 => b"400 Bad Request",
        403 => b"403 Forbidden",
        404 => b"404 Not Found",
        405 => b"405 Method Not Allowed",
        408 => b"408 Request Timeout",
        412 => b"412 Precondition Failed",
        413 => b"413 Content Too Large",
        414 => b"414 URI Too Long",
        416 => b"416 Range Not Satisfiable",
        431 => b"431 Request Header Fields Too Large",
        501 => b"501 Not Implemented",
        503 => b"503 Service Unavailable",
        504 => b"504 Gateway Timeout",
        505 => b"505 HTTP Version Not Supported",
        _ => b"500 Internal Server Error",
    }
}

/// The head of a small answer of the server's own whose body the caller holds whole (a
/// side listener's page: `/metrics`): `status` (one of [`status_line`]'s), one Content-Type,
/// the Content-Length, `Connection: close` unless `keep_alive` (and `keep-alive` to an
/// HTTP/1.0 client that may keep it), Date and Server when given. A HEAD request gets the
/// same head, and the caller sends no body. Appends to `out`.
#[allow(clippy::too_many_arguments)]
pub fn simple_response(
    out: &mut Vec<u8>,
    version: Version,
    status: u16,
    content_type: &[u8],
    content_length: u64,
    keep_alive: bool,
    date: &[u8],
    server: &[u8],
) {
    encode_response_head(
        out,
        &ResponseHead {
            version,
            status: status_line(status),
            lines: EncodedLines::default(),
            headers: &[(b"Content-Type", content_type)],
            framing: ResponseFraming::Length(content_length),
            keep_alive,
            date,
            server,
            extra: b"",
        },
    );
}

/// An answer the server sent on its own (no app call), for the access log and the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnAnswer {
    pub status: u16,
    /// The connection may carry another request (the head says so).
    pub keep_alive: bool,
    /// Body bytes after the head (0 for HEAD).
    pub body_bytes: u64,
}

/// The server's own health answer (`--health-path`): a `GET` or `HEAD` of exactly `path` (the
/// query is ignored) gets `200 OK` while the server serves and `503` while it stops, so that a
/// load balancer's check takes it out of rotation before its connections close. Never cached.
/// `None` for any other request, which goes to the app. A stopping server asks to close the
/// connection after the answer ([`Answer::closes`]).
pub fn health_answer(req: &RequestHead, path: &[u8], serving: bool) -> Option<Answer<'static>> {
    if req.path() != path || !(req.is_head || req.method() == b"GET") {
        return None;
    }
    let (status, body): (u16, &'static [u8]) = if serving {
        (200, b"OK\n")
    } else {
        (503, b"draining\n")
    };
    let mut a = Answer::new(status);
    a.push(b"Content-Type", b"text/plain; charset=utf-8");
    a.push(b"Cache-Control", b"no-store");
    a.closes = !serving;
    Some(a.with_text(body, req.is_head))
}

/// Frame an answer of the server's own (`crate::answer`) as HTTP/1.1 to `req`: its head,
/// through the one response encoder (Date and Server from `server`, Content-Length, and
/// `Connection: close` unless the connection carries another request), then a text body; a
/// file body is the caller's to queue after it. Appends to `out`. The connection stays open
/// when the request allowed it, came without a body ([`own_answer_keeps_alive`]) and the
/// answer does not close it.
pub fn encode_answer(
    req: &RequestHead,
    answer: &Answer<'_>,
    server: &ServerFields<'_>,
    out: &mut Vec<u8>,
) -> OwnAnswer {
    let keep_alive =
        !answer.closes && own_answer_keeps_alive(req.keep_alive, req.body != BodyFraming::None);
    encode_response_head(
        out,
        &ResponseHead {
            version: req.version,
            status: status_line(answer.status),
            lines: EncodedLines::default(),
            headers: answer.fields(),
            framing: match answer.length {
                Some(n) => ResponseFraming::Length(n),
                None => ResponseFraming::NoBody,
            },
            keep_alive,
            date: server.date,
            server: server.server,
            extra: server.extra,
        },
    );
    if let AnswerBody::Text(text) = answer.body {
        out.extend_from_slice(text);
    }
    OwnAnswer {
        status: answer.status,
        keep_alive,
        body_bytes: answer.body_bytes(),
    }
}

/// What one header the app set means to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppHeader {
    /// An ordinary header: sent as the app gave it.
    Keep,
    /// `Content-Length`: the server frames the body with it (and sends it once).
    ContentLength(u64),
    /// A hop-by-hop header (RFC 9110 §7.6.1: connection management is the server's, and PEP
    /// 3333 forbids apps to set them): not sent. `closes` is a `Connection: close`, which the
    /// server honours by closing after the response.
    HopByHop { closes: bool },
}

/// Why the app's status or a header of it is refused (the bridge raises it in the app).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppHeadError {
    BadStatus,
    BadName,
    BadValue,
    BadContentLength,
}

/// Headers a WSGI app must not set.
const HOP_BY_HOP: [&[u8]; 7] = [
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"transfer-encoding",
    b"te",
    b"trailer",
    b"upgrade",
];

/// Validate the app's status line (`validate_status`) and return its code.
pub fn app_status_code(status: &[u8]) -> Result<u16, AppHeadError> {
    validate_status(status).map_err(|_| AppHeadError::BadStatus)?;
    Ok(status[..3]
        .iter()
        .fold(0u16, |n, &d| n * 10 + u16::from(d - b'0')))
}

/// Validate one header of the app's and say what it means. CR, LF, NUL or another control byte
/// in a value (response splitting), a name that is not a token, or a Content-Length that is
/// not `1*DIGIT` are refused.
pub fn classify_app_header(name: &[u8], value: &[u8]) -> Result<AppHeader, AppHeadError> {
    validate_header_name(name).map_err(|_| AppHeadError::BadName)?;
    validate_header_value(value).map_err(|_| AppHeadError::BadValue)?;
    // By length first: most names have none of these lengths and are done after one compare.
    let hop_by_hop = match name.len() {
        2 | 7 | 10 | 16 | 17 => HOP_BY_HOP.iter().any(|h| name.eq_ignore_ascii_case(h)),
        14 if name.eq_ignore_ascii_case(b"content-length") => {
            return parse_content_length(value)
                .map(AppHeader::ContentLength)
                .map_err(|_| AppHeadError::BadContentLength);
        }
        _ => false,
    };
    if hop_by_hop {
        let closes = name.eq_ignore_ascii_case(b"connection")
            && list_elements(value).any(|t| t.eq_ignore_ascii_case(b"close"));
        return Ok(AppHeader::HopByHop { closes });
    }
    Ok(AppHeader::Keep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ResponseFraming::*;
    use Version::*;

    fn len(declared: Option<u64>, known: Option<u64>) -> BodyLength {
        BodyLength { declared, known }
    }

    #[test]
    fn simple_responses() {
        let mut out = Vec::new();
        simple_response(&mut out, Http11, 404, b"text/plain", 5, false, b"", b"");
        assert_eq!(
            out,
            b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\
              Connection: close\r\n\r\n"
        );
        out.clear();
        simple_response(&mut out, Http10, 200, b"a/b", 0, true, b"D", b"S");
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\nContent-Type: a/b\r\nDate: D\r\nServer: S\r\n\
              Content-Length: 0\r\nConnection: keep-alive\r\n\r\n"
        );
        assert_eq!(status_line(999), b"500 Internal Server Error");
    }

    #[test]
    fn framing_table() {
        // (version, HEAD, status, declared, known) -> (framing, head_length)
        let cases = [
            (Http11, false, 200, None, None, Chunked, None),
            (Http10, false, 200, None, None, CloseDelimited, None),
            (Http11, false, 200, Some(5), None, Length(5), None),
            (Http11, false, 200, Some(5), Some(9), Length(5), None),
            (Http11, false, 200, None, Some(9), Length(9), None),
            (Http10, false, 200, None, Some(9), Length(9), None),
            (Http11, true, 200, None, Some(9), NoBody, Some(9)),
            (Http11, true, 200, Some(5), Some(9), NoBody, None),
            (Http11, true, 200, None, None, NoBody, None),
            (Http11, false, 204, None, Some(3), NoBody, None),
            (Http11, false, 304, Some(3), None, NoBody, None),
            (Http11, false, 103, None, None, NoBody, None),
            (Http11, false, 199, None, None, NoBody, None),
            (Http11, false, 205, None, None, Chunked, None),
        ];
        for (v, head, status, d, k, framing, head_length) in cases {
            assert_eq!(
                choose_framing(v, head, status, len(d, k)),
                Framing {
                    framing,
                    head_length
                },
                "{v:?} head={head} {status} {d:?} {k:?}"
            );
        }
    }

    #[test]
    fn keep_alive_rules() {
        assert!(keeps_alive(true, false, Chunked));
        assert!(keeps_alive(true, false, Length(0)));
        assert!(!keeps_alive(true, false, CloseDelimited));
        assert!(!keeps_alive(true, true, Length(0)));
        assert!(!keeps_alive(false, false, NoBody));
        assert!(own_answer_keeps_alive(true, false));
        assert!(!own_answer_keeps_alive(true, true));
        assert!(!own_answer_keeps_alive(false, false));
    }

    #[test]
    fn bodiless_statuses() {
        for c in [100, 101, 103, 199, 204, 304] {
            assert!(is_bodiless_status(c), "{c}");
        }
        for c in [200, 201, 205, 301, 404, 500] {
            assert!(!is_bodiless_status(c), "{c}");
        }
    }

    #[test]
    fn app_status() {
        assert_eq!(app_status_code(b"200 OK"), Ok(200));
        assert_eq!(app_status_code(b"404 "), Ok(404));
        assert_eq!(app_status_code(b"999 X"), Ok(999));
        for bad in [
            &b"200"[..],
            b"20 OK",
            b"099 X",
            b"200\tOK",
            b"200 O\r\nK",
            b"abc d",
        ] {
            assert_eq!(
                app_status_code(bad),
                Err(AppHeadError::BadStatus),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn app_headers() {
        assert_eq!(classify_app_header(b"X-A", b"b"), Ok(AppHeader::Keep));
        assert_eq!(
            classify_app_header(b"content-LENGTH", b"42"),
            Ok(AppHeader::ContentLength(42))
        );
        for v in [
            &b""[..],
            b"-1",
            b"4 2",
            b"0x10",
            b"5, 5",
            b"99999999999999999999999",
        ] {
            assert_eq!(
                classify_app_header(b"Content-Length", v),
                Err(AppHeadError::BadContentLength),
                "{v:?}"
            );
        }
        assert_eq!(
            classify_app_header(b"Connection", b"keep-alive, Close"),
            Ok(AppHeader::HopByHop { closes: true })
        );
        assert_eq!(
            classify_app_header(b"Connection", b"keep-alive"),
            Ok(AppHeader::HopByHop { closes: false })
        );
        for h in HOP_BY_HOP {
            assert!(matches!(
                classify_app_header(h, b"x"),
                Ok(AppHeader::HopByHop { .. })
            ));
        }
        assert_eq!(
            classify_app_header(b"Bad Name", b"x"),
            Err(AppHeadError::BadName)
        );
        assert_eq!(
            classify_app_header(b"X", b"a\r\nInjected: 1"),
            Err(AppHeadError::BadValue)
        );
    }

    #[test]
    fn error_answer_closes() {
        let a = error_answer(408, "Request Timeout", b"", b"");
        let s = String::from_utf8(a).unwrap();
        assert!(s.starts_with("HTTP/1.1 408 Request Timeout\r\n"));
        assert!(s.contains("Connection: close\r\n"));
        assert!(s.ends_with("\r\n\r\nRequest Timeout\n"));
    }

    fn head(raw: &str) -> RequestHead {
        let mut p = crate::h1::HeadParser::new();
        p.parse(raw.as_bytes(), &crate::Limits::default())
            .unwrap()
            .unwrap()
            .0
    }

    #[test]
    fn health_answers_get_and_head_of_its_path_only() {
        let req = head("GET /healthz?x=1 HTTP/1.1\r\nHost: h\r\n\r\n");
        let (a, out) = health(&req, true).unwrap();
        assert_eq!((a.status, a.keep_alive, a.body_bytes), (200, true, 3));
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(text.contains("Cache-Control: no-store\r\n"));
        assert!(text.ends_with("Content-Length: 3\r\n\r\nOK\n"));

        let req = head("HEAD /healthz HTTP/1.1\r\nHost: h\r\n\r\n");
        let (a, out) = health(&req, true).unwrap();
        assert_eq!(a.body_bytes, 0);
        assert!(out.ends_with(b"Content-Length: 3\r\n\r\n"));

        for other in [
            "POST /healthz HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n",
            "GET /healthz/ HTTP/1.1\r\nHost: h\r\n\r\n",
            "GET /health HTTP/1.1\r\nHost: h\r\n\r\n",
        ] {
            assert!(health_answer(&head(other), b"/healthz", true).is_none());
        }
    }

    /// The health answer to `req`, framed as HTTP/1.1 (no Date, no Server).
    fn health(req: &RequestHead, serving: bool) -> Option<(OwnAnswer, Vec<u8>)> {
        let answer = health_answer(req, b"/healthz", serving)?;
        let mut out = Vec::new();
        let fields = ServerFields {
            date: b"",
            server: b"",
            extra: b"",
        };
        Some((encode_answer(req, &answer, &fields, &mut out), out))
    }

    #[test]
    fn health_says_503_and_closes_while_stopping() {
        let req = head("GET /healthz HTTP/1.1\r\nHost: h\r\n\r\n");
        let (a, out) = health(&req, false).unwrap();
        assert_eq!((a.status, a.keep_alive), (503, false));
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 503 Service Unavailable\r\n"));
        assert!(text.contains("Connection: close\r\n") && text.ends_with("draining\n"));
    }

    #[test]
    fn continue_is_a_complete_interim_head() {
        assert!(CONTINUE_100.starts_with(b"HTTP/1.1 100 "));
        assert!(CONTINUE_100.ends_with(b"\r\n\r\n"));
    }
}
