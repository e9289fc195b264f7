//! Bytes lent by an object whose references someone else counts (a Python `bytes` body block),
//! queued without a box: the segment ([`Lent`]) holds the buffer's address and length and one
//! reference to its owner, which it gives back through the function registered once
//! ([`set_lent_release`]) when it is dropped. A `Box<dyn SharedBytes>` per streamed block cost
//! a `malloc` on the app's thread and a `free` on the loop's, which the allocator's per-thread
//! caches do not serve (about 300 instructions per 8 KiB block of S3,
//! benchmarks/results/2026-11-27-s3k8/). Also how a lent block is queued as a chunk of its own
//! ([`OutQueue::push_lent_chunk`]: its framing without a push per piece).

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::OnceLock;

use sluicegate_proto::h1::encode::chunk_header;

use super::{OutQueue, Segment, INLINE_MAX};

/// Gives back one reference to an owner; called from any thread, with or without the
/// interpreter attached.
pub type Release = fn(NonNull<c_void>);

static RELEASE: OnceLock<Release> = OnceLock::new();

/// Register how owners are given back (the layer that makes lent segments, once; later calls
/// change nothing).
pub fn set_lent_release(release: Release) {
    let _ = RELEASE.set(release);
}

/// `len` bytes at `ptr`, kept alive and unchanged by the reference to `owner` this holds.
pub struct Lent {
    ptr: NonNull<u8>,
    len: usize,
    owner: NonNull<c_void>,
}

// SAFETY: the bytes are immutable while the owner lives (`Lent::new`'s contract), so reading
// them from another thread is sound, and the registered release may be called from any thread.
unsafe impl Send for Lent {}

impl Lent {
    /// # Safety
    /// `ptr` must point at `len` bytes that stay valid and unchanged for as long as the
    /// reference to `owner` (which the caller hands over) is held, and the function given to
    /// [`set_lent_release`] must give that reference back, from any thread.
    pub unsafe fn new(ptr: *const u8, len: usize, owner: NonNull<c_void>) -> Lent {
        Lent {
            ptr: NonNull::new(ptr as *mut u8).unwrap_or(NonNull::dangling()),
            len,
            owner,
        }
    }

    #[inline]
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `new`'s contract: the bytes live and stay unchanged while `owner` is held.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        // Never unset where lent segments are made (the maker registers first).
        if let Some(release) = RELEASE.get() {
            release(self.owner);
        }
    }
}

/// The CRLF that ends a chunk, as a segment of its own that the next chunk's size line joins.
const CHUNK_END_SEGMENT: Segment = Segment::Inline {
    len: 2,
    buf: {
        let mut buf = [0u8; INLINE_MAX];
        buf[0] = b'\r';
        buf[1] = b'\n';
        buf
    },
};

impl OutQueue {
    /// A lent block as one chunk: its size line (joining the CRLF that ends the chunk before,
    /// in that inline segment), the block, and its own CRLF (a constant inline segment), in one
    /// call. Pushed piece by piece (`push_framing` twice, `push_lent`), a block's framing cost
    /// about 350 instructions in S3, this about 160 (benchmarks/results/2026-11-27-k8b/). An empty
    /// block queues nothing (a chunk of size 0 would end the body).
    pub fn push_lent_chunk(&mut self, b: Lent) {
        let n = b.len;
        if n == 0 {
            return;
        }
        self.close_chunk();
        let mut hdr = [0u8; 18];
        let head_len = chunk_header(n, &mut hdr).len();
        self.pending += (head_len + n + 2) as u64;
        match self.segs.back_mut() {
            Some(Segment::Inline { len, buf }) if *len as usize + 18 <= INLINE_MAX => {
                // A fixed-size copy (the size line and what follows it in `hdr`, which `len`
                // leaves out) instead of a call to `memcpy` for a few bytes.
                let at = *len as usize;
                buf[at..at + 18].copy_from_slice(&hdr);
                *len += head_len as u8;
            }
            Some(Segment::Owned(v)) => v.extend_from_slice(&hdr[..head_len]),
            _ => {
                let mut buf = [0u8; INLINE_MAX];
                buf[..18].copy_from_slice(&hdr);
                let len = head_len as u8;
                self.segs.push_back(Segment::Inline { len, buf });
            }
        }
        self.segs.push_back(Segment::Lent(b));
        self.segs.push_back(CHUNK_END_SEGMENT);
    }
}
