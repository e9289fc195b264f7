//! The request head parser's tests: the helpers that feed each input whole, byte by byte and
//! pipelined (and check all three read alike), and the incremental scan; what is read, what is
//! refused and the httparse comparison are submodules.

use super::*;
use crate::token::trim_ows;
use crate::ProtoError::*;
use crate::{BodyFraming, Version};

/// A second, pipelined request: appended to every input, it must not change the result.
const NEXT: &[u8] = b"GET /next HTTP/1.1\r\nHost: n\r\n\r\n";

/// Everything observable about a parsed head, comparable across the three feeding modes.
#[derive(Debug, PartialEq)]
struct Seen {
    n: usize,
    method: Vec<u8>,
    target: Vec<u8>,
    path: Vec<u8>,
    query: Vec<u8>,
    host: Option<Vec<u8>>,
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    version: Version,
    body: BodyFraming,
    keep_alive: bool,
    expect_continue: bool,
    is_head: bool,
    buf: Vec<u8>,
}

type Outcome = Result<Option<Seen>, ProtoError>;

fn seen(r: Result<Option<(RequestHead, usize)>, ProtoError>) -> Outcome {
    r.map(|o| {
        o.map(|(h, n)| Seen {
            n,
            method: h.method().to_vec(),
            target: h.target().to_vec(),
            path: h.path().to_vec(),
            query: h.query().to_vec(),
            host: h.host().map(|v| v.to_vec()),
            headers: h.headers().map(|(n, v)| (n.to_vec(), v.to_vec())).collect(),
            version: h.version,
            body: h.body,
            keep_alive: h.keep_alive,
            expect_continue: h.expect_continue,
            is_head: h.is_head,
            buf: h.buf.clone(),
        })
    })
}

/// Parse `input` whole, one byte at a time (growing buffer, one parser; for short inputs
/// also a fresh parser per prefix) and with a pipelined request after it; all must agree.
fn parse3(input: &[u8], limits: &Limits) -> Outcome {
    let whole = seen(HeadParser::new().parse(input, limits));

    let mut parser = HeadParser::new();
    let mut trickled = Ok(None);
    for i in 0..=input.len() {
        trickled = seen(parser.parse(&input[..i], limits));
        if input.len() <= 400 {
            let fresh = seen(HeadParser::new().parse(&input[..i], limits));
            assert_eq!(trickled, fresh, "incremental vs fresh parser at {i}");
        }
        match &trickled {
            Ok(None) => {}
            Ok(Some(s)) => {
                assert_eq!(s.n, i, "head found only once complete");
                break;
            }
            Err(_) => break,
        }
    }
    assert_eq!(trickled, whole, "byte by byte vs whole: {:?}", show(input));

    if !matches!(whole, Ok(None)) {
        let mut piped = input.to_vec();
        piped.extend_from_slice(NEXT);
        let with_next = seen(HeadParser::new().parse(&piped, limits));
        assert_eq!(with_next, whole, "with trailing bytes: {:?}", show(input));
    }
    whole
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A valid head, checked three ways; it must use all of `input`.
fn ok(input: impl AsRef<[u8]>) -> Seen {
    ok_with(input, &Limits::default())
}
fn ok_with(input: impl AsRef<[u8]>, limits: &Limits) -> Seen {
    let input = input.as_ref();
    match parse3(input, limits) {
        Ok(Some(s)) => {
            assert_eq!(s.n, input.len());
            s
        }
        other => panic!("expected a head for {:?}, got {other:?}", show(input)),
    }
}

/// A refused head, checked three ways: the error.
fn err(input: impl AsRef<[u8]>) -> ProtoError {
    err_with(input, &Limits::default())
}
fn err_with(input: impl AsRef<[u8]>, limits: &Limits) -> ProtoError {
    let input = input.as_ref();
    match parse3(input, limits) {
        Err(e) => e,
        other => panic!("expected an error for {:?}, got {other:?}", show(input)),
    }
}
/// Status of a refused head.
fn status(input: impl AsRef<[u8]>) -> u16 {
    err(input).status()
}

/// A GET with the given extra header lines (each "Name: value").
fn get(fields: &str) -> String {
    format!("GET / HTTP/1.1\r\nHost: h\r\n{fields}\r\n")
}
fn field(fields: &str) -> String {
    fields.split('|').map(|f| format!("{f}\r\n")).collect()
}
fn body_of(fields: &str) -> BodyFraming {
    ok(get(&field(fields))).body
}
fn status_of(fields: &str) -> u16 {
    status(get(&field(fields)))
}

fn small() -> Limits {
    Limits {
        max_request_line: 32,
        max_header_bytes: 96,
        max_headers: 3,
        max_body: 1000,
        ..Limits::default()
    }
}

// ---- valid requests ----

#[test]
fn trickled_bytes_are_scanned_once() {
    let input = get(&field("X: 1|Y: 2"));
    let input = input.as_bytes();
    let mut p = HeadParser::new();
    for i in 0..input.len() {
        assert!(p.parse(&input[..i], &Limits::default()).unwrap().is_none());
        assert!(p.scanned <= i, "never past the buffer");
        assert!(
            p.scanned + 1 >= i,
            "scanned up to the end (bar a held-back CR)"
        );
    }
    assert!(p.parse(input, &Limits::default()).unwrap().is_some());
    assert_eq!(
        (p.scanned, p.start, p.line_lf),
        (0, None, None),
        "reset after a head"
    );
}

#[test]
fn replaced_buffer_without_reset_starts_over() {
    let mut p = HeadParser::new();
    let l = Limits::default();
    assert!(p
        .parse(b"POST /long/path HTTP/1.1\r\nHost: h\r\n", &l)
        .unwrap()
        .is_none());
    let (head, n) = p.parse(b"GET / HTTP/1.0\r\n\r\n", &l).unwrap().unwrap();
    assert_eq!((head.method(), n), (&b"GET"[..], 18));
    // reset() after a partial parse, then a different buffer.
    assert!(p.parse(b"GET / HTTP/1.1\r\nHost:", &l).unwrap().is_none());
    p.reset();
    assert!(p
        .parse(b"\r\n\r\nGET / HTTP/1.0\r\n\r\n", &l)
        .unwrap()
        .is_some());
}

#[test]
fn parser_is_reusable_for_pipelined_requests() {
    let l = Limits::default();
    let mut buf = b"GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n".to_vec();
    let mut p = HeadParser::new();
    let (h1, n) = p.parse(&buf, &l).unwrap().unwrap();
    assert_eq!(h1.path(), b"/1");
    buf.drain(..n);
    let (h2, n) = p.parse(&buf, &l).unwrap().unwrap();
    assert_eq!((h2.path(), n), (&b"/2"[..], buf.len()));
}

mod accepted;
mod httparse_oracle;
mod refused;
