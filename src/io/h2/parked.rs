//! Answers waiting for the client's window, held by the I/O layer instead of an app thread.
//!
//! A response block the stream's send window cannot take now is *parked*: its bytes stay with
//! the stream's reply (`stream.rs`) and a pump task on the loop sends them as the
//! client opens its window, while the app thread goes back to its work (the pool, or the
//! inline batch). Without this, a client announcing `SETTINGS_INITIAL_WINDOW_SIZE = 0` held one thread per
//! stream for `--write-timeout`: with inline calls a new driving thread per stream (1,207
//! threads for 12 connections × 100 streams), on the pool every pool thread, so that an
//! unrelated request waited for the timeout.
//!
//! Bounded twice ([`Parking::room_for`]): per connection by `--write-high-water` (what an
//! HTTP/1.1 answer may queue before its thread waits), and per server by
//! [`PARKED_PER_SERVER`]. Past the connection's bound, the app thread waits for room (for the
//! window, when it parks nothing itself), but never the last two threads of `--threads` (one
//! may be driving the event loop: a pool thread takes the loop when an inline call hands it
//! over): once all the others wait so, the bytes park past the connection's bound, within the
//! server's; past that too, the stream is reset (`CANCEL`, with a log line). So clients that
//! never open their window cannot hold every thread, and a request of another client always
//! finds one. A pump that gets no window for `--write-timeout` resets its stream (`CANCEL`);
//! if no parked answer of the connection moved for that long either, the connection is closed
//! (`conn.rs`): a client that never opens its window keeps nothing for longer.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use atomic_waker::AtomicWaker;

use crate::clock::now_ns;

/// The most response bytes parked across the server (all connections): past it, app threads
/// wait for the window as they would without parking. 64 MiB: 64 connections each at the
/// default `--write-high-water`.
pub const PARKED_PER_SERVER: usize = 64 * 1024 * 1024;

/// At most one log line of streams reset for want of room per this (nanoseconds): a client
/// may cause thousands a second.
const REFUSED_LOG_EVERY_NS: u64 = 1_000_000_000;

/// What parking counts across the server (all connections).
#[derive(Default)]
pub struct ServerParking {
    /// Response bytes parked.
    bytes: AtomicUsize,
    /// App threads waiting for room past the bounds (a [`WaitSeat`] each).
    waiting: AtomicUsize,
    /// Streams reset for want of both since the last log line, and when that line was written
    /// (`clock::now_ns`).
    refused: AtomicU64,
    logged_at: AtomicU64,
}

/// Where bytes past what the window takes now go ([`Parking::room_for`]).
pub(super) enum Room {
    /// Reserved: park them.
    Park,
    /// This thread may wait for room, holding the seat meanwhile.
    Wait(WaitSeat),
    /// Neither: every other thread already waits and the server's parking is full.
    Refused,
}

/// An app thread's place among those waiting past the bounds: given back when dropped.
pub(super) struct WaitSeat(Arc<ServerParking>);

impl Drop for WaitSeat {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One connection's share of parking: the runtime the pumps run on, the bounds, and the stall
/// watch.
pub struct Parking {
    tasks: Arc<crate::io::streams::tasks::TaskShared>,
    pub(super) write_timeout: Duration,
    /// `--write-high-water`: the most bytes this connection parks.
    conn_max: usize,
    conn_bytes: AtomicUsize,
    /// Across the server (`ThreadShare::parked`).
    server: Arc<ServerParking>,
    /// The most app threads that wait for room at once: all of `--threads` but two (at least
    /// one). With all but one, the pool thread left could be the one driving the event loop
    /// (an inline call that streams or waits hands the loop to an idle pool thread), and a
    /// dispatched call then found no thread until the write timeout.
    max_waiting: usize,
    /// When a pump of this connection last sent a piece (`clock::now_ns`; 0: never).
    last_progress: AtomicU64,
    /// A pump got no window for the write timeout: set by it, taken by the connection's task
    /// ([`Parking::poll_stalled`]), which `stall_waker` wakes.
    stalled: AtomicBool,
    stall_waker: AtomicWaker,
}

impl Parking {
    /// Called inside a task of the loop.
    pub(super) fn new(
        write_timeout: Duration,
        conn_max: usize,
        server: Arc<ServerParking>,
        threads_max: usize,
    ) -> Parking {
        Parking {
            tasks: crate::io::streams::tasks::current(),
            write_timeout,
            conn_max,
            conn_bytes: AtomicUsize::new(0),
            server,
            max_waiting: threads_max.saturating_sub(2).max(1),
            last_progress: AtomicU64::new(0),
            stalled: AtomicBool::new(false),
            stall_waker: AtomicWaker::new(),
        }
    }

    /// Where `n` more bytes go: parked within the bounds (the connection's, unless it parks
    /// nothing yet; the server's always); else this thread waits for room, unless every other
    /// thread of `--threads` already does; then parked past the connection's bound, within the
    /// server's; else refused.
    pub(super) fn room_for(&self, n: usize) -> Room {
        if self.try_reserve(n, false) {
            return Room::Park;
        }
        if self.server.waiting.fetch_add(1, Ordering::SeqCst) < self.max_waiting {
            return Room::Wait(WaitSeat(Arc::clone(&self.server)));
        }
        self.server.waiting.fetch_sub(1, Ordering::SeqCst);
        if self.try_reserve(n, true) {
            return Room::Park;
        }
        self.refused();
        Room::Refused
    }

    /// Take room for `n` more parked bytes: `false` past a bound (the connection's, unless it
    /// parks nothing yet or `past_conn`; the server's always).
    fn try_reserve(&self, n: usize, past_conn: bool) -> bool {
        let before = self.conn_bytes.fetch_add(n, Ordering::SeqCst);
        if !past_conn && before > 0 && before + n > self.conn_max {
            self.conn_bytes.fetch_sub(n, Ordering::SeqCst);
            return false;
        }
        let server = self.server.bytes.fetch_add(n, Ordering::SeqCst);
        if server + n > PARKED_PER_SERVER {
            self.server.bytes.fetch_sub(n, Ordering::SeqCst);
            self.conn_bytes.fetch_sub(n, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// A stream is reset for want of room: one log line a second at most, with the count.
    fn refused(&self) {
        let server = &self.server;
        server.refused.fetch_add(1, Ordering::SeqCst);
        let (now, last) = (now_ns(), server.logged_at.load(Ordering::SeqCst));
        if now.saturating_sub(last) < REFUSED_LOG_EVERY_NS
            || server
                .logged_at
                .compare_exchange(last, now, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
        {
            return;
        }
        let n = server.refused.swap(0, Ordering::SeqCst);
        eprintln!(
            "sluicegate: {n} HTTP/2 answer(s) reset (CANCEL): {} threads already wait for \
             clients' windows and {PARKED_PER_SERVER} bytes are parked (--threads, \
             --write-high-water, --write-timeout)",
            self.max_waiting
        );
    }

    /// `n` parked bytes were sent or dropped.
    pub(super) fn release(&self, n: usize) {
        if n > 0 {
            self.conn_bytes.fetch_sub(n, Ordering::SeqCst);
            self.server.bytes.fetch_sub(n, Ordering::SeqCst);
        }
    }

    /// Bytes parked on this connection now.
    pub(super) fn parked(&self) -> usize {
        self.conn_bytes.load(Ordering::SeqCst)
    }

    /// No parked answer of this connection moved for the write timeout.
    pub(super) fn stalled_now(&self) -> bool {
        let last = self.last_progress.load(Ordering::Relaxed);
        now_ns().saturating_sub(last) >= self.write_timeout.as_nanos() as u64
    }

    /// Whether `want` more bytes fit this connection's bound now.
    pub(super) fn has_room(&self, want: usize) -> bool {
        self.parked() + want <= self.conn_max
    }

    /// Start the pump of a reply that has just parked its first bytes (`stream::pump`), on the
    /// loop.
    pub(super) fn start_pump(&self, pump: impl std::future::Future<Output = ()> + Send + 'static) {
        self.tasks.spawn(pump);
    }

    /// A pump got no window for the write timeout: tell the connection's task.
    pub(super) fn stall(&self) {
        self.stalled.store(true, Ordering::SeqCst);
        self.stall_waker.wake();
    }

    /// The connection's task: ready once a pump stalled since the last time.
    pub(super) fn poll_stalled(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.stall_waker.register(cx.waker());
        if self.stalled.swap(false, Ordering::SeqCst) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// A pump sent a piece.
    pub(super) fn progressed(&self) {
        self.last_progress.store(now_ns(), Ordering::Relaxed);
    }
}
