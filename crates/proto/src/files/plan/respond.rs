//! A static answer's status and the short text answers (301's head, 404, 405, 412, 416), as
//! protocol-neutral [`Answer`]s: each protocol frames them (HTTP/1.1 through the crate's one
//! response encoder, `h1::response::encode_answer`, which adds Date, Server, Content-Length
//! and Connection as for app responses).

use crate::answer::Answer;
use crate::RequestHead;

use super::super::{ETag, Encoding, StackBuf};
use super::StaticPlan;

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
    /// The text body of a short answer: its reason phrase (RFC 9110 §15) and a newline.
    fn text(self) -> &'static [u8] {
        match self {
            Status::NotFound => b"Not Found\n",
            Status::MethodNotAllowed => b"Method Not Allowed\n",
            Status::PreconditionFailed => b"Precondition Failed\n",
            Status::RangeNotSatisfiable => b"Range Not Satisfiable\n",
            Status::Ok
            | Status::MovedPermanently
            | Status::PartialContent
            | Status::NotModified => b"",
        }
    }
}

/// An answer's fields added in the static answers' order.
pub(super) trait StaticFields<'a> {
    fn validators(&mut self, etag: &'a ETag, last_modified: Option<&'a [u8; 29]>);
    fn caching(&mut self, cache_control: Option<&'a StackBuf<48>>, vary: bool);
}

impl<'a> StaticFields<'a> for Answer<'a> {
    fn validators(&mut self, etag: &'a ETag, last_modified: Option<&'a [u8; 29]>) {
        if let Some(date) = last_modified {
            self.push(b"Last-Modified", date);
        }
        self.push(b"ETag", etag.as_bytes());
    }
    fn caching(&mut self, cache_control: Option<&'a StackBuf<48>>, vary: bool) {
        if let Some(cc) = cache_control {
            self.push(b"Cache-Control", cc.as_bytes());
        }
        if vary {
            self.push(b"Vary", b"Accept-Encoding");
        }
    }
}

/// An error-ish answer (404, 405, 412, 416) with its reason phrase as a text body, omitted
/// for HEAD (whose Content-Length still says what GET would get).
pub(super) fn small_response<'a>(
    req: &RequestHead,
    status: Status,
    extra: &[(&'a [u8], &'a [u8])],
) -> StaticPlan<'a> {
    let mut a = Answer::new(status.code());
    a.push(b"Content-Type", b"text/plain; charset=utf-8");
    for &(name, value) in extra {
        a.push(name, value);
    }
    StaticPlan {
        answer: a.with_text(status.text(), req.is_head),
        encoding: Encoding::Identity,
    }
}
