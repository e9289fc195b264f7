//! An output queue shared by the thread running an app and the event loop, for responses that
//! stream while the socket is busy.
//!
//! A streaming app's blocks are written straight to the socket by the app thread as long as the
//! socket takes them (no hand-off at all). The first time the socket is full, the queue becomes
//! shared: the app thread keeps adding blocks, and the event loop writes them whenever the socket
//! becomes writable, so a block is never held back waiting for the next one (PEP 3333,
//! "Buffering and Streaming") even if the app then sleeps, and every block that piled up while
//! the socket was busy leaves in the same `writev`. When more than the high-water mark is queued,
//! the app thread waits (with the GIL released) until the loop has drained it below the
//! low-water mark: memory stays bounded for a slow client.

use std::os::fd::RawFd;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use super::out_queue::OutQueue;

/// The queue and what both sides need to know about it.
pub struct SharedState {
    pub queue: OutQueue,
    /// The socket failed (client gone) or timed out: the app thread stops producing.
    pub failed: bool,
    /// The request ended: the app thread took what was left; the loop forgets this queue.
    pub detached: bool,
    /// When the loop last wrote something (for the write timeout).
    pub last_progress: Instant,
}

pub struct SharedOut {
    pub fd: RawFd,
    pub state: Mutex<SharedState>,
    /// Signalled when the queue drains below the low-water mark or fails.
    drained: Condvar,
    low_water: u64,
}

/// What one flush attempt by the loop found.
#[derive(Debug, PartialEq, Eq)]
pub enum FlushResult {
    /// Everything written: the loop can forget the queue until the app thread asks again.
    Empty,
    /// The socket is full: wait for a writable edge.
    Blocked,
    /// Failed, or detached: forget it.
    Done,
}

impl SharedOut {
    pub fn new(fd: RawFd, queue: OutQueue, low_water: u64) -> SharedOut {
        SharedOut {
            fd,
            state: Mutex::new(SharedState {
                queue,
                failed: false,
                detached: false,
                last_progress: Instant::now(),
            }),
            drained: Condvar::new(),
            low_water,
        }
    }

    /// Called by the event loop: write what the socket takes.
    pub fn flush(&self) -> FlushResult {
        let mut st = self.state.lock().unwrap();
        if st.detached || st.failed {
            return FlushResult::Done;
        }
        let result = loop {
            if st.queue.is_empty() {
                break FlushResult::Empty;
            }
            match st.queue.write_fd(self.fd) {
                Ok(_) => st.last_progress = Instant::now(),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break FlushResult::Blocked,
                Err(_) => {
                    st.failed = true;
                    st.queue.clear();
                    break FlushResult::Done;
                }
            }
        };
        if st.failed || st.queue.pending() <= self.low_water {
            self.drained.notify_all();
        }
        result
    }

    /// Called by the event loop when the write timeout passed without progress.
    pub fn expire(&self, timeout: Duration) -> bool {
        let mut st = self.state.lock().unwrap();
        if !st.detached && !st.failed && st.last_progress.elapsed() >= timeout {
            st.failed = true;
            st.queue.clear();
            self.drained.notify_all();
            return true;
        }
        st.detached || st.failed
    }

    /// Called by the app thread (without the GIL): wait until the queue is at most the low-water
    /// mark, or failed. Returns false if it failed or the write timeout passed.
    pub fn wait_drained(&self, timeout: Duration) -> bool {
        let mut st = self.state.lock().unwrap();
        while !st.failed && st.queue.pending() > self.low_water {
            let (g, res) = self.drained.wait_timeout(st, timeout).unwrap();
            st = g;
            if res.timed_out() && st.last_progress.elapsed() >= timeout {
                st.failed = true;
                st.queue.clear();
            }
        }
        !st.failed
    }
}
