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

use super::inline_call::Settle;
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
    /// A thread about to drive the loop waits on this queue (`SharedOut::settle`): the app
    /// thread wakes it when it reaches the high-water mark or ends (else it need not: a
    /// condition variable's wake is a system call whether anyone waits or not).
    settling: bool,
    /// The app thread waits on this queue (`wait_drained`, `detach`): the loop's progress must
    /// wake it. Else the loop does not signal (a wake nobody waits for is still a `futex`
    /// call: half of the loop's on S3, one per batch written).
    app_waiting: bool,
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
    /// Signalled when the queue drains below the low-water mark or fails, when the app thread
    /// starts to wait for it (past the high-water mark), and when the request ends.
    drained: Condvar,
    low_water: u64,
    high_water: u64,
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
    /// `high_water`: past it the app thread waits until the loop has drained the queue to half.
    pub fn new(transport: &Transport, queue: OutQueue, high_water: u64) -> SharedOut {
        SharedOut {
            transport: transport.clone(),
            state: Mutex::new(SharedState {
                queue,
                writer: Writer::Loop,
                fate: Fate::Open,
                in_flight: 0,
                last_progress: Instant::now(),
                settling: false,
                app_waiting: false,
            }),
            drained: Condvar::new(),
            low_water: high_water / 2,
            high_water,
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
                    self.wake_app(&st);
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
                    if st.queue.pending() > self.low_water {
                        // Something was written before the socket filled up.
                        st.last_progress = Instant::now();
                    }
                    // (`detach` waits for the end of the write whatever the backlog.)
                    self.wake_app(&st);
                    return FlushResult::Blocked;
                }
                Err(_) => {
                    st.fail();
                    st.writer = Writer::Nobody;
                    self.wake_app(&st);
                    return FlushResult::Done;
                }
            }
            if st.queue.pending() <= self.low_water {
                self.wake_app(&st);
            }
        }
    }

    /// Wake the app thread if it waits on this queue (`app_waiting`), under the lock.
    fn wake_app(&self, st: &SharedState) {
        if st.app_waiting {
            self.drained.notify_all();
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
            st.app_waiting = true;
            st = self.drained.wait(st).unwrap();
        }
        st.app_waiting = false;
        let failed = st.failed();
        st.fate = Fate::Detached { failed };
        if st.settling {
            // A loop thread settling on this queue (`settle`) stops waiting.
            self.drained.notify_all();
        }
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
        if st.settling {
            // A loop thread settling on this queue (`settle`) starts writing now.
            self.drained.notify_all();
        }
        while !st.failed() && Self::backlog(&st) > self.low_water {
            st.app_waiting = true;
            let (g, res) = self.drained.wait_timeout(st, timeout).unwrap();
            st = g;
            if res.timed_out() && st.last_progress.elapsed() >= timeout {
                st.fail();
            }
        }
        st.app_waiting = false;
        !st.failed()
    }

    /// Called by a thread about to drive the event loop, just handed over by an inline call
    /// whose response began to stream on this queue (the call goes on producing blocks): wait,
    /// serving nothing yet, while the app thread keeps adding, so that the first writes leave
    /// in large batches. The wait ends when the app thread reaches the high-water mark (it
    /// would wait for the loop), when the request ends or fails, when `gap` passes without a
    /// new block (a producer that sleeps or waits between blocks: its block leaves then), and
    /// at `most` in any case (a producer holding the GIL inside one C call must not stop the
    /// loop for longer).
    ///
    /// Why: before the loop could be driven without the GIL, the new thread waited for the
    /// GIL here, which the producer held until it reached the high-water mark (or CPython's
    /// 5 ms switch interval); the loop then wrote the first megabyte in one go. Serving at
    /// once, the loop wrote each block as it came: 12–22 writes per 2.5 MB response instead of
    /// 5–9, and 16% more server CPU per response (S3).
    pub fn settle(&self, most: Duration, gap: Duration) {
        let end = Instant::now() + most;
        let mut st = self.state.lock().unwrap();
        let mut seen = Self::backlog(&st);
        let mut grew = Instant::now();
        st.settling = true;
        loop {
            if st.fate != Fate::Open || Self::backlog(&st) > self.high_water {
                break;
            }
            let now = Instant::now();
            let quiet_until = grew + gap;
            if now >= end || now >= quiet_until {
                break;
            }
            // A wake-up with the backlog unchanged (a spurious one) waits out the rest of `gap`.
            st = self
                .drained
                .wait_timeout(st, (quiet_until - now).min(end - now))
                .unwrap()
                .0;
            let backlog = Self::backlog(&st);
            if backlog != seen {
                seen = backlog;
                grew = Instant::now();
            }
        }
        st.settling = false;
    }
}

impl Settle for SharedOut {
    fn settle(&self, most: Duration, gap: Duration) {
        SharedOut::settle(self, most, gap);
    }
}

#[cfg(test)]
mod tests {
    //! `settle`: which events end the wait of a loop thread on a streaming response's queue.
    //! The bounds that would end it anyway are set far beyond the test, so each case ends only
    //! by the event it names.

    use std::sync::Arc;
    use std::thread;
    use std::time::Duration;

    use super::{OutQueue, SharedOut, Transport};

    const FOREVER: Duration = Duration::from_secs(3600);
    const HIGH: u64 = 64 * 1024;

    fn queue() -> Arc<SharedOut> {
        // An fd nobody writes: settle never touches the socket.
        Arc::new(SharedOut::new(&Transport::Plain(-1), OutQueue::new(), HIGH))
    }

    fn add(out: &SharedOut, n: usize) -> u64 {
        let mut st = out.state.lock().unwrap();
        st.queue.push_owned(vec![b'x'; n]);
        SharedOut::backlog(&st)
    }

    #[test]
    fn ends_when_the_producer_passes_the_high_water_mark() {
        let out = queue();
        let producer = {
            let out = Arc::clone(&out);
            thread::spawn(move || {
                // Once the loop thread settles: 8 KiB blocks up to past the mark, then the wait
                // a producer makes there (ended below by the test; a short timeout of its own
                // could fail and clear the queue before the test reads it).
                while !out.state.lock().unwrap().settling {
                    thread::yield_now();
                }
                while add(&out, 8192) <= HIGH {}
                out.wait_drained(FOREVER);
            })
        };
        out.settle(FOREVER, FOREVER);
        assert!(SharedOut::backlog(&out.state.lock().unwrap()) > HIGH);
        assert!(out.expire(Duration::ZERO), "the producer's wait ends");
        producer.join().unwrap();
    }

    #[test]
    fn ends_when_the_request_ends() {
        let out = queue();
        let producer = {
            let out = Arc::clone(&out);
            thread::spawn(move || {
                add(&out, 100);
                out.detach()
            })
        };
        out.settle(FOREVER, FOREVER);
        let (rest, failed) = producer.join().unwrap();
        assert!(!failed);
        assert_eq!(rest.pending(), 100);
    }

    #[test]
    fn ends_when_no_block_comes_within_the_gap() {
        // A producer that sleeps between blocks: its block must not wait for the next one.
        let out = queue();
        add(&out, 100);
        out.settle(FOREVER, Duration::from_millis(1));
        assert_eq!(SharedOut::backlog(&out.state.lock().unwrap()), 100);
    }

    #[test]
    fn ends_at_its_bound_while_blocks_keep_coming() {
        let out = queue();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let producer = {
            let (out, stop) = (Arc::clone(&out), Arc::clone(&stop));
            thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    add(&out, 1);
                    thread::sleep(Duration::from_micros(50));
                }
            })
        };
        out.settle(Duration::from_millis(5), FOREVER);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        producer.join().unwrap();
    }
}
