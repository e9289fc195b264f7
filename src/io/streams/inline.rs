//! The queue of fast streams' calls the loop hands its driver, instead of handing each to the
//! pool (docs/architecture.md, "HTTP/2", has the measurement: the hand-off cost more than the
//! call).
//!
//! A connection's task queues a whole stream here ([`Inline::offer`]) while the server says
//! calls run inline now (`StreamRunner::inline_now`); the loop hands the queued calls out as
//! `Call::Stream`, after the HTTP/1.1 requests it has ready (`LoopState::next_work`,
//! `next_ready_call`), and the server runs them as any inline call (`server::drive`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::call::StreamCall;

/// The queue of streams to run inline.
pub struct Inline {
    calls: Mutex<VecDeque<Box<StreamCall>>>,
    /// How many calls are queued: the loop asks after each call and each poll of its tasks,
    /// and an empty queue costs it no lock.
    queued: AtomicUsize,
}

impl Inline {
    pub(crate) fn new() -> Inline {
        Inline {
            calls: Mutex::new(VecDeque::new()),
            queued: AtomicUsize::new(0),
        }
    }

    /// Queue a stream to run inline (a connection's task, HTTP/2's or HTTP/3's, on the loop's
    /// thread).
    pub(crate) fn offer(&self, call: StreamCall) {
        let mut calls = self.calls.lock().unwrap();
        calls.push_back(Box::new(call));
        self.queued.store(calls.len(), Ordering::Relaxed);
    }

    /// The next queued call.
    #[inline]
    pub fn pop(&self) -> Option<Box<StreamCall>> {
        if self.queued.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut calls = self.calls.lock().unwrap();
        let call = calls.pop_front();
        self.queued.store(calls.len(), Ordering::Relaxed);
        call
    }
}
