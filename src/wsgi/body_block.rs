//! The app's body blocks on their way to an output queue: which Python objects are body bytes
//! (`bytes` referenced without a copy; `bytearray` and `memoryview` copied once), how many of
//! a block's bytes the framing lets through (a declared Content-Length is never exceeded), and
//! the chunk framing around them. Used by the sender for its own queue, under the lock for the
//! queue it shares with the event loop, and to write a streamed block in place
//! ([`write_block_now`]).

use std::io::IoSlice;

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView};
use sluicegate_proto::h1::encode::{chunk_header, ResponseFraming, CHUNK_END};

use super::bridge::type_name;
use crate::io::out_queue::{OutQueue, SharedBytes};
use crate::io::transport::Transport;

/// Why a block could not be sent.
#[derive(Debug)]
pub enum SendError {
    NotBytes(String),
    NotStarted,
    Finished,
    ClientGone,
}

/// Bodies up to this size are copied next to the head so head and body leave in one segment;
/// larger `bytes` blocks are sent from the Python object's buffer (no copy).
pub const COPY_MAX: usize = 16 * 1024;

/// A streamed block (a generator's second and later, queued for the event loop) up to this size
/// is copied onto the queue's tail, where small blocks pile up into one chunk; a larger `bytes`
/// block is referenced. S3's 8 KiB blocks: the copy was 805 of the 1,743 instructions each
/// block cost (benchmarks/results/2026-11-27-app-path/).
pub const STREAM_COPY_MAX: usize = 4 * 1024;

/// A Python `bytes` object queued for writing. It is immutable and kept alive by `owner`, so
/// its buffer stays valid and unchanged until the segment is dropped.
struct PyBytesChunk {
    /// Always Some until dropped (taken in `drop` so the decref comes before the bell).
    owner: Option<Py<PyBytes>>,
    ptr: *const u8,
    len: usize,
}

impl Drop for PyBytesChunk {
    fn drop(&mut self) {
        drop(self.owner.take());
        // Dropped by the event loop (a client gone mid-response): have the decref applied now.
        super::release::after_drop();
    }
}

// SAFETY: the pointed-to memory belongs to an immutable bytes object that `owner` keeps alive;
// reading it from another thread without the GIL is sound because nothing can mutate it, and
// PyO3 defers the decref of a Py dropped without the GIL.
unsafe impl Send for PyBytesChunk {}

impl SharedBytes for PyBytesChunk {
    fn bytes(&self) -> &[u8] {
        // SAFETY: see the type's comment: ptr/len describe the live, immutable bytes buffer.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// A body block the app produced, seen as bytes. Only `bytes` is referenced without a copy:
/// it is immutable, and dropping it needs no GIL (PyO3 defers the decref). A `bytearray` or
/// `memoryview` is copied once: its buffer could change under us, and releasing a held
/// `Py_buffer` takes the GIL, which the event loop thread must never wait for.
pub enum Block<'py> {
    Bytes(Bound<'py, PyBytes>),
    Other(Vec<u8>),
}

impl Block<'_> {
    pub fn as_slice(&self) -> &[u8] {
        match self {
            Block::Bytes(b) => b.as_bytes(),
            Block::Other(v) => v,
        }
    }
}

pub fn as_block<'py>(o: &Bound<'py, PyAny>) -> Result<Block<'py>, SendError> {
    if let Ok(b) = o.cast::<PyBytes>() {
        return Ok(Block::Bytes(b.clone()));
    }
    if let Ok(b) = o.cast::<PyByteArray>() {
        return Ok(Block::Other(b.to_vec()));
    }
    if o.is_instance_of::<PyMemoryView>() {
        // tobytes() copies once, also from a strided view.
        if let Ok(b) = o.call_method0("tobytes") {
            if let Ok(b) = b.cast_into::<PyBytes>() {
                return Ok(Block::Bytes(b));
            }
        }
    }
    Err(SendError::NotBytes(type_name(o)))
}

/// Where a block's bytes go: copied (up to `copy_max`) or referenced (larger, no copy).
fn queue_block(out: &mut OutQueue, block: Block<'_>, take: usize, copy_max: usize) {
    let small = take <= copy_max;
    match block {
        Block::Bytes(b) if !small => {
            let ptr = b.as_bytes().as_ptr();
            out.push_shared(Box::new(PyBytesChunk {
                owner: Some(b.unbind()),
                ptr,
                len: take,
            }));
        }
        b => out.push_copy(&b.as_slice()[..take]),
    }
}

/// How many of a block's `len` bytes the framing lets through (none for a body-less response;
/// never past a declared Content-Length), counted into `body_bytes`.
fn take_of(framing: ResponseFraming, body_bytes: &mut u64, len: usize) -> usize {
    let take = match framing {
        ResponseFraming::NoBody => 0,
        ResponseFraming::Length(n) => len.min(n.saturating_sub(*body_bytes) as usize),
        _ => len,
    };
    *body_bytes += take as u64;
    take
}

/// Write one block (and its chunk framing) from where it lies, in one non-blocking `writev`
/// (`Transport::write_slices`), while nothing waits before it: no queue segment, no `Box` per
/// block. What the socket did not take goes into `out` (the framing inline, the rest of a
/// large `bytes` block referenced, a small rest copied), for the loop to write. Returns
/// `Ok(None)` on a TLS connection without touching anything (the caller queues the block);
/// `Err` when the client is gone. `detach_min`: from this many bytes the write releases the
/// GIL (the copy into the socket takes a while).
pub fn write_block_now(
    py: Python<'_>,
    transport: &Transport,
    framing: ResponseFraming,
    body_bytes: &mut u64,
    out: &mut OutQueue,
    block: &Block<'_>,
    detach_min: usize,
) -> Result<Option<()>, ()> {
    if matches!(transport, Transport::Tls(_)) {
        return Ok(None);
    }
    let data = block.as_slice();
    let take = take_of(framing, body_bytes, data.len());
    if take == 0 {
        return Ok(Some(()));
    }
    let data = &data[..take];
    let mut hdr_buf = [0u8; 18];
    let (hdr, end): (&[u8], &[u8]) = if framing == ResponseFraming::Chunked {
        (chunk_header(take, &mut hdr_buf), CHUNK_END)
    } else {
        (&[], &[])
    };
    let parts = [IoSlice::new(hdr), IoSlice::new(data), IoSlice::new(end)];
    let total = hdr.len() + take + end.len();
    let write = || transport.write_slices(&parts).expect("a plaintext socket");
    let res = if total >= detach_min {
        py.detach(write)
    } else {
        write()
    };
    let n = match res {
        Ok(n) => n,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
        Err(_) => return Err(()),
    };
    if n < total {
        queue_rest(out, block, [hdr, data, end], n);
    }
    Ok(Some(()))
}

/// Queue what a write of `parts` (size line, data, CRLF) left after its first `written` bytes.
fn queue_rest(out: &mut OutQueue, block: &Block<'_>, parts: [&[u8]; 3], mut written: usize) {
    for (i, part) in parts.into_iter().enumerate() {
        let skip = written.min(part.len());
        written -= skip;
        let rest = &part[skip..];
        if rest.is_empty() {
            continue;
        }
        match block {
            Block::Bytes(b) if i == 1 && rest.len() > STREAM_COPY_MAX => {
                out.push_shared(Box::new(PyBytesChunk {
                    owner: Some(b.clone().unbind()),
                    ptr: rest.as_ptr(),
                    len: rest.len(),
                }));
            }
            _ if i == 1 => out.push_copy(rest),
            _ => out.push_framing(rest),
        }
    }
}

/// Queue body bytes into `out` with the framing in force, respecting a declared Content-Length
/// (bytes beyond it are dropped, as the client would misread them); a block of up to `copy_max`
/// bytes is copied ([`COPY_MAX`] for the sender's own queue, [`STREAM_COPY_MAX`] for the queue
/// shared with the loop). A free function so the streaming path can fill the shared queue while
/// it holds the queue's lock.
pub fn queue_body(
    framing: ResponseFraming,
    body_bytes: &mut u64,
    out: &mut OutQueue,
    block: Block<'_>,
    copy_max: usize,
) {
    let take = take_of(framing, body_bytes, block.as_slice().len());
    if take == 0 {
        return;
    }
    let chunked = framing == ResponseFraming::Chunked;
    if chunked && take <= copy_max {
        // Small blocks extend the open chunk (one chunk per batch the socket takes).
        out.push_chunk_data(&block.as_slice()[..take]);
        return;
    }
    if chunked {
        framed_chunk(out, take as u64, |out| {
            queue_block(out, block, take, copy_max)
        });
    } else {
        queue_block(out, block, take, copy_max);
    }
}

/// One chunk of `len` bytes around data that `push_data` queues without copying it (a large
/// block, a file range): size line, data, CRLF. (Small blocks go through
/// `OutQueue::push_chunk_data`, which coalesces them.)
pub fn framed_chunk(out: &mut OutQueue, len: u64, push_data: impl FnOnce(&mut OutQueue)) {
    let mut hdr = [0u8; 18];
    out.push_framing(chunk_header(len as usize, &mut hdr));
    push_data(out);
    out.push_framing(CHUNK_END);
}
