//! Bytes waiting to be written to one connection. Segments are either owned (response heads,
//! small bodies copied together so that a small response is one write and one TCP segment) or
//! borrowed from an object that keeps its memory alive (a large Python `bytes` body, written
//! from its own buffer without a copy). Everything pending leaves in one `writev` per call.

use std::collections::VecDeque;
use std::io::{self, IoSlice};

use std::os::fd::RawFd;

use super::stream::{writev_fd, Stream};

/// Memory owned by someone else (e.g. a Python bytes object) that stays valid and unchanged
/// while the segment is queued. Dropping it releases the owner.
pub trait SharedBytes: Send {
    fn bytes(&self) -> &[u8];
}

enum Segment {
    Owned(Vec<u8>),
    Static(&'static [u8]),
    Shared(Box<dyn SharedBytes>),
}

impl Segment {
    #[inline]
    fn bytes(&self) -> &[u8] {
        match self {
            Segment::Owned(v) => v,
            Segment::Static(s) => s,
            Segment::Shared(b) => b.bytes(),
        }
    }
}

/// Most iovecs passed to one writev (Linux's IOV_MAX is 1024; 64 covers every realistic case
/// and keeps the slice array on the stack).
const MAX_IOV: usize = 64;

/// A FIFO of byte segments with the offset already written in the first one.
#[derive(Default)]
pub struct OutQueue {
    segs: VecDeque<Segment>,
    /// Bytes of the front segment already written.
    front_pos: usize,
    /// Unwritten bytes in the whole queue.
    pending: usize,
}

impl OutQueue {
    pub fn new() -> OutQueue {
        OutQueue::default()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pending == 0
    }

    /// Unwritten bytes.
    #[inline]
    pub fn pending(&self) -> usize {
        self.pending
    }

    pub fn push_owned(&mut self, v: Vec<u8>) {
        if !v.is_empty() {
            self.pending += v.len();
            self.segs.push_back(Segment::Owned(v));
        }
    }

    pub fn push_static(&mut self, s: &'static [u8]) {
        if !s.is_empty() {
            self.pending += s.len();
            self.segs.push_back(Segment::Static(s));
        }
    }

    pub fn push_shared(&mut self, b: Box<dyn SharedBytes>) {
        let n = b.bytes().len();
        if n > 0 {
            self.pending += n;
            self.segs.push_back(Segment::Shared(b));
        }
    }

    /// One writev of everything pending (up to MAX_IOV segments). Returns bytes written;
    /// `WouldBlock` when the socket is full.
    pub fn write_to(&mut self, stream: &Stream) -> io::Result<usize> {
        self.write_fd(stream.fd())
    }

    /// As `write_to`, on a raw socket descriptor (used by the thread that runs the app, which
    /// borrows the connection's socket for the request).
    pub fn write_fd(&mut self, fd: RawFd) -> io::Result<usize> {
        if self.pending == 0 {
            return Ok(0);
        }
        let n = {
            let mut iov: [IoSlice<'_>; MAX_IOV] = [IoSlice::new(&[]); MAX_IOV];
            let mut count = 0;
            for (i, seg) in self.segs.iter().enumerate().take(MAX_IOV) {
                let b = seg.bytes();
                iov[i] = IoSlice::new(if i == 0 { &b[self.front_pos..] } else { b });
                count += 1;
            }
            writev_fd(fd, &iov[..count])?
        };
        self.advance(n);
        Ok(n)
    }

    /// Forget `n` written bytes, dropping (and so releasing) fully written segments.
    fn advance(&mut self, mut n: usize) {
        self.pending -= n;
        while n > 0 {
            let front_len = self.segs.front().map(|s| s.bytes().len()).unwrap_or(0);
            let left = front_len - self.front_pos;
            if n >= left {
                n -= left;
                self.segs.pop_front();
                self.front_pos = 0;
            } else {
                self.front_pos += n;
                n = 0;
            }
        }
    }

    /// Drop everything (client gone).
    pub fn clear(&mut self) {
        self.segs.clear();
        self.front_pos = 0;
        self.pending = 0;
    }
}
