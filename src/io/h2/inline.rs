//! The inline path for fast streams: the HTTP/2 thread runs ready streams' app calls itself,
//! several per GIL take, instead of handing each to the pool (docs/architecture.md, "HTTP/2",
//! has the measurement: the hand-off cost more than the call).
//!
//! The *driver role*: one thread at a time drives the tokio runtime (every connection's task)
//! and runs the inline calls. It alternates: [`H2Hub::next_batch`](super::H2Hub::next_batch)
//! drives the runtime until streams were queued here ([`Inline::offer`], from the connection
//! tasks) and every task that was ready has run; then, outside the runtime, the thread runs up
//! to a batch of queued calls ([`Inline::begin`], [`Inline::next_call`], [`Inline::end`]). The
//! runtime is left free meanwhile (a current-thread runtime is driven by whichever thread
//! calls `block_on`), so a call that blocks can be *taken over* ([`Inline::take`]): the role
//! moves to a new thread, which drives the connections on and sends the calls still queued to
//! the pool, while the stuck call finishes on its own thread, which then leaves. The server
//! floor decides when (`server::h2_inline`: the watchdog's rule, asleep in the kernel for a
//! tick), as for an HTTP/1.1 inline call; this file only keeps the role's state.
//!
//! The role's sequence number is odd exactly while its thread runs inline calls (like the
//! scheduler's `inline_seq`): the same odd number at two looks is one batch spanning a tick.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use super::call::StreamCall;

thread_local! {
    /// This thread's kernel id, asked once (a system call per batch otherwise).
    static TID: std::cell::Cell<i32> = const { std::cell::Cell::new(0) };
}

fn this_tid() -> i32 {
    TID.with(|t| {
        if t.get() == 0 {
            // SAFETY: gettid has no preconditions.
            t.set(unsafe { libc::gettid() });
        }
        t.get()
    })
}

/// What [`next_batch`](super::H2Hub::next_batch) found.
#[derive(Debug, PartialEq, Eq)]
pub enum Batch {
    /// Streams are queued to run.
    Calls,
    /// Every connection has closed after a stop: the HTTP/2 thread's work is over.
    Done,
}

/// The queue of streams to run inline, and who runs them.
pub struct Inline {
    queue: Mutex<Queue>,
    /// The role's number: odd while its thread runs inline calls (the runtime left undriven).
    seq: AtomicU64,
    /// Kernel thread id of the thread that runs them (for the watchdog's look in /proc).
    tid: AtomicI32,
    /// The watchdog sleeps while no batch runs for long (`doze`); `begin` wakes it.
    dozing: AtomicBool,
    /// A takeover could not start its thread: the role goes back to the thread it was taken
    /// from, when its call returns.
    orphaned: AtomicBool,
    /// Threads that lost the role and still finish their call (then leave): bounded by the
    /// server floor (`server::h2_inline`), with the pool's, by `--threads`.
    pub left_behind: AtomicUsize,
    doze_lock: Mutex<()>,
    doze_cond: Condvar,
}

struct Queue {
    calls: VecDeque<StreamCall>,
}

impl Inline {
    pub(super) fn new() -> Inline {
        Inline {
            queue: Mutex::new(Queue {
                calls: VecDeque::new(),
            }),
            seq: AtomicU64::new(0),
            tid: AtomicI32::new(0),
            dozing: AtomicBool::new(false),
            orphaned: AtomicBool::new(false),
            left_behind: AtomicUsize::new(0),
            doze_lock: Mutex::new(()),
            doze_cond: Condvar::new(),
        }
    }

    /// Queue a stream to run inline (a connection's task, on the driving thread). Only the
    /// first call of a batch wakes the driver's wait.
    pub(super) fn offer(&self, call: StreamCall) {
        self.queue.lock().unwrap().calls.push_back(call);
    }

    /// Whether calls are queued (the loop asks after polling its tasks).
    pub fn has_calls(&self) -> bool {
        !self.queue.lock().unwrap().calls.is_empty()
    }

    /// The next queued call.
    pub fn pop(&self) -> Option<StreamCall> {
        self.queue.lock().unwrap().calls.pop_front()
    }

    /// Take every queued call (to send them to the pool).
    pub fn drain(&self) -> Vec<StreamCall> {
        self.queue.lock().unwrap().calls.drain(..).collect()
    }

    /// The calling thread starts running a batch: the role's number, odd until [`end`].
    ///
    /// [`end`]: Inline::end
    pub fn begin(&self) -> u64 {
        self.tid.store(this_tid(), Ordering::Relaxed);
        let seq = {
            let _q = self.queue.lock().unwrap();
            self.seq.fetch_add(1, Ordering::SeqCst) + 1
        };
        if self.dozing.load(Ordering::SeqCst) {
            let _g = self.doze_lock.lock().unwrap();
            self.dozing.store(false, Ordering::SeqCst);
            self.doze_cond.notify_one();
        }
        seq
    }

    /// The next call of the batch begun as `seq`; `None` once the queue is empty or the role
    /// was taken from this thread.
    pub fn next_call(&self, seq: u64) -> Option<StreamCall> {
        let mut q = self.queue.lock().unwrap();
        if self.seq.load(Ordering::SeqCst) != seq {
            return None;
        }
        q.calls.pop_front()
    }

    /// The batch begun as `seq` is over: `true` if this thread still has the role (it drives
    /// the runtime on), `false` if it was taken (the thread leaves).
    pub fn end(&self, seq: u64) -> bool {
        self.give_up(seq) || self.orphaned.swap(false, Ordering::SeqCst)
    }

    /// The thread meant to take the role (after [`take`](Inline::take)) could not start.
    pub fn orphan(&self) {
        self.orphaned.store(true, Ordering::SeqCst);
    }

    /// Take the role from the thread running the batch `seq` (the watchdog: it blocks; or the
    /// call itself, about to wait for the connection's I/O): `true` if taken, and the caller
    /// must start a new driving thread.
    pub fn take(&self, seq: u64) -> bool {
        self.give_up(seq)
    }

    fn give_up(&self, seq: u64) -> bool {
        let _q = self.queue.lock().unwrap();
        self.seq
            .compare_exchange(seq, seq + 1, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// The role's number now, and the thread running the batch (meaningful while odd).
    pub fn look(&self) -> (u64, i32) {
        (
            self.seq.load(Ordering::SeqCst),
            self.tid.load(Ordering::Relaxed),
        )
    }

    /// The watchdog: sleep until a batch begins (or `wake_watch`), unless one began since `seq`.
    pub fn doze(&self, seq: u64, stop: &AtomicBool) {
        let mut g = self.doze_lock.lock().unwrap();
        self.dozing.store(true, Ordering::SeqCst);
        if self.seq.load(Ordering::SeqCst) != seq {
            self.dozing.store(false, Ordering::SeqCst);
        }
        while self.dozing.load(Ordering::SeqCst) && !stop.load(Ordering::SeqCst) {
            g = self.doze_cond.wait(g).unwrap();
        }
    }

    /// Wake a dozing watchdog (at a stop).
    pub fn wake_watch(&self) {
        let _g = self.doze_lock.lock().unwrap();
        self.dozing.store(false, Ordering::SeqCst);
        self.doze_cond.notify_all();
    }
}
