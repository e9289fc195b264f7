//! The read-ahead hand-over of a large body: when to start a reader thread
//! (`io::read_ahead`), taking its blocks into the app's reads, and settling what it read when
//! the body is read otherwise or ends (what it read past a chunked body's end goes back to the
//! read buffer). For a Content-Length body read in `read(n)`s of one size, the reader is lent
//! the `bytes` objects those reads return (`lent.rs`), and a `read(n)` that finds the next
//! one full returns it as it is ([`BodyState::take_whole`]): the kernel's copy into it is the
//! body's only copy. An `impl BodyState` block of its own, so that `mod.rs` keeps the decoding and
//! the reads the app makes.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use sluicegate_proto::ProtoError;

use super::lent::LentBytes;
use super::{BodyState, LARGE_UPLOAD};
use crate::io::read_ahead::{
    AheadBuf, Block, BodyFailure, Lend, LentBuf, Next, Pacing, ReadAhead, Until, AHEAD_MAX,
};

/// A Content-Length body with at least this much still to come, once it has brought
/// [`LARGE_UPLOAD`], is read ahead of the app on a thread of its own (`io::read_ahead`); so is any
/// chunked body that has brought [`LARGE_UPLOAD`] (its length is unknown).
const READ_AHEAD_FROM: u64 = 1024 * 1024;

/// `read(n)`s of this size or more are served by lent `bytes`. Smaller ones go through the
/// reader's blocks and a copy: many small buffers per MiB would cost more in hand-overs than
/// the copy they save.
const LEND_MIN: usize = 16 * 1024;
/// ... and of this size or less: the lent buffers cover what can be ahead, and a few larger
/// ones would leave the reader waiting for the app to take a whole one.
const LEND_MAX: usize = AHEAD_MAX / 2;

impl BodyState {
    /// Stop the reader thread, if one runs, and keep what it read as decoded bytes waiting
    /// (`pending`): the ways of reading other than `read_into` (lines, draining) go on from
    /// there, through the read buffer.
    pub(super) fn settle_ahead(&mut self) {
        if self.ahead.is_none() && self.ahead_pos == self.ahead_block.len {
            return;
        }
        let (blocks, end) = match self.ahead.take() {
            Some(ahead) => ahead.finish(),
            None => (Vec::new(), None),
        };
        let current = std::mem::take(&mut self.ahead_block);
        let rest = current.data()[self.ahead_pos..].to_vec();
        self.ahead_pos = 0;
        if self.pending_pos == self.pending.len() {
            self.pending.clear();
            self.pending_pos = 0;
        }
        let blocks = blocks.iter().map(Block::data);
        for block in std::iter::once(&rest[..]).chain(blocks) {
            if let Err(e) = self.decode_block(block) {
                self.failure = Some(BodyFailure::Protocol(e));
                return;
            }
        }
        if let Some(Err(f)) = end {
            if !self.decoder.is_done() {
                self.failure = Some(f);
            }
        }
    }

    /// Decode a block the reader thread read into `pending`; what follows the body's end (a
    /// chunked body's reader reads past it) goes back to the read buffer.
    fn decode_block(&mut self, block: &[u8]) -> Result<(), ProtoError> {
        let mut at = 0;
        while at < block.len() && !self.decoder.is_done() {
            let step = self.decoder.decode(&block[at..])?;
            self.pending.extend_from_slice(step.data);
            at += step.consumed;
        }
        if at < block.len() {
            self.raw.append(&block[at..]);
        }
        Ok(())
    }

    /// The body's decoder is done while the reader thread has run: stop it, and give what it
    /// read past the body's end (a pipelined request after a chunked body) to the read buffer.
    pub(super) fn end_ahead(&mut self) {
        let rest = std::mem::take(&mut self.ahead_block);
        if self.ahead_pos < rest.len {
            self.raw.append(&rest.data()[self.ahead_pos..]);
        }
        self.ahead_pos = 0;
        if let Some(ahead) = self.ahead.take() {
            let (blocks, _) = ahead.finish();
            for block in blocks {
                self.raw.append(block.data());
            }
        }
    }

    /// Start reading ahead when a body has shown itself large, if it has not started already
    /// (once per body): a Content-Length body with at least [`READ_AHEAD_FROM`] still to come,
    /// or a chunked body (its reader finds the end with a copy of the decoder).
    pub(super) fn maybe_read_ahead(&mut self) {
        if self.ahead_started
            || self.read_bytes < LARGE_UPLOAD
            || self.continue_due
            || !self.raw.is_empty()
            || self.pending_len() > 0
            || self.decoder.is_done()
        {
            return;
        }
        let until = match self.decoder.remaining() {
            Some(left) if left < READ_AHEAD_FROM => return,
            Some(left) => Until::Bytes(left),
            None => Until::BodyEnd(Box::new(self.decoder.clone())),
        };
        self.ahead_started = true;
        self.ahead = ReadAhead::start(
            self.transport.clone(),
            until,
            Pacing {
                read_timeout: self.read_timeout,
                pace: self.pace,
                started: self.started,
                read_before: self.read_bytes,
            },
            self.loop_entry.take(),
        );
    }

    /// Decode the reader thread's next bytes into `dst` (waiting for them with the GIL
    /// released); returns how many (0 after framing only, or at the body's end).
    pub(super) fn take_ahead(
        &mut self,
        py: Python<'_>,
        dst: &mut [u8],
    ) -> Result<usize, BodyFailure> {
        loop {
            if self.ahead_pos < self.ahead_block.len {
                // No more input than `dst` has room: the data a step returns is a slice of its
                // input, so it always fits (a Content-Length step returns its input as it is).
                let end = (self.ahead_pos + dst.len()).min(self.ahead_block.len);
                let step = match self
                    .decoder
                    .decode(&self.ahead_block.data()[self.ahead_pos..end])
                {
                    Ok(step) => step,
                    Err(e) => return Err(self.fail(BodyFailure::Protocol(e))),
                };
                let n = step.data.len();
                dst[..n].copy_from_slice(step.data);
                self.ahead_pos += step.consumed;
                if self.decoder.is_done() {
                    self.end_ahead();
                }
                return Ok(n);
            }
            if self.ahead.is_none() {
                return Ok(0);
            }
            // The current block is all taken: it goes back to the reader with the asking.
            self.ahead_pos = 0;
            let (used, lent) = recycle(std::mem::take(&mut self.ahead_block), self.lend_size);
            self.to_lend.extend(lent);
            let lend = self.take_lend();
            let Some(ahead) = self.ahead.as_ref() else {
                return Ok(0);
            };
            match ahead.next_block(used, lend) {
                Next::Block(block) => self.ahead_block = block,
                Next::Done => {
                    self.ahead = None;
                    return Ok(0);
                }
                Next::Failed(f) => {
                    self.ahead = None;
                    return Err(self.fail(f));
                }
                Next::Empty => py.detach(|| ahead.wait()),
            }
        }
    }

    /// `read(n)` of a Content-Length body that the reader thread reads ahead: the next lent
    /// `bytes`, when it holds the next `n` bytes of the body, as it is (no copy). Keeps enough
    /// `bytes` of `n` lent to cover what can be ahead. None when that does not apply (other
    /// sizes, bytes taken from a block already, the reader's own block next, the body's end):
    /// the read then copies, as any other.
    pub(super) fn take_whole<'py>(
        &mut self,
        py: Python<'py>,
        n: usize,
    ) -> Result<Option<Bound<'py, PyBytes>>, BodyFailure> {
        let Some(app_left) = self.known_left() else {
            return Ok(None);
        };
        if !(LEND_MIN..=LEND_MAX).contains(&n)
            || self.ahead.is_none()
            || self.failure.is_some()
            || app_left < n as u64
        {
            return Ok(None);
        }
        self.lend(py, n, app_left);
        if self.ahead_pos < self.ahead_block.len || self.pending_len() > 0 || !self.raw.is_empty() {
            return Ok(None);
        }
        let (mut used, lent) = recycle(std::mem::take(&mut self.ahead_block), self.lend_size);
        self.to_lend.extend(lent);
        self.ahead_pos = 0;
        loop {
            let lend = self.take_lend();
            let Some(ahead) = self.ahead.as_ref() else {
                return Ok(None);
            };
            match ahead.next_block(used.take(), lend) {
                // The next lent `bytes`, full with the next `n` bytes of the body.
                Next::Block(Block {
                    buf: AheadBuf::Lent(lent),
                    len,
                }) if len == n && lent.len == n => {
                    if let Err(e) = self.decoder.decode(lent.as_slice()) {
                        return Err(self.fail(BodyFailure::Protocol(e)));
                    }
                    self.lent_out -= 1;
                    if self.decoder.is_done() {
                        self.end_ahead();
                    }
                    return Ok(Some(lent.obj.into_bound(py)));
                }
                Next::Block(block) => {
                    self.ahead_block = block;
                    return Ok(None);
                }
                Next::Done => {
                    self.ahead = None;
                    return Ok(None);
                }
                Next::Failed(f) => {
                    self.ahead = None;
                    return Err(self.fail(f));
                }
                Next::Empty => py.detach(|| ahead.wait()),
            }
        }
    }

    /// Keep `bytes` of `n` lent (to go with the next block asked), enough to cover what can
    /// be ahead; `app_left`: the body's bytes still to come where this read starts.
    fn lend(&mut self, py: Python<'_>, n: usize, app_left: u64) {
        if n != self.lend_size {
            self.lend_size = n;
            self.lent_out = 0;
            self.to_lend.clear();
            self.lend_replace = true;
        }
        self.lend_left = app_left;
        while self.lent_out < AHEAD_MAX / n + 2 {
            let Some(b) = LentBytes::new(py, n) else {
                break;
            };
            self.to_lend.push(b);
            self.lent_out += 1;
        }
    }

    /// What goes to the reader with the next block asked of it.
    fn take_lend(&mut self) -> Lend<LentBytes> {
        let replace = std::mem::take(&mut self.lend_replace);
        Lend {
            bufs: std::mem::take(&mut self.to_lend),
            app_left: self.lend_left,
            replace,
        }
    }
}

/// A block whose bytes are all taken, as the reader gets it back: one of its own to read
/// into again, or a lent `bytes` of the size now lent, to be lent again (others are let
/// go).
fn recycle(block: Block<LentBytes>, lend_size: usize) -> (Option<Vec<u8>>, Vec<LentBytes>) {
    match block.buf {
        AheadBuf::Own(own) => (Some(own), Vec::new()),
        AheadBuf::Lent(lent) if lent.len == lend_size => (None, vec![lent]),
        AheadBuf::Lent(_) => (None, Vec::new()),
    }
}
