//! The read-ahead hand-over of a large body: when to start a reader thread
//! (`io::read_ahead`), taking its blocks into the app's reads, and settling what it read when
//! the body is read otherwise or ends (what it read past a chunked body's end goes back to the
//! read buffer). An `impl BodyState` block of its own, so that `mod.rs` keeps the decoding and
//! the reads the app makes.

use pyo3::prelude::*;
use sluicegate_proto::ProtoError;

use super::{BodyState, LARGE_UPLOAD};
use crate::io::read_ahead::{BodyFailure, Next, Pacing, ReadAhead, Until};

/// A Content-Length body with at least this much still to come, once it has brought
/// [`LARGE_UPLOAD`], is read ahead of the app on a thread of its own (`io::read_ahead`); so is any
/// chunked body that has brought [`LARGE_UPLOAD`] (its length is unknown).
const READ_AHEAD_FROM: u64 = 1024 * 1024;

impl BodyState {
    /// Stop the reader thread, if one runs, and keep what it read as decoded bytes waiting
    /// (`pending`): the ways of reading other than `read_into` (lines, draining) go on from
    /// there, through the read buffer.
    pub(super) fn settle_ahead(&mut self) {
        if self.ahead.is_none() && self.ahead_pos == self.ahead_block.len() {
            return;
        }
        let (blocks, end) = match self.ahead.take() {
            Some(ahead) => ahead.finish(),
            None => (Vec::new(), None),
        };
        let current = std::mem::take(&mut self.ahead_block);
        let rest = current[self.ahead_pos..].to_vec();
        self.ahead_pos = 0;
        if self.pending_pos == self.pending.len() {
            self.pending.clear();
            self.pending_pos = 0;
        }
        for block in std::iter::once(rest).chain(blocks) {
            if let Err(e) = self.decode_block(&block) {
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
        if self.ahead_pos < rest.len() {
            self.raw.append(&rest[self.ahead_pos..]);
        }
        self.ahead_pos = 0;
        if let Some(ahead) = self.ahead.take() {
            let (blocks, _) = ahead.finish();
            for block in blocks {
                self.raw.append(&block);
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
            if self.ahead_pos < self.ahead_block.len() {
                // No more input than `dst` has room: the data a step returns is a slice of its
                // input, so it always fits (a Content-Length step returns its input as it is).
                let end = (self.ahead_pos + dst.len()).min(self.ahead_block.len());
                let step = match self.decoder.decode(&self.ahead_block[self.ahead_pos..end]) {
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
            let Some(ahead) = self.ahead.as_ref() else {
                return Ok(0);
            };
            // The current block is all taken: it goes back to the reader with the asking.
            self.ahead_pos = 0;
            match ahead.next_block(std::mem::take(&mut self.ahead_block)) {
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
}
