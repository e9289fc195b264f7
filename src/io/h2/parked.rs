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
//! Bounded twice ([`Parking::try_reserve`]): per connection by `--write-high-water` (what an
//! HTTP/1.1 answer may queue before its thread waits), and per server by
//! [`PARKED_PER_SERVER`]. Past either, the app thread waits for room (for the window, when it
//! parks nothing itself), within `--threads`. A pump that gets no window for `--write-timeout` resets its stream (`CANCEL`); if no
//! parked answer of the connection moved for that long either, the connection is closed
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

/// One connection's share of parking: the runtime the pumps run on, the bounds, and the stall
/// watch.
pub struct Parking {
    tasks: Arc<super::tasks::TaskShared>,
    pub(super) write_timeout: Duration,
    /// `--write-high-water`: the most bytes this connection parks.
    conn_max: usize,
    conn_bytes: AtomicUsize,
    /// Parked across the server (`ThreadShare::parked`).
    server_bytes: Arc<AtomicUsize>,
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
        server_bytes: Arc<AtomicUsize>,
    ) -> Parking {
        Parking {
            tasks: super::tasks::current(),
            write_timeout,
            conn_max,
            conn_bytes: AtomicUsize::new(0),
            server_bytes,
            last_progress: AtomicU64::new(0),
            stalled: AtomicBool::new(false),
            stall_waker: AtomicWaker::new(),
        }
    }

    /// Take room for `n` more parked bytes: `false` past a bound (the connection's, unless it
    /// parks nothing yet; the server's always).
    pub(super) fn try_reserve(&self, n: usize) -> bool {
        let before = self.conn_bytes.fetch_add(n, Ordering::SeqCst);
        if before > 0 && before + n > self.conn_max {
            self.conn_bytes.fetch_sub(n, Ordering::SeqCst);
            return false;
        }
        let server = self.server_bytes.fetch_add(n, Ordering::SeqCst);
        if server + n > PARKED_PER_SERVER {
            self.server_bytes.fetch_sub(n, Ordering::SeqCst);
            self.conn_bytes.fetch_sub(n, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// `n` parked bytes were sent or dropped.
    pub(super) fn release(&self, n: usize) {
        if n > 0 {
            self.conn_bytes.fetch_sub(n, Ordering::SeqCst);
            self.server_bytes.fetch_sub(n, Ordering::SeqCst);
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
