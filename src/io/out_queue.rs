//! Bytes waiting to be written to one connection. Segments are owned (response heads, small
//! bodies copied together so that a small response is one write and one TCP segment), borrowed
//! from an object that keeps its memory alive (a large Python `bytes` body, written from its own
//! buffer without a copy), or a range of a file (sent with `sendfile(2)`, never read into
//! memory; the descriptor is the queue's own, or one the static file cache keeps open). Memory
//! segments pending together leave in one `writev`; when a file range follows, that writev
//! carries MSG_MORE so the head and the file's first bytes share a TCP segment.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{self, IoSlice};

use std::fs::File;
use std::os::fd::RawFd;
use std::sync::Arc;

use super::stream::{sendfile_fd, set_cork, writev_fd_flags, Stream};
pub use lent::{set_lent_release, Lent};
use segments::Segments;
use sluicegate_proto::h1::encode::{write_fixed_chunk_size, CHUNK_END, OPEN_CHUNK_HEADER};

/// Most bytes one write or sendfile call may carry. On loopback a single huge sendmsg keeps
/// copying as fast as the reader drains, for milliseconds (measured: 64 MiB in three calls), and
/// on the event loop's thread that is time every other connection waits; 1 MiB per call costs
/// 64 syscalls per 64 MiB, which is nothing next to the copying.
pub const WRITE_CHUNK: u64 = 1 << 20;

/// Bytes the event loop writes to one connection (a finished answer or a streaming response)
/// before it turns to the other ready connections and to new events, then comes back: one large
/// download cannot starve the others (about 1 ms of copying here).
pub const FAIR_SHARE: u64 = 4 * WRITE_CHUNK;

/// One sendfile(2) of up to `len` bytes (at most `WRITE_CHUNK`) of `file` at `offset`.
fn sendfile(fd: RawFd, file: &File, offset: u64, len: u64) -> io::Result<usize> {
    sendfile_fd(fd, file, offset, len.min(WRITE_CHUNK) as usize)
}

/// Written buffers kept per thread for the next response head: most of them are a head
/// (with a small body) of about the same size, allocated and freed per response otherwise.
const SPARE_BUFFERS_MAX: usize = 4;
/// Sizes of buffer worth keeping: heads with small bodies, not a large owned body.
/// (Heads are made with room for 512 bytes at least; a streamed small block's framing is less,
/// and is not worth a look at the thread's spares per block.)
const SPARE_BUFFER_CAPACITY: std::ops::RangeInclusive<usize> = 512..=16 * 1024;

/// Emptied queues' segment storage kept per thread (`OutQueue::release`), and the largest kept.
const SPARE_QUEUES_MAX: usize = 4;
const SPARE_QUEUE_CAPACITY_MAX: usize = 16;

/// A file range sent over TLS is read this much at a time (`encrypt_with`): as much as the
/// session takes at once (its `SEND_LIMIT`), so a read is rarely wasted.
pub const TLS_FILE_READ: usize = 64 * 1024;

thread_local! {
    static TLS_FILE_BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static SPARE_BUFFERS: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
    static SPARE_QUEUES: RefCell<Vec<VecDeque<Segment>>> = const { RefCell::new(Vec::new()) };
}

/// An empty buffer with room for `capacity` bytes: one this thread wrote before, or a new one.
pub fn spare_buffer(capacity: usize) -> Vec<u8> {
    SPARE_BUFFERS
        .with_borrow_mut(|spare| match spare.last() {
            Some(b) if b.capacity() >= capacity => spare.pop(),
            _ => None,
        })
        .unwrap_or_else(|| Vec::with_capacity(capacity))
}

/// Keep a written buffer for `spare_buffer`, if it is of a size worth keeping and there is room.
fn keep_spare(mut v: Vec<u8>) {
    if !SPARE_BUFFER_CAPACITY.contains(&v.capacity()) {
        return;
    }
    SPARE_BUFFERS.with_borrow_mut(|spare| {
        if spare.len() < SPARE_BUFFERS_MAX {
            v.clear();
            spare.push(v);
        }
    });
}

/// Memory owned by someone else (e.g. a Python bytes object) that stays valid and unchanged
/// while the segment is queued. Dropping it releases the owner.
pub trait SharedBytes: Send {
    fn bytes(&self) -> &[u8];
}

enum Segment {
    Owned(Vec<u8>),
    Static(&'static [u8]),
    Shared(Box<dyn SharedBytes>),
    /// A Python `bytes` block, without a box (`lent.rs`).
    Lent(Lent),
    /// A chunk's framing kept in the segment itself (`push_framing`): no allocation per block.
    Inline {
        len: u8,
        buf: [u8; INLINE_MAX],
    },
    /// `len` bytes of `file` from `offset` (the descriptor is our own, or the static file
    /// cache's, so the app closing its file object does not cut the transfer short).
    File {
        file: Arc<File>,
        offset: u64,
        len: u64,
    },
    /// Set (true) or clear (false) TCP_CORK when this point of the queue is reached: a large
    /// body then leaves in full-sized segments, as nginx's `tcp_nopush` does (measured: a
    /// 64 MiB file through sendfile cost 37–40 ms of server CPU with TCP_NODELAY alone, nginx
    /// 21–23 ms), while small responses keep TCP_NODELAY's latency.
    Cork(bool),
}

impl Segment {
    /// The bytes of a memory segment; empty for a file range.
    #[inline]
    fn bytes(&self) -> &[u8] {
        match self {
            Segment::Owned(v) => v,
            Segment::Static(s) => s,
            Segment::Shared(b) => b.bytes(),
            Segment::Lent(b) => b.bytes(),
            Segment::Inline { len, buf } => &buf[..*len as usize],
            Segment::File { .. } | Segment::Cork(_) => &[],
        }
    }

    #[inline]
    fn len(&self) -> u64 {
        match self {
            Segment::File { len, .. } => *len,
            s => s.bytes().len() as u64,
        }
    }
}

/// File bodies (sendfile) at least this large are sent corked (see `Segment::Cork`); smaller ones
/// leave at once. Measured on loopback: corking a 688,128-byte body doubled its server CPU
/// (96–103 µs → 216–226 µs per response), while a 64 MiB file went from 37–40 ms to 25 ms; 4 MiB
/// is between the two. Memory bodies are never corked (see `Sender::send_all`).
pub const CORK_MIN: u64 = 4 * 1024 * 1024;

/// Capacity of a fresh segment that small blocks are copied into.
const COALESCE_CAPACITY: usize = 16 * 1024;

/// Bytes of framing a segment holds in itself (`Segment::Inline`): the CRLF that ends a
/// referenced block and the next block's size line (at most 2 + 18) share one. 23 keeps a
/// segment at 32 bytes, as its largest other variants.
const INLINE_MAX: usize = 23;

/// Most data in one coalesced chunk (its size field has 8 hex digits).
const CHUNK_COALESCE_MAX: usize = 1 << 20;

/// Most iovecs passed to one writev from the slice array on the stack: a response head and its
/// body, a run of coalesced small blocks.
const MAX_IOV: usize = 64;

/// Most iovecs passed to one writev of a queue with more segments than [`MAX_IOV`] (Linux's
/// IOV_MAX), from an array allocated for that write: a streamed response's referenced blocks
/// take two segments each (the block, and the framing shared with the next one), so 64 iovecs
/// carried 32 blocks (256 KiB of S3's 8 KiB blocks) and a 1 MiB batch left in four writes and a
/// fifth for its last CRLF (benchmarks/results/2026-11-27-s3blocks/).
const MAX_IOV_LARGE: usize = 1024;

/// A segment that overshoots a write's [`WRITE_CHUNK`] by at most this much goes whole instead
/// of being cut (its rest would be a write of its own), and so does the framing after it.
const WRITE_SLACK: usize = 64 * 1024;

/// A FIFO of byte segments with the offset already written in the first one.
#[derive(Default)]
pub struct OutQueue {
    segs: Segments,
    /// Bytes of the front segment already written.
    front_pos: u64,
    /// Unwritten bytes in the whole queue.
    pending: u64,
    /// A chunk still open for more data: where its size field starts in the last (owned)
    /// segment, and its data length so far (see `push_chunk_data`).
    open_chunk: Option<(u32, u32)>,
    /// The connection closes once this queue is written. Its writes then carry MSG_MORE, so
    /// the last, partial segment waits for the FIN that the close adds to it: a closed
    /// connection costs one segment less, and the client reads the answer and its end in one
    /// wake-up. Whoever closes must half-close first (`Stream::shutdown_write`), which sends
    /// that segment at once, even where unread input would make `close` reset the connection.
    pub closing: bool,
}

impl OutQueue {
    pub fn new() -> OutQueue {
        OutQueue::default()
    }

    /// An empty queue with this one's segment storage when this one holds nothing, else with
    /// storage this thread's queues gave back (`release`), else a new one: the storage goes on
    /// from response to response instead of being freed and allocated again.
    pub fn spare(&mut self) -> OutQueue {
        let segs = if self.segs.is_empty() && self.segs.capacity() > 0 {
            std::mem::take(&mut self.segs)
        } else {
            SPARE_QUEUES
                .with_borrow_mut(|spare| spare.pop())
                .unwrap_or_default()
                .into()
        };
        // Every field named: `..OutQueue::default()` would make (and drop) a deque as well.
        OutQueue {
            segs,
            front_pos: 0,
            pending: 0,
            open_chunk: None,
            closing: false,
        }
    }

    /// Everything is written: the segment storage goes to this thread's spares (for `spare`),
    /// so that a connection between requests holds none (10,000 idle connections held 150
    /// bytes more each when their queues kept it).
    pub fn release(&mut self) {
        if !self.segs.is_empty() || self.segs.capacity() == 0 {
            return;
        }
        let segs = std::mem::take(&mut *self.segs);
        if segs.capacity() <= SPARE_QUEUE_CAPACITY_MAX {
            SPARE_QUEUES.with_borrow_mut(|spare| {
                if spare.len() < SPARE_QUEUES_MAX {
                    spare.push(segs);
                }
            });
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pending == 0
    }

    /// Unwritten bytes.
    #[inline]
    pub fn pending(&self) -> u64 {
        self.pending
    }

    /// A file range (sendfile) is queued.
    pub fn has_file(&self) -> bool {
        self.segs.iter().any(|s| matches!(s, Segment::File { .. }))
    }

    fn push(&mut self, seg: Segment) {
        self.close_chunk();
        let n = seg.len();
        if n > 0 || matches!(seg, Segment::Cork(_)) {
            self.pending += n;
            self.segs.push_back(seg);
        }
    }

    pub fn push_owned(&mut self, v: Vec<u8>) {
        self.push(Segment::Owned(v));
    }

    /// Append small bytes, copied into the last owned segment when there is one (so many small
    /// blocks and their chunk framing become one iovec instead of three each).
    pub fn push_copy(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        self.close_chunk();
        self.append_tail(data);
    }

    fn append_tail(&mut self, data: &[u8]) {
        self.append_tail_or_new(data, COALESCE_CAPACITY);
    }

    /// Append onto the last owned segment, else into a new one of at least `capacity` bytes.
    fn append_tail_or_new(&mut self, data: &[u8], capacity: usize) {
        self.pending += data.len() as u64;
        if let Some(Segment::Owned(v)) = self.segs.back_mut() {
            v.extend_from_slice(data);
            return;
        }
        let mut v = Vec::with_capacity(data.len().max(capacity));
        v.extend_from_slice(data);
        self.segs.push_back(Segment::Owned(v));
    }

    /// Append a chunk's framing (a size line, a CRLF) around data queued without a copy: as
    /// `push_copy`, but a new segment is a small one, not the 16 KiB a run of small blocks gets
    /// (per referenced 8 KiB block that allocation cost more than the copy it replaced).
    /// Framing after a referenced block goes into an inline segment (a 32-byte `Vec` per block
    /// before: a `malloc` on the app's thread and a `free` on the loop's, which the allocator's
    /// thread caches do not serve); after copied bytes it extends their segment.
    pub fn push_framing(&mut self, data: &[u8]) {
        self.close_chunk();
        self.pending += data.len() as u64;
        match self.segs.back_mut() {
            Some(Segment::Owned(v)) => return v.extend_from_slice(data),
            Some(Segment::Inline { len, buf }) if *len as usize + data.len() <= INLINE_MAX => {
                let at = *len as usize;
                buf[at..at + data.len()].copy_from_slice(data);
                *len += data.len() as u8;
                return;
            }
            _ => {}
        }
        if data.len() <= INLINE_MAX {
            let mut buf = [0u8; INLINE_MAX];
            buf[..data.len()].copy_from_slice(data);
            let len = data.len() as u8;
            return self.segs.push_back(Segment::Inline { len, buf });
        }
        self.segs.push_back(Segment::Owned(data.to_vec()));
    }

    /// Append small data as chunked body data. Consecutive calls extend one chunk: the size field
    /// is written with fixed width (leading zeros are valid chunk-size syntax) and updated as
    /// data arrives, so blocks that pile up while the socket is busy leave as one chunk, not one
    /// per block (a client parses 20,000 chunks of 128 bytes far slower than 40 of 64 KiB). The
    /// chunk is closed before any of it is written, or when anything else is queued.
    pub fn push_chunk_data(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        if let Some((_, len)) = self.open_chunk {
            if len as usize + data.len() > CHUNK_COALESCE_MAX {
                self.close_chunk();
            }
        }
        if self.open_chunk.is_none() {
            let at = match self.segs.back() {
                Some(Segment::Owned(v)) => v.len(),
                _ => 0,
            };
            self.append_tail(OPEN_CHUNK_HEADER);
            self.open_chunk = Some((at as u32, 0));
        }
        self.append_tail(data);
        let (at, len) = self.open_chunk.as_mut().unwrap();
        *len += data.len() as u32;
        let size = *len as usize;
        let at = *at as usize;
        if let Some(Segment::Owned(v)) = self.segs.back_mut() {
            write_fixed_chunk_size(size, &mut v[at..]);
        }
    }

    /// End the open chunk (its CRLF), if any.
    pub fn close_chunk(&mut self) {
        if self.open_chunk.take().is_some() {
            self.append_tail(CHUNK_END);
        }
    }

    pub fn push_static(&mut self, s: &'static [u8]) {
        self.push(Segment::Static(s));
    }

    pub fn push_shared(&mut self, b: Box<dyn SharedBytes>) {
        self.push(Segment::Shared(b));
    }

    pub fn push_lent(&mut self, b: Lent) {
        self.push(Segment::Lent(b));
    }

    /// Queue a TCP_CORK change (see `Segment::Cork`).
    pub fn push_cork(&mut self, on: bool) {
        self.close_chunk();
        self.segs.push_back(Segment::Cork(on));
    }

    /// Queue `len` bytes of `file` from `offset`, to be sent with sendfile(2).
    pub fn push_file(&mut self, file: File, offset: u64, len: u64) {
        self.push_shared_file(Arc::new(file), offset, len);
    }

    /// As `push_file`, with a descriptor shared with others (a kept static file's).
    pub fn push_shared_file(&mut self, file: Arc<File>, offset: u64, len: u64) {
        self.push(Segment::File { file, offset, len });
    }

    /// Move everything from `other` to the end of this queue.
    pub fn append(&mut self, other: &mut OutQueue) {
        other.close_chunk();
        let closing = self.closing || other.closing;
        if self.segs.is_empty() {
            std::mem::swap(self, other);
            self.closing = closing;
            return;
        }
        self.closing = closing;
        while let Some(seg) = other.segs.pop_front() {
            let skip = std::mem::take(&mut other.front_pos);
            let seg = match seg {
                Segment::Owned(v) if skip > 0 => Segment::Owned(v[skip as usize..].to_vec()),
                Segment::File { file, offset, len } => Segment::File {
                    file,
                    offset: offset + skip,
                    len: len - skip,
                },
                s if skip > 0 => Segment::Owned(s.bytes()[skip as usize..].to_vec()),
                s => s,
            };
            self.push(seg);
        }
        other.clear();
    }

    /// One writev of everything pending (up to MAX_IOV segments). Returns bytes written;
    /// `WouldBlock` when the socket is full.
    pub fn write_to(&mut self, stream: &Stream) -> io::Result<usize> {
        self.write_fd(stream.fd())
    }

    /// As `write_to`, on a raw socket descriptor (used by the thread that runs the app, which
    /// borrows the connection's socket for the request). One syscall: a writev of the memory
    /// segments up to the first file range, or a sendfile of the file range at the front.
    pub fn write_fd(&mut self, fd: RawFd) -> io::Result<usize> {
        // A chunk's size is final once any of it leaves.
        self.close_chunk();
        self.apply_corks(fd);
        if self.pending == 0 {
            return Ok(0);
        }
        if let Some(Segment::File { file, offset, len }) = self.segs.front() {
            let n = sendfile(fd, file, offset + self.front_pos, len - self.front_pos)?;
            if n == 0 {
                // The file is shorter than the head announced (truncated since): the
                // connection ends short of its Content-Length, never padded or kept alive.
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "file shorter than announced",
                ));
            }
            self.advance(n as u64);
            self.apply_corks(fd);
            return Ok(n);
        }
        let n = if self.segs.len() <= MAX_IOV {
            let mut iov: [IoSlice<'_>; MAX_IOV] = [IoSlice::new(&[]); MAX_IOV];
            let (count, flags) = self.fill_iov(&mut iov);
            writev_fd_flags(fd, &iov[..count], flags)?
        } else {
            let mut iov = vec![IoSlice::new(&[]); self.segs.len().min(MAX_IOV_LARGE)];
            let (count, flags) = self.fill_iov(&mut iov);
            writev_fd_flags(fd, &iov[..count], flags)?
        };
        self.advance(n as u64);
        self.apply_corks(fd);
        Ok(n)
    }

    /// The iovecs of one writev: the memory segments from the front, up to the first file range
    /// or cork, at most `iov.len()` of them and about [`WRITE_CHUNK`] bytes (a segment that
    /// overshoots it by at most [`WRITE_SLACK`] goes whole, with the inline framing after it).
    /// Returns how many were filled and the flags of the write.
    fn fill_iov<'a>(&'a self, iov: &mut [IoSlice<'a>]) -> (usize, libc::c_int) {
        let mut count = 0;
        let mut file_follows = false;
        let mut budget = WRITE_CHUNK as usize;
        for (i, seg) in self.segs.iter().enumerate().take(iov.len()) {
            match seg {
                Segment::File { .. } => {
                    file_follows = true;
                    break;
                }
                Segment::Cork(_) => break,
                // The budget is spent: only framing still rides along.
                Segment::Inline { .. } => {}
                _ if budget == 0 => break,
                _ => {}
            }
            let b = seg.bytes();
            let b = if i == 0 {
                &b[self.front_pos as usize..]
            } else {
                b
            };
            if b.len() > budget + WRITE_SLACK {
                // A large segment: cut at the budget, and nothing after it in this write.
                iov[i] = IoSlice::new(&b[..budget]);
                count += 1;
                break;
            }
            budget = budget.saturating_sub(b.len());
            iov[i] = IoSlice::new(b);
            count += 1;
        }
        let flags = if file_follows || self.closing {
            libc::MSG_MORE
        } else {
            0
        };
        (count, flags)
    }

    /// The TLS form of `write_fd` (`io::tls_link`): hand the front's bytes to `take` (a
    /// session that encrypts them and returns how many it took) instead of the socket, in one
    /// call: the memory segments up to the first file range or cork, and that file range's
    /// next bytes, read into this thread's buffer (at most [`TLS_FILE_READ`] in all with the
    /// memory bytes before them: constant memory; what the session did not take is read again
    /// next time). A response head and its file body's first bytes so share one record and one
    /// write, as the plaintext head shares a TCP segment with sendfile's first bytes (MSG_MORE).
    /// Returns the bytes taken.
    pub fn encrypt_with(
        &mut self,
        fd: RawFd,
        take: &mut dyn FnMut(&[IoSlice<'_>]) -> usize,
    ) -> io::Result<usize> {
        use std::os::unix::fs::FileExt;
        self.close_chunk();
        self.apply_corks(fd);
        if self.pending == 0 {
            return Ok(0);
        }
        let n = TLS_FILE_BUF.with_borrow_mut(|buf| -> io::Result<usize> {
            let mut iov: [IoSlice<'_>; MAX_IOV] = [IoSlice::new(&[]); MAX_IOV];
            let mut count = 0;
            let mut memory = 0;
            for (i, seg) in self.segs.iter().enumerate().take(MAX_IOV) {
                let skip = if i == 0 { self.front_pos } else { 0 };
                match seg {
                    Segment::Cork(_) => break,
                    Segment::File { file, offset, len } => {
                        let room = TLS_FILE_READ.saturating_sub(memory);
                        if room == 0 {
                            break;
                        }
                        let want = (len - skip).min(room as u64) as usize;
                        if buf.len() < TLS_FILE_READ {
                            buf.resize(TLS_FILE_READ, 0);
                        }
                        let got = file.read_at(&mut buf[..want], offset + skip)?;
                        if got == 0 {
                            return Err(io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                "file shorter than announced",
                            ));
                        }
                        iov[count] = IoSlice::new(&buf[..got]);
                        count += 1;
                        break;
                    }
                    _ => {
                        let b = &seg.bytes()[skip as usize..];
                        memory += b.len();
                        iov[count] = IoSlice::new(b);
                        count += 1;
                    }
                }
            }
            Ok(take(&iov[..count]))
        })?;
        self.advance(n as u64);
        self.apply_corks(fd);
        Ok(n)
    }

    /// Apply the cork markers now at the front (after the data before them left), so that the
    /// uncork after a body's last byte takes effect in the call that wrote that byte.
    fn apply_corks(&mut self, fd: RawFd) {
        while let Some(Segment::Cork(on)) = self.segs.front() {
            set_cork(fd, *on);
            self.segs.pop_front();
        }
    }

    /// Forget `n` written bytes, dropping (and so releasing) fully written segments.
    fn advance(&mut self, mut n: u64) {
        self.pending -= n;
        while n > 0 {
            let front_len = self.segs.front().map(|s| s.len()).unwrap_or(0);
            let left = front_len - self.front_pos;
            if n >= left {
                n -= left;
                if let Some(Segment::Owned(v)) = self.segs.pop_front() {
                    keep_spare(v);
                }
                self.front_pos = 0;
            } else {
                self.front_pos += n;
                n = 0;
            }
        }
    }

    /// Drop everything (client gone).
    pub fn clear(&mut self) {
        self.open_chunk = None;
        self.segs.clear();
        self.front_pos = 0;
        self.pending = 0;
    }
}

mod lent;
mod segments;
#[cfg(test)]
mod tests;
mod with_file;
