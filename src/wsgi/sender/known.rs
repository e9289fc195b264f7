//! A body known whole before any of it is sent: a list, a tuple or bare `bytes`
//! ([`Sender::send_all`]), or a regular file (`wsgi.file_wrapper`, [`Sender::send_file`]). Its
//! head carries the length, and head and body leave in one queue that nothing waits on. An
//! `impl Sender` block apart from the streamed body's way out (`mod.rs`).

use pyo3::prelude::*;
use sluicegate_proto::h1::encode::ResponseFraming;

use super::Sender;
use crate::io::out_queue::{OutQueue, CORK_MIN};
use crate::wsgi::body_block::{as_block, framed_chunk, Block, SendError, COPY_MAX};

impl Sender {
    /// Send a whole body known up front (list/tuple/bare bytes): head, then every block, in one
    /// writev. Nothing waits: what the socket does not take now is left for the event loop.
    pub fn send_all(
        &mut self,
        py: Python<'_>,
        blocks: &[Bound<'_, PyAny>],
    ) -> Result<(), SendError> {
        if !self.app.started {
            return Err(SendError::NotStarted);
        }
        if let [one] = blocks {
            // The usual `[body]`: no vector of parsed blocks.
            let blk = as_block(one)?;
            let n = blk.as_slice().len();
            return self.send_known(py, n as u64, if n <= COPY_MAX { n } else { 0 }, [blk]);
        }
        let mut parsed = Vec::with_capacity(blocks.len());
        let (mut total, mut small) = (0u64, 0usize);
        for b in blocks {
            let blk = as_block(b)?;
            let n = blk.as_slice().len();
            total += n as u64;
            if n <= COPY_MAX {
                small += n;
            }
            parsed.push(blk);
        }
        self.send_known(py, total, small, parsed)
    }

    /// `send_all`'s queueing: the head for a body of `total` bytes with room for the `small`
    /// ones copied next to it, then the blocks, in one queue that leaves at once.
    fn send_known<'b>(
        &mut self,
        py: Python<'_>,
        total: u64,
        small: usize,
        blocks: impl IntoIterator<Item = Block<'b>>,
    ) -> Result<(), SendError> {
        // No TCP_CORK here, unlike a large file: the body's 1 MiB writes already fill whole
        // segments, and corking a 64 MiB `[bytes]` cost more server CPU (18.9–19.4 ms against
        // 16.8–17.4 ms per response, interleaved, 5 rounds).
        let mut q = self.out.spare();
        self.queue_head(&mut q, Some(total), small)?;
        for blk in blocks {
            self.queue_body(&mut q, blk);
        }
        self.blocks += 1;
        self.push_final(py, q)
    }

    /// Send `len` bytes of a regular file from `offset` with sendfile(2) (wsgi.file_wrapper).
    /// The file's length is the body's unless the app set a Content-Length.
    pub fn send_file(
        &mut self,
        py: Python<'_>,
        file: std::fs::File,
        offset: u64,
        len: u64,
    ) -> Result<(), SendError> {
        if !self.app.started {
            return Err(SendError::NotStarted);
        }
        let mut q = self.out.spare();
        self.queue_head(&mut q, Some(len), 0)?;
        let take = match self.framing {
            ResponseFraming::NoBody => 0,
            ResponseFraming::Length(n) => len.min(n.saturating_sub(self.body_bytes)),
            _ => len,
        };
        if take > 0 {
            if self.framing == ResponseFraming::Chunked {
                framed_chunk(&mut q, take, |q| q.push_file(file, offset, take));
            } else {
                q.push_file(file, offset, take);
            }
            self.body_bytes += take;
            if take >= CORK_MIN {
                // Head and file leave corked, in full segments (the head waits for the file's
                // first bytes anyway: it carries MSG_MORE).
                let mut corked = OutQueue::new();
                corked.push_cork(true);
                corked.append(&mut q);
                corked.push_cork(false);
                q = corked;
            }
        }
        self.blocks += 1;
        self.push_final(py, q)
    }
}
