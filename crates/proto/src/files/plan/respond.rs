//! The head of a static answer: its status line and the few headers it carries, collected on the
//! stack and encoded through the crate's one response encoder (`h1::encode`, which adds Date,
//! Server, Content-Length and Connection as for app responses), and the short text answers
//! (404, 405, 412, 416).

use crate::h1::encode::{encode_response_head, ResponseFraming, ResponseHead};
use crate::h1::response::own_answer_keeps_alive;
use crate::{BodyFraming, RequestHead};

use super::super::{ETag, Encoding, StackBuf};
use super::{ServerFields, StaticPlan};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Status {
    Ok,
    MovedPermanently,
    PartialContent,
    NotModified,
    NotFound,
    MethodNotAllowed,
    PreconditionFailed,
    RangeNotSatisfiable,
}

impl Status {
    pub(super) fn code(self) -> u16 {
        match self {
            Status::Ok => 200,
            Status::MovedPermanently => 301,
            Status::PartialContent => 206,
            Status::NotModified => 304,
            Status::NotFound => 404,
            Status::MethodNotAllowed => 405,
            Status::PreconditionFailed => 412,
            Status::RangeNotSatisfiable => 416,
        }
    }
    /// The status line after "HTTP/1.1 " (RFC 9110 §15 reason phrases).
    fn line(self) -> &'static [u8] {
        match self {
            Status::Ok => b"200 OK",
            Status::MovedPermanently => b"301 Moved Permanently",
            Status::PartialContent => b"206 Partial Content",
            Status::NotModified => b"304 Not Modified",
            Status::NotFound => b"404 Not Found",
            Status::MethodNotAllowed => b"405 Method Not Allowed",
            Status::PreconditionFailed => b"412 Precondition Failed",
            Status::RangeNotSatisfiable => b"416 Range Not Satisfiable",
        }
    }
}

/// The most headers a static response carries before the encoder's own (200/206: eight).
const MAX_HEADERS: usize = 10;

/// Response headers collected on the stack.
#[derive(Default)]
pub(super) struct Headers<'a> {
    list: [(&'a [u8], &'a [u8]); MAX_HEADERS],
    len: usize,
}

impl<'a> Headers<'a> {
    pub(super) fn push(&mut self, name: &'a [u8], value: &'a [u8]) {
        self.list[self.len] = (name, value);
        self.len += 1;
    }
    pub(super) fn validators(&mut self, etag: &'a ETag, last_modified: Option<&'a [u8; 29]>) {
        if let Some(date) = last_modified {
            self.push(b"Last-Modified", date);
        }
        self.push(b"ETag", etag.as_bytes());
    }
    pub(super) fn caching(&mut self, cache_control: Option<&'a StackBuf<48>>, vary: bool) {
        if let Some(cc) = cache_control {
            self.push(b"Cache-Control", cc.as_bytes());
        }
        if vary {
            self.push(b"Vary", b"Accept-Encoding");
        }
    }
    fn as_slice(&self) -> &[(&'a [u8], &'a [u8])] {
        &self.list[..self.len]
    }
}

/// Encode the head through the crate's encoder; returns keep-alive.
pub(super) fn encode(
    req: &RequestHead,
    status: Status,
    headers: &Headers<'_>,
    framing: ResponseFraming,
    server: &ServerFields<'_>,
    out: &mut Vec<u8>,
) -> bool {
    let keep_alive = own_answer_keeps_alive(req.keep_alive, req.body != BodyFraming::None);
    encode_response_head(
        out,
        &ResponseHead {
            version: req.version,
            status: status.line(),
            headers: headers.as_slice(),
            framing,
            keep_alive,
            date: server.date,
            server: server.server,
        },
    );
    keep_alive
}

/// An error-ish response (404, 405, 412, 416) with its reason phrase as a text body, omitted
/// for HEAD (whose Content-Length still says what GET would get).
pub(super) fn small_response(
    req: &RequestHead,
    status: Status,
    extra: &[(&[u8], &[u8])],
    server: &ServerFields<'_>,
    out: &mut Vec<u8>,
) -> StaticPlan {
    let reason = &status.line()[4..];
    let mut h = Headers::default();
    h.push(b"Content-Type", b"text/plain; charset=utf-8");
    for &(name, value) in extra {
        h.push(name, value);
    }
    let body_len = reason.len() as u64 + 1;
    let keep_alive = encode(
        req,
        status,
        &h,
        ResponseFraming::Length(body_len),
        server,
        out,
    );
    if !req.is_head {
        out.extend_from_slice(reason);
        out.push(b'\n');
    }
    StaticPlan {
        status: status.code(),
        encoding: Encoding::Identity,
        body: None,
        keep_alive,
        text_body: if req.is_head { 0 } else { body_len },
    }
}
