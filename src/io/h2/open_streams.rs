//! One connection's streams still open, as its task on the loop knows them: at the end
//! of a stop's graceful time (or at an immediate stop) every one of them is reset with
//! `RST_STREAM(CANCEL)`, after the GOAWAY the stop sent, so that the client can tell a cut
//! answer from a whole one, and the cut streams are counted (the stop's log line says how many,
//! as it does for HTTP/1.1 requests).
//!
//! Only the connection's task touches it: no lock. Streams whose replies are gone are pruned as
//! the list grows, so it holds about the streams in flight, not every stream the connection
//! ever carried.

use super::stream::StreamWatch;

/// The list is pruned of gone replies when it reaches this many entries (and at twice what
/// was left after the last pruning, so pruning costs O(1) per stream however many are open).
const PRUNE_FROM: usize = 64;

pub(super) struct OpenStreams {
    watches: Vec<StreamWatch>,
    prune_at: usize,
}

impl OpenStreams {
    pub fn new() -> OpenStreams {
        OpenStreams {
            watches: Vec::new(),
            prune_at: PRUNE_FROM,
        }
    }

    /// A stream was accepted and handed to its call.
    pub fn add(&mut self, watch: StreamWatch) {
        if self.watches.len() >= self.prune_at {
            self.watches.retain(|w| !w.gone());
            self.prune_at = (self.watches.len() * 2).max(PRUNE_FROM);
        }
        self.watches.push(watch);
    }

    /// Reset every stream still open: how many were.
    pub fn cancel_all(&mut self) -> usize {
        self.watches.drain(..).filter(|w| w.cancel()).count()
    }
}
