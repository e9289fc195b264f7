//! The app's body blocks on their way to an output queue: which Python objects are body bytes
//! (`bytes` referenced without a copy; `bytearray` and `memoryview` copied once), how many of
//! a block's bytes the framing lets through (a declared Content-Length is never exceeded), and
//! the chunk framing around them. Used by the sender for its own queue and, under the lock,
//! for the queue it shares with the event loop.

use std::ffi::c_void;
use std::ptr::NonNull;

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView};
use sluicegate_proto::h1::encode::{chunk_header, ResponseFraming, CHUNK_END};

use super::bridge::type_name;
use crate::io::out_queue::{set_lent_release, Lent, OutQueue};

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

/// Give back the reference a lent segment held (`io::out_queue::Lent`): registered once, by
/// [`register_release`]. Dropped by the event loop (a written block, or a client gone mid-response),
/// PyO3 defers the decref, and the bell has it applied now.
fn release_bytes(owner: NonNull<c_void>) {
    // SAFETY: `owner` is the strong reference `lend_bytes` took out of a `Py<PyBytes>`
    // (`into_ptr`), given back exactly once (the segment's drop); `Py` is `repr(transparent)`
    // over that pointer, and dropping it without the GIL is PyO3's deferred decref.
    let obj: Py<PyAny> = unsafe { std::mem::transmute::<NonNull<c_void>, Py<PyAny>>(owner) };
    drop(obj);
    super::release::after_drop();
}

/// Make lent segments give their `bytes` objects back through [`release_bytes`]: called once,
/// where the server builds its bridge (`server/mod.rs`), before any block is lent.
pub fn register_release() {
    set_lent_release(release_bytes);
}

/// A Python `bytes` object's first `len` bytes as a queue segment, without a copy and without
/// a box: the segment holds a reference to the object, which is immutable, so its buffer stays
/// valid and unchanged until the segment is dropped. ([`register_release`] ran first.)
fn lend_bytes(b: Bound<'_, PyBytes>, len: usize) -> Lent {
    let ptr = b.as_bytes().as_ptr();
    let owner = NonNull::new(b.into_ptr().cast::<c_void>()).expect("a live object");
    // SAFETY: the buffer of a `bytes` object never changes and lives as long as the object,
    // which the reference handed to the segment keeps alive; `release_bytes` gives that
    // reference back from any thread (PyO3 defers it when the GIL is not held).
    unsafe { Lent::new(ptr, len, owner) }
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
        Block::Bytes(b) if !small => out.push_lent(lend_bytes(b, take)),
        b => out.push_copy(&b.as_slice()[..take]),
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
    let mut take = block.as_slice().len();
    match framing {
        ResponseFraming::NoBody => return,
        ResponseFraming::Length(n) => {
            take = take.min(n.saturating_sub(*body_bytes) as usize);
        }
        _ => {}
    }
    if take == 0 {
        return;
    }
    *body_bytes += take as u64;
    let chunked = framing == ResponseFraming::Chunked;
    if chunked && take <= copy_max {
        // Small blocks extend the open chunk (one chunk per batch the socket takes).
        out.push_chunk_data(&block.as_slice()[..take]);
        return;
    }
    if chunked {
        match block {
            // The common large block: one push for the chunk (`OutQueue::push_lent_chunk`).
            Block::Bytes(b) => out.push_lent_chunk(lend_bytes(b, take)),
            block => framed_chunk(out, take as u64, |out| {
                queue_block(out, block, take, copy_max)
            }),
        }
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
