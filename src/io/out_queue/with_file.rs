//! A small file body sent straight from the app's descriptor while its call runs: the queued
//! head (with MSG_MORE, so that it shares a TCP segment with the file's first bytes) and then
//! one `sendfile` from the descriptor the app still has open. The queue then needs no file
//! segment, and so no descriptor of its own (a `dup` and a `close` per answer less); what the
//! socket does not take now is queued by the caller with a descriptor of our own
//! (`RegularFile::range_from`), as any file body is.

use std::io;
use std::os::fd::RawFd;

use super::OutQueue;
use crate::io::stream::{sendfile_raw, writev_fd_flags};

impl OutQueue {
    /// Write everything queued (memory only: a response head) with MSG_MORE, then, if all of
    /// it left, up to `len` bytes of `file_fd` from `offset` with one `sendfile`. Returns the
    /// file's bytes sent (0 when the socket is full: the head, or what is left of it, stays
    /// queued). `file_fd` must stay open for the call; nothing keeps it after.
    pub fn write_with_file(
        &mut self,
        fd: RawFd,
        file_fd: RawFd,
        offset: u64,
        len: u64,
    ) -> io::Result<u64> {
        debug_assert!(!self.has_file(), "a queue with a file range of its own");
        self.close_chunk();
        while !self.is_empty() {
            let mut iov = [io::IoSlice::new(&[]); super::MAX_IOV];
            let (count, _) = self.fill_iov(&mut iov);
            match writev_fd_flags(fd, &iov[..count], libc::MSG_MORE) {
                Ok(n) => self.advance(n as u64),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(0),
                Err(e) => return Err(e),
            }
        }
        let want = len.min(super::WRITE_CHUNK) as usize;
        match sendfile_raw(fd, file_fd, offset, want) {
            Ok(n) => Ok(n as u64),
            // A full socket, or a file shorter than announced: the caller queues the rest,
            // whose next write meets the same (and ends the connection short, if it is so).
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
            Err(e) => Err(e),
        }
    }
}
