//! The answers the server gives without the app (`--static` files, `--health-path`), over
//! HTTP/3: the loop's own decision and bytes (`LoopView::own_answer`: an HTTP/1.1 head and the
//! body, a file range for a static file, in an output queue), turned into HEADERS and DATA
//! frames by the request stream's task on the loop, as `io::h2::own_answer` does for HTTP/2
//! (whose reading of the queue and of the head this uses). No app thread, no Python. Each piece
//! waits for quinn to take it (its send window), so a large file is read as it is sent.

use bytes::Bytes;
use h3::error::Code;

use super::stream::SendHalf;
use crate::io::h2::own_answer::{parse_head, pull};
use crate::io::out_queue::OutQueue;

/// Send the answer in `out` on the stream. Returns the body bytes sent.
pub(super) async fn send(mut send: SendHalf, mut out: OutQueue, is_head: bool) -> u64 {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        if pull(&mut out, &mut buf) == 0 {
            send.stop_stream(Code::H3_INTERNAL_ERROR);
            return 0;
        }
    };
    let Some(response) = parse_head(&buf[..head_end]).and_then(|b| b.body(()).ok()) else {
        send.stop_stream(Code::H3_INTERNAL_ERROR);
        return 0;
    };
    let mut body = buf.split_off(head_end + 4);
    if send.send_response(response).await.is_err() {
        return 0;
    }
    let mut sent = 0u64;
    if !is_head {
        loop {
            if body.is_empty() && pull(&mut out, &mut body) == 0 {
                break;
            }
            let piece = std::mem::take(&mut body);
            sent += piece.len() as u64;
            if send.send_data(Bytes::from(piece)).await.is_err() {
                return sent;
            }
        }
    }
    let _ = send.finish().await;
    sent
}
