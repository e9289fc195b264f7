//! A body known whole before any of it is sent: a list, a tuple or bare `bytes`
//! ([`Sender::send_all`]), or a regular file (`wsgi.file_wrapper`, [`Sender::send_file`]). Its
//! head carries the length, and head and body leave in one queue that nothing waits on. An
//! `impl Sender` block apart from the streamed body's way out (`mod.rs`).

use pyo3::prelude::*;
use sluicegate_proto::h1::encode::ResponseFraming;

use super::Sender;
use super::{Transport, DETACH_WRITE_MIN};
use crate::io::file_body::RegularFile;
use crate::io::out_queue::{OutQueue, CORK_MIN};
use crate::wsgi::body_block::{as_block, framed_chunk, Block, SendError, COPY_MAX};

/// The blocks a file body is read in when it cannot be sent with `sendfile(2)` from a
/// descriptor of our own (`Sender::send_file_read`).
const FILE_READ_BLOCK: usize = 256 * 1024;

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

    /// Send a regular file from `pos` to its end with sendfile(2) (wsgi.file_wrapper). The
    /// file's length is the body's unless the app set a Content-Length.
    pub fn send_file(
        &mut self,
        py: Python<'_>,
        file: &RegularFile,
        pos: u64,
    ) -> Result<(), SendError> {
        if !self.app.started {
            return Err(SendError::NotStarted);
        }
        let (offset, len) = file.span_from(pos);
        let mut q = self.out.spare();
        self.queue_head(&mut q, Some(len), 0)?;
        let take = match self.framing {
            ResponseFraming::NoBody => 0,
            ResponseFraming::Length(n) => len.min(n.saturating_sub(self.body_bytes)),
            _ => len,
        };
        // A small body leaves now, from the app's descriptor: no descriptor of our own unless
        // the socket leaves some of it (`OutQueue::write_with_file`).
        let sent = match self.direct_file_fd(take) {
            Some(fd) => match q.write_with_file(fd, file.fd(), offset, take) {
                Ok(n) => n,
                Err(_) => return self.gone(),
            },
            None => 0,
        };
        self.body_bytes += take;
        let (offset, take) = (offset + sent, take - sent);
        if take > 0 {
            let Some((own, _, _)) = file.range_from(offset) else {
                // No descriptor to be had (EMFILE): the rest is read now, while the app's
                // descriptor is open, and streamed.
                self.body_bytes -= take;
                self.out.append(&mut q);
                return self.send_file_read(py, file, offset, take);
            };
            if self.framing == ResponseFraming::Chunked {
                framed_chunk(&mut q, take, |q| q.push_file(own, offset, take));
            } else {
                q.push_file(own, offset, take);
            }
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

    /// The rest of a file body, `take` bytes from `offset`, when no descriptor of our own can
    /// be had for it (`RegularFile::range_from` met EMFILE/ENFILE): read from the app's
    /// descriptor with `pread` in blocks of [`FILE_READ_BLOCK`] and sent as streamed blocks are
    /// (`send_parsed`), whose backpressure bounds the memory. The GIL is held across each read,
    /// so no other thread of the app can close its file object while it is read.
    fn send_file_read(
        &mut self,
        py: Python<'_>,
        file: &RegularFile,
        offset: u64,
        take: u64,
    ) -> Result<(), SendError> {
        let mut at = 0u64;
        while at < take {
            let n = (take - at).min(FILE_READ_BLOCK as u64) as usize;
            let Ok(buf) = file.read_at(offset + at, n) else {
                // The file went short or unreadable: the response cannot look complete.
                self.abort();
                return Err(SendError::Finished);
            };
            at += n as u64;
            self.send_parsed(py, Block::Other(buf))?;
        }
        // What is left to write (and the last chunk, if chunked) is `finish`'s, as for a
        // streamed body.
        Ok(())
    }

    /// The socket, if a file body of `take` bytes may be written from the app's descriptor
    /// now: plaintext, nothing queued before it, written by this thread (not the loop, not a
    /// shared queue: `flush_pending` writes an answer under `DETACH_WRITE_MIN` in the call), a
    /// length-framed body on a connection that stays open (a closing one's writes carry
    /// MSG_MORE for its FIN, which `push_final` arranges).
    fn direct_file_fd(&self, take: u64) -> Option<std::os::fd::RawFd> {
        let Transport::Plain(fd) = self.transport else {
            return None;
        };
        let small = take > 0 && take < DETACH_WRITE_MIN;
        let framed = matches!(self.framing, ResponseFraming::Length(_));
        (small && framed && self.out.is_empty() && self.shared().is_none() && self.keeps_alive())
            .then_some(fd)
    }
}
