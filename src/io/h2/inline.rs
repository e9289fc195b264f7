//! The inline path for fast streams: the queue of whole requests the loop's thread runs
//! itself, several per GIL take, instead of handing each to the pool (docs/architecture.md,
//! "HTTP/2", has the measurement: the hand-off cost more than the call).
//!
//! A connection's task queues a stream here ([`Inline::offer`]); after polling its tasks the
//! loop hands its driver `Turn::Streams` while the queue is not empty, and the server floor
//! runs the calls (`server::h2_inline`), the loop parked around each as for an HTTP/1.1 inline
//! call. This file only keeps the queue, and the count of calls that gave the loop away to wait
//! for their connection ([`Inline::left_behind`], bounded by the server floor).

use std::collections::VecDeque;
use std::sync::atomic::AtomicUsize;
use std::sync::Mutex;

use super::call::StreamCall;

/// The queue of streams to run inline.
pub struct Inline {
    calls: Mutex<VecDeque<StreamCall>>,
    /// Calls that gave the loop to another thread and still wait in their call: bounded by
    /// the server floor (`server::h2_inline`), with the pool's threads, by `--threads`.
    pub left_behind: AtomicUsize,
}

impl Inline {
    pub(super) fn new() -> Inline {
        Inline {
            calls: Mutex::new(VecDeque::new()),
            left_behind: AtomicUsize::new(0),
        }
    }

    /// Queue a stream to run inline (a connection's task, HTTP/2's or HTTP/3's, on the loop's
    /// thread).
    pub(crate) fn offer(&self, call: StreamCall) {
        self.calls.lock().unwrap().push_back(call);
    }

    /// Whether calls are queued (the loop asks after polling its tasks).
    pub fn has_calls(&self) -> bool {
        !self.calls.lock().unwrap().is_empty()
    }

    /// The next queued call.
    pub fn pop(&self) -> Option<StreamCall> {
        self.calls.lock().unwrap().pop_front()
    }

    /// Take every queued call (to send them to the pool).
    pub fn drain(&self) -> Vec<StreamCall> {
        self.calls.lock().unwrap().drain(..).collect()
    }
}
