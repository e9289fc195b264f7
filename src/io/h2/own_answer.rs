//! The answers the server gives without the app (`--static` files, `--health-path`), over
//! HTTP/2: the loop's own protocol-neutral answer (`LoopView::own_answer`: proto's `Answer`,
//! its Date, and a file body's bytes) framed as for HTTP/3 (`io::streams::own_answer::frame`:
//! status, the fields, Date, Server, Content-Length) and sent as HEADERS and DATA frames by a
//! task of the loop ([`send`]). No app thread, no Python: as on HTTP/1.1, a busy app never slows them down.
//! Files are read in `TLS_FILE_READ` blocks (the output queue's own reader), at most what the
//! stream's window allows at a time.

use std::future::poll_fn;

use bytes::Bytes;
use h2::server::SendResponse;

use crate::io::streams::own_answer::{pull, Framed};

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
