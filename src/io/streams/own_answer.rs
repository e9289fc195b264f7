//! The answers the server gives without the app (`--static` files, `--health-path`), made
//! ready for a stream of either protocol: the loop's protocol-neutral answer
//! (`LoopView::own_answer`: proto's `Answer`, its Date, a file body) becomes an `http`
//! response and a queued body ([`frame`]), which HTTP/2 (`io::h2::own_answer`) and HTTP/3
//! (`io::h3::own_answer`) send as HEADERS and DATA, the body taken piece by piece ([`pull`]).

use std::io::IoSlice;

use sluicegate_proto::answer::AnswerBody;
use sluicegate_proto::h1::encode::{decimal, DECIMAL_LEN};

use crate::io::out_queue::OutQueue;
use crate::io::static_files::Own;

/// An own answer made ready for its stream: the HEADERS frame's response, and the body
/// (empty: the HEADERS frame ends the stream).
pub(crate) struct Framed {
    pub status: u16,
    pub(crate) response: Option<http::Response<()>>,
    pub(crate) body: OutQueue,
}

/// Make HEADERS of `own` (its status and fields, then Date, Server and Content-Length as
/// every answer of the server's carries them) and queue its body (a text, or the file range).
/// `server`: the Server header's value (empty: none).
pub(crate) fn frame(own: Own<'_>, server: &[u8]) -> Framed {
    let a = own.answer;
    let mut builder = http::Response::builder().status(a.status);
    for &(name, value) in a.fields() {
        builder = builder.header(name, value);
    }
    builder = builder.header(http::header::DATE, &own.date[..]);
    if !server.is_empty() {
        builder = builder.header(http::header::SERVER, server);
    }
    if let Some(expires) = &own.expires {
        builder = builder.header(http::header::EXPIRES, &expires[..]);
    }
    if let Some(n) = a.length {
        let mut digits = [0; DECIMAL_LEN];
        builder = builder.header(http::header::CONTENT_LENGTH, decimal(n, &mut digits));
    }
    let status = a.status;
    let text = match a.body {
        AnswerBody::Text(t) => Some(t),
        _ => None,
    };
    let response = builder.body(()).ok();
    let mut body = OutQueue::new();
    if let Some(t) = text {
        body.push_owned(t.to_vec());
    } else {
        own.queue_file(&mut body, false);
    }
    Framed {
        status,
        response,
        body,
    }
}

/// Take the next bytes from the front of `out` (memory, or a file range read in a block).
pub(crate) fn pull(out: &mut OutQueue, into: &mut Vec<u8>) -> usize {
    out.encrypt_with(-1, &mut |slices: &[IoSlice<'_>]| {
        slices
            .iter()
            .map(|s| {
                into.extend_from_slice(s);
                s.len()
            })
            .sum()
    })
    .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluicegate_proto::answer::Answer;

    #[test]
    fn an_answer_becomes_status_and_fields_with_date_server_and_length() {
        let mut answer = Answer::new(206);
        answer.push(b"Content-Type", b"text/plain");
        answer.push(b"Content-Range", b"bytes 0-99/1000");
        answer.length = Some(100);
        answer.closes = true;
        let own = Own {
            answer: &answer,
            date: b"Tue, 14 Nov 2023 22:15:00 GMT",
            file: None,
            expires: None,
        };
        let framed = frame(own, b"sluicegate");
        let r = framed.response.unwrap();
        assert_eq!(r.status(), 206);
        assert_eq!(r.headers()["content-type"], "text/plain");
        assert_eq!(r.headers()["content-range"], "bytes 0-99/1000");
        assert_eq!(r.headers()["content-length"], "100");
        assert_eq!(r.headers()["date"], "Tue, 14 Nov 2023 22:15:00 GMT");
        assert_eq!(r.headers()["server"], "sluicegate");
        assert!(r.headers().get("connection").is_none());
        assert!(framed.body.is_empty());
    }

    #[test]
    fn a_text_body_is_queued_and_a_304_states_no_length() {
        let text = Answer::new(404).with_text(b"Not Found\n", false);
        let framed = frame(own(&text), b"");
        assert!(!framed.body.is_empty());
        let r = framed.response.unwrap();
        assert!(r.headers().get("server").is_none());
        let mut not_modified = Answer::new(304);
        not_modified.length = None;
        let r = frame(own(&not_modified), b"").response.unwrap();
        assert!(r.headers().get("content-length").is_none());
    }

    fn own<'a>(answer: &'a Answer<'static>) -> Own<'a> {
        Own {
            answer,
            date: b"Tue, 14 Nov 2023 22:15:00 GMT",
            file: None,
            expires: None,
        }
    }
}
