//! A worker's request limit (`--max-requests` with its jitter, uWSGI's `max-requests` and
//! `min-worker-lifetime`): the count is compared where it grows, at the start of each app call
//! and each answer the loop makes itself, so the worker retires with the request that reaches
//! the limit. A periodic look at the stats (the worker's Python side, `worker.py`) notices the
//! limit late: in between, the worker could accept and serve more requests.
//!
//! Retired (at the limit, or when `Server.retire` is called), the worker accepts no connection
//! (`event_loop::accept`) and ends keep-alive after every answer (`LoopCtx::keep_alive_ending`):
//! the answer that reaches the limit carries `Connection: close`, and the next client waits in
//! the shared backlog for a worker that serves. Its HTTP/2 and HTTP/3 connections are told as
//! at a graceful stop (`event_loop::h2_view`): a GOAWAY naming the streams accepted, the
//! streams in flight finished, then the close; its HTTP/3 endpoints refuse new connections or
//! route them to a worker that serves (`io::h3::route`). Requests already read when it
//! retires (other connections, other threads) are still answered.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// When a worker retires: after `requests` requests, but not before `not_before`.
#[derive(Default)]
pub struct RequestLimit {
    limit: OnceLock<(u64, Instant)>,
    retired: AtomicBool,
}

impl RequestLimit {
    /// Retire after `requests` requests (0: never), not before `min_age` from now. Set once,
    /// before serving; a second call changes nothing.
    pub fn set(&self, requests: u64, min_age: Duration) {
        if requests > 0 {
            let _ = self.limit.set((requests, Instant::now() + min_age));
        }
    }

    /// Whether the `count`th request retires the worker.
    pub fn reached_by(&self, count: u64) -> bool {
        self.limit
            .get()
            .is_some_and(|&(max, not_before)| count >= max && Instant::now() >= not_before)
    }

    /// From now on the worker retires. True the first time.
    pub fn retire(&self) -> bool {
        !self.retired.swap(true, Ordering::Relaxed)
    }

    /// Whether the worker retired: it accepts nothing more and keeps no connection alive.
    #[inline]
    pub fn retired(&self) -> bool {
        self.retired.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_that_reaches_the_limit_retires_the_worker() {
        let l = RequestLimit::default();
        l.set(2, Duration::ZERO);
        assert!(!l.reached_by(1));
        assert!(l.reached_by(2));
        assert!(l.reached_by(3));
    }

    #[test]
    fn no_limit_and_a_young_worker_never_reach_it() {
        let none = RequestLimit::default();
        none.set(0, Duration::ZERO);
        assert!(!none.reached_by(u64::MAX));
        let young = RequestLimit::default();
        young.set(1, Duration::from_secs(3600));
        assert!(!young.reached_by(5));
    }

    #[test]
    fn retiring_is_once() {
        let l = RequestLimit::default();
        assert!(!l.retired());
        assert!(l.retire());
        assert!(!l.retire());
        assert!(l.retired());
    }
}
