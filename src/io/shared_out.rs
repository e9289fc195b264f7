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

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use super::out_queue::{OutQueue, FAIR_SHARE};
use super::transport::Transport;

/// Who writes the queue next.
///
/// The rule for the socket: from the moment the queue is shared until `detach`, only the event
/// loop writes the fd (in `flush`, in states `Loop`/`LoopWriting`); the app thread only adds
/// to the queue. Before sharing, the app thread writes it itself (the sender's direct stage);
/// after `detach`, the connection and whoever owns it do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Writer {
    /// Nobody has the queue in hand: whoever adds to it must ask the loop
    /// (`LoopCtx::request_flush`).
    Nobody,
    /// The loop has it in hand: it will write what is added.
    Loop,
    /// The loop is writing a batch it took out of the queue, without the lock held (`detach`
    /// waits for it to end).
    LoopWriting,
}

/// Whether the output can still reach the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Open,
    /// The socket failed (client gone) or timed out: the app thread stops producing.
    Failed,
    /// The request ended: the app thread took what was left; the loop forgets this queue.
    Detached {
        failed: bool,
    },
}

/// The queue and what both sides need to know about it.
pub struct SharedState {
    pub queue: OutQueue,
    writer: Writer,
    fate: Fate,
    /// Bytes of the batch being written (counted for backpressure).
    in_flight: u64,
    /// When the loop last wrote something (for the write timeout).
    pub last_progress: Instant,
}

impl SharedState {
    /// The output can no longer reach the client.
    pub fn failed(&self) -> bool {
        matches!(self.fate, Fate::Failed | Fate::Detached { failed: true })
    }

    /// Called by the app thread after adding to the queue: make the loop write it. Returns
    /// true when the loop must be asked (nobody had the queue in hand).
    pub fn hand_to_loop(&mut self) -> bool {
        let ask = self.writer == Writer::Nobody;
        if ask {
            self.writer = Writer::Loop;
        }
        ask
    }

    fn fail(&mut self) {
        if self.fate == Fate::Open {
            self.fate = Fate::Failed;
        }
        self.queue.clear();
    }
}

pub struct SharedOut {
    /// The connection the loop writes to (`Transport::write_some`: plain or TLS).
    pub transport: Transport,
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
    /// A fair share was written and more is queued: look again after the other connections.
    More,
    /// Failed, or detached: forget it.
    Done,
}

impl SharedOut {
    pub fn new(transport: &Transport, queue: OutQueue, low_water: u64) -> SharedOut {
        SharedOut {
            transport: transport.clone(),
            state: Mutex::new(SharedState {
                queue,
                writer: Writer::Loop,
                fate: Fate::Open,
                in_flight: 0,
                last_progress: Instant::now(),
            }),
            drained: Condvar::new(),
            low_water,
        }
    }

    /// Called by the event loop: write what the socket takes. The batch is taken out of the
    /// queue and written without the lock held, so the app thread adding blocks never waits for
    /// a syscall; what the socket did not take goes back in front of what was added meanwhile.
    pub fn flush(&self) -> FlushResult {
        // TLS: records left in the session by a write the socket cut short go first, even
        // when the queue is empty (the app may be between blocks for a long time).
        if let Transport::Tls(link) = &self.transport {
            if link.has_output() {
                match link.write_some(&mut OutQueue::new()) {
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        return FlushResult::Blocked
                    }
                    Err(_) => return FlushResult::Done,
                    Ok(_) => {}
                }
            }
        }
        let mut written = 0u64;
        loop {
            if written >= FAIR_SHARE {
                return FlushResult::More;
            }
            let mut batch = {
                let mut st = self.state.lock().unwrap();
                if st.fate != Fate::Open {
                    st.writer = Writer::Nobody;
                    return FlushResult::Done;
                }
                if st.queue.is_empty() {
                    st.writer = Writer::Nobody;
                    self.drained.notify_all();
                    return FlushResult::Empty;
                }
                st.queue.close_chunk();
                st.writer = Writer::LoopWriting;
                st.in_flight = st.queue.pending();
                std::mem::take(&mut st.queue)
            };
            let res = loop {
                if batch.is_empty() {
                    break Ok(());
                }
                match self.transport.write_some(&mut batch) {
                    Ok(n) => {
                        written += n as u64;
                        if written >= FAIR_SHARE {
                            break Ok(());
                        }
                    }
                    Err(e) => break Err(e),
                }
            };
            let mut st = self.state.lock().unwrap();
            st.writer = Writer::Loop;
            st.in_flight = 0;
            if !batch.is_empty() {
                batch.append(&mut st.queue);
                st.queue = batch;
            }
            match res {
                Ok(()) => st.last_progress = Instant::now(),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if st.queue.pending() <= self.low_water {
                        self.drained.notify_all();
                    } else {
                        // Something was written before the socket filled up.
                        st.last_progress = Instant::now();
                    }
                    self.drained.notify_all();
                    return FlushResult::Blocked;
                }
                Err(_) => {
                    st.fail();
                    st.writer = Writer::Nobody;
                    self.drained.notify_all();
                    return FlushResult::Done;
                }
            }
            if st.queue.pending() <= self.low_water {
                self.drained.notify_all();
            }
        }
    }

    /// Bytes queued or being written (for the high-water check).
    pub fn backlog(st: &SharedState) -> u64 {
        st.queue.pending() + st.in_flight
    }

    /// Called by the app thread at the end of the request: wait out a write in progress (a
    /// syscall), then take what is left, in order, and tell the loop to forget the queue.
    pub fn detach(&self) -> (OutQueue, bool) {
        let mut st = self.state.lock().unwrap();
        while st.writer == Writer::LoopWriting {
            st = self.drained.wait(st).unwrap();
        }
        let failed = st.failed();
        st.fate = Fate::Detached { failed };
        (std::mem::take(&mut st.queue), failed)
    }

    /// Called by the event loop when the write timeout passed without progress.
    pub fn expire(&self, timeout: Duration) -> bool {
        let mut st = self.state.lock().unwrap();
        if st.fate == Fate::Open && st.last_progress.elapsed() >= timeout {
            st.fail();
            self.drained.notify_all();
            return true;
        }
        st.fate != Fate::Open
    }

    /// Called by the app thread (without the GIL): wait until the queue is at most the low-water
    /// mark, or failed. Returns false if it failed or the write timeout passed.
    pub fn wait_drained(&self, timeout: Duration) -> bool {
        let mut st = self.state.lock().unwrap();
        while !st.failed() && Self::backlog(&st) > self.low_water {
            let (g, res) = self.drained.wait_timeout(st, timeout).unwrap();
            st = g;
            if res.timed_out() && st.last_progress.elapsed() >= timeout {
                st.fail();
            }
        }
        !st.failed()
    }
}
