//! The request body of one HTTP/2 stream as its app thread reads it ([`StreamBody`]): DATA
//! frames waited for on the app thread (`io::streams::wait::block_on`), their bytes given back to the client's
//! window as the app reads them, the `100 Continue` sent at the first read, and
//! `--limit-body` held for a body of unknown length.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use h2::RecvStream;
use sluicegate_proto::ProtoError;

use super::{gone, Interim, ReplyState};
use crate::io::streams::reply::StreamIn;
use crate::io::streams::wait::block_on;

fn too_large() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, ProtoError::PayloadTooLarge)
}

/// The request body of one stream.
pub struct StreamBody {
    recv: RecvStream,
    /// Received and not yet given to the app.
    pending: Bytes,
    ended: bool,
    /// `--limit-body` for a body without a `content-length` (one with it was checked against
    /// the limit with the head, and the `h2` crate holds the DATA to it): the DATA frame that
    /// takes the body past it fails the read, none of its bytes reach the app.
    max_body: Option<u64>,
    received: u64,
    /// `Expect: 100-continue`: the response to send the interim 100 on at the first read (as
    /// on HTTP/1.1, only if the app reads the body, and only before its own head).
    continue_to: Option<Arc<Mutex<ReplyState>>>,
}

impl StreamBody {
    /// `continue_to`: the stream's reply ([`StreamReply::interim`]) when the client expects a
    /// `100 Continue`.
    /// `max_body`: the limit to hold a body of unknown length to.
    pub(in crate::io::h2) fn new(
        recv: RecvStream,
        continue_to: Option<Interim>,
        max_body: Option<u64>,
    ) -> StreamBody {
        let ended = recv.is_end_stream();
        StreamBody {
            recv,
            pending: Bytes::new(),
            ended,
            max_body,
            received: 0,
            continue_to: continue_to.map(|i| i.0),
        }
    }

    /// Send the `100 Continue` the client waits for, once, unless the head went already.
    fn send_continue(&mut self) {
        let Some(reply) = self.continue_to.take() else {
            return;
        };
        let mut st = reply.lock().unwrap();
        if st.ended || st.cut || st.send.is_some() {
            return;
        }
        let interim = http::Response::builder()
            .status(100)
            .body(())
            .expect("a fixed response");
        // A failure here (the stream reset meanwhile) shows at the read that follows.
        let _ = st.respond.send_informational(interim);
    }
}

impl StreamIn for StreamBody {
    /// Up to `max` body bytes, waiting up to `timeout` (`--read-timeout`) for a DATA frame;
    /// an empty result is the end of the body. The bytes are given back to the client's send
    /// window here. A wait that times out is `TimedOut` (the bridge makes it the HTTP/1.1
    /// body's failure: the same exception in the app, the same 408); a stream the client
    /// reset, or a connection gone, is `ConnectionReset`; a body past `--limit-body` is
    /// `InvalidData` carrying [`ProtoError::PayloadTooLarge`] (the answer is 413).
    fn read(&mut self, max: usize, timeout: Duration) -> io::Result<Bytes> {
        if self.continue_to.is_some() {
            self.send_continue();
        }
        while self.pending.is_empty() && !self.ended {
            let next = block_on(timeout, None, |cx| self.recv.poll_data(cx))?;
            match next {
                Some(Ok(b)) => {
                    self.received += b.len() as u64;
                    if self.max_body.is_some_and(|m| self.received > m) {
                        self.ended = true;
                        return Err(too_large());
                    }
                    self.pending = b;
                }
                Some(Err(e)) => return Err(gone(e)),
                None => self.ended = true,
            }
        }
        let n = self.pending.len().min(max);
        let out = self.pending.split_to(n);
        if n > 0 {
            let _ = self.recv.flow_control().release_capacity(n);
        }
        Ok(out)
    }
}
