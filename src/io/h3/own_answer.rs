//! The answers the server gives without the app (`--static` files, `--health-path`), over
//! HTTP/3: the loop's own protocol-neutral answer (`LoopView::own_answer`: proto's `Answer`),
//! framed as for HTTP/2 (`io::streams::own_answer::frame`: an `http` response and the body queued,
//! a text or a file range) and sent as HEADERS and DATA by a task of its own on the
//! loop. No app thread, no Python. Each piece waits for quinn to take it (its send window), so
//! a large file is read as it is sent.

use bytes::Bytes;
use h3::error::Code;

use super::stream::SendHalf;
use crate::io::streams::own_answer::{pull, Framed};

/// Send the framed answer on the stream. Returns the body bytes sent.
pub(super) async fn send(mut send: SendHalf, framed: Framed, is_head: bool) -> u64 {
    let Framed {
        response, mut body, ..
    } = framed;
    let Some(response) = response else {
        send.stop_stream(Code::H3_INTERNAL_ERROR);
        return 0;
    };
    if send.send_response(response).await.is_err() {
        return 0;
    }
    let mut sent = 0u64;
    if !is_head {
        let mut piece = Vec::new();
        while pull(&mut body, &mut piece) > 0 {
            sent += piece.len() as u64;
            if send
                .send_data(Bytes::from(std::mem::take(&mut piece)))
                .await
                .is_err()
            {
                return sent;
            }
        }
    }
    let _ = send.finish().await;
    sent
}
