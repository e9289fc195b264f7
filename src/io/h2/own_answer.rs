//! The answers the server gives without the app (`--static` files, `--health-path`), over
//! HTTP/2: the loop's own protocol-neutral answer (`LoopView::own_answer`: proto's `Answer`,
//! its Date, and a file body's bytes) made into a HEADERS frame directly ([`frame`]: status,
//! the fields, Date, Server, Content-Length) and DATA frames sent by a task of the loop
//! ([`send`]). No app thread, no Python: as on HTTP/1.1, a busy app never slows them down.
//! Files are read in `TLS_FILE_READ` blocks (the output queue's own reader), at most what the
//! stream's window allows at a time.

use std::future::poll_fn;
use std::io::IoSlice;

use bytes::Bytes;
use h2::server::SendResponse;
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

/// Send the framed answer on the stream. Returns the body bytes sent.
pub(super) async fn send(mut respond: SendResponse<Bytes>, framed: Framed) -> u64 {
    let Framed {
        response,
        body: mut out,
        ..
    } = framed;
    let Some(response) = response else {
        respond.send_reset(h2::Reason::INTERNAL_ERROR);
        return 0;
    };
    let no_body = out.is_empty();
    let Ok(mut send) = respond.send_response(response, no_body) else {
        return 0;
    };
    if no_body {
        return 0;
    }
    let mut body = Vec::new();
    let mut sent = 0u64;
    loop {
        if body.is_empty() && pull(&mut out, &mut body) == 0 {
            let _ = send.send_data(Bytes::new(), true);
            return sent;
        }
        send.reserve_capacity(body.len());
        let n = match poll_fn(|cx| send.poll_capacity(cx)).await {
            Some(Ok(n)) if n > 0 => n.min(body.len()),
            Some(Ok(_)) => continue,
            _ => return sent,
        };
        let rest = body.split_off(n);
        let piece = std::mem::replace(&mut body, rest);
        sent += piece.len() as u64;
        let last = body.is_empty() && out.is_empty();
        if send.send_data(Bytes::from(piece), last).is_err() || last {
            return sent;
        }
    }
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
