//! The event loop's task set: the futures the loop polls itself (each HTTP/2 connection's
//! task, the pumps of parked answers, own answers; HTTP/3's endpoints and connections, whose
//! runtime this is: `io::h3::runtime`), with no runtime of their own.
//!
//! A task is polled when its waker was called: by the loop, for an epoll event on the socket
//! registered under the task's token ([`Tasks::wake`]), or by anything else (the `h2` crate's
//! stream handles on an app thread, a timer, a pump), which pushes the task's key onto the
//! woken list ([`TaskShared`]) and rings the loop's waker only if the loop is asleep in
//! `epoll_wait` or about to be ([`Tasks::before_wait`]): a wake on the loop's own thread, or
//! while the loop runs, costs no system call.
//!
//! Timers are the loop's too (`timer.rs`, one heap per task set): the loop's wait ends at
//! the earliest one ([`Tasks::next_due`]) and fires those due ([`Tasks::run`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

use slab::Slab;

use super::stop::{Stop, StopSignal};
use super::timer::{self, Timers};

/// A task: a future the loop polls until it ends.
pub type Task = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Rounds of polling woken tasks per turn of the loop, at most: a task woken again and again
/// (a connection whose client never stops sending) yields the loop to the other connections'
/// events after this many.
const ROUNDS_PER_TURN: usize = 4;

/// What wakers, timers and spawners on any thread share with the loop.
pub struct TaskShared {
    woken: Mutex<Vec<usize>>,
    spawned: Mutex<Vec<Task>>,
    /// The loop is in `epoll_wait`, or about to be: a wake from outside rings it.
    sleeping: AtomicBool,
    ring: Arc<mio::Waker>,
    timers: Arc<Timers>,
    /// The stop every connection task of the set hears (`stop.rs`).
    stop: StopSignal,
}

impl TaskShared {
    fn push_woken(&self, key: usize) {
        self.woken.lock().unwrap().push(key);
        if self.sleeping.load(Ordering::SeqCst) {
            let _ = self.ring.wake();
        }
    }

    /// The task set's timers (`timer.rs`).
    pub fn timers(&self) -> &Arc<Timers> {
        &self.timers
    }

    /// The stop as this set's connection tasks hear it (a new connection subscribes).
    pub fn stop(&self) -> &StopSignal {
        &self.stop
    }

    /// Start a task on the loop (from any thread).
    pub fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        self.spawned.lock().unwrap().push(Box::pin(task));
        if self.sleeping.load(Ordering::SeqCst) {
            let _ = self.ring.wake();
        }
    }
}

/// One task's waker: queues its key once until the task is polled again.
struct TaskWaker {
    key: usize,
    queued: AtomicBool,
    shared: Arc<TaskShared>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            self.shared.push_woken(self.key);
        }
    }
}

struct Slot {
    task: Task,
    waker: Arc<TaskWaker>,
    /// The task's socket's readiness, set from the loop's events.
    ready: Option<Arc<Readiness>>,
}

/// [`Readiness`]: the socket may be read.
pub const READ: u8 = 1;
/// [`Readiness`]: the socket may be written.
pub const WRITE: u8 = 2;

/// A task's socket as the loop's edge-triggered epoll reported it: a bit is set by an event
/// and cleared by the read or write that finds the socket empty or full, so a task polled for
/// another reason (an app thread's DATA) makes no read that can only fail. Touched on the
/// loop's thread only (the task is polled there).
pub struct Readiness(std::sync::atomic::AtomicU8);

impl Readiness {
    pub fn new() -> Arc<Readiness> {
        Arc::new(Readiness(std::sync::atomic::AtomicU8::new(READ | WRITE)))
    }
    pub fn has(&self, bit: u8) -> bool {
        self.0.load(Ordering::Relaxed) & bit != 0
    }
    pub fn clear(&self, bit: u8) {
        self.0.fetch_and(!bit, Ordering::Relaxed);
    }
    fn set(&self, bits: u8) {
        self.0.fetch_or(bits, Ordering::Relaxed);
    }
}

thread_local! {
    /// The task set whose task this thread is polling (for `timer::sleep`, `spawn_here`).
    static CURRENT: std::cell::RefCell<Option<Arc<TaskShared>>> = const { std::cell::RefCell::new(None) };
}

/// The task set of the task being polled on this thread. Panics outside a task.
pub fn current() -> Arc<TaskShared> {
    CURRENT.with(|c| c.borrow().clone().expect("polled by the loop's task set"))
}

/// The loop's tasks: moved with the loop's state.
pub struct Tasks {
    slab: Slab<Slot>,
    shared: Arc<TaskShared>,
    batch: Vec<usize>,
}

impl Tasks {
    pub fn new(ring: Arc<mio::Waker>) -> Tasks {
        Tasks {
            slab: Slab::with_capacity(64),
            shared: Arc::new(TaskShared {
                woken: Mutex::new(Vec::new()),
                spawned: Mutex::new(Vec::new()),
                sleeping: AtomicBool::new(false),
                ring,
                timers: Arc::new(Timers::default()),
                stop: StopSignal::new(),
            }),
            batch: Vec::new(),
        }
    }

    pub fn shared(&self) -> &Arc<TaskShared> {
        &self.shared
    }

    /// The stop as the loop sees it now (it only moves forward): the connections of both
    /// protocols hear of a move at once (GOAWAY, or the resets of an immediate stop).
    pub fn set_stop(&self, state: Stop) {
        self.shared.stop.set(state);
    }

    /// The key the next [`insert`](Tasks::insert) gets (for the socket's epoll token).
    pub fn next_key(&self) -> usize {
        self.slab.vacant_key()
    }

    /// Add a task; it is polled at the next [`run`](Tasks::run). Returns its key.
    pub fn insert(&mut self, task: Task) -> usize {
        self.insert_io(task, None)
    }

    /// Add a task whose socket's events come with `ready` (see [`wake`](Tasks::wake)).
    pub fn insert_io(&mut self, task: Task, ready: Option<Arc<Readiness>>) -> usize {
        let entry = self.slab.vacant_entry();
        let key = entry.key();
        let waker = Arc::new(TaskWaker {
            key,
            queued: AtomicBool::new(true),
            shared: Arc::clone(&self.shared),
        });
        entry.insert(Slot { task, waker, ready });
        self.shared.woken.lock().unwrap().push(key);
        key
    }

    /// An epoll event for task `key`'s socket (on the loop's thread): `bits` of [`READ`] and
    /// [`WRITE`].
    pub fn wake(&self, key: usize, bits: u8) {
        if let Some(slot) = self.slab.get(key) {
            if let Some(r) = &slot.ready {
                r.set(bits);
            }
            if !slot.waker.queued.swap(true, Ordering::AcqRel) {
                self.batch_push(key);
            }
        }
    }

    fn batch_push(&self, key: usize) {
        self.shared.woken.lock().unwrap().push(key);
    }

    /// Poll the woken tasks (and those spawned, and those whose timer is due), a few rounds at
    /// most. Returns whether tasks are still woken (the loop must not sleep).
    pub fn run(&mut self, now: Instant) -> bool {
        if self.slab.is_empty() && self.shared.spawned.lock().unwrap().is_empty() {
            // No HTTP/2 connection: an HTTP/1.1 turn pays this one look.
            return false;
        }
        self.shared.timers.fire(now);
        let prev = CURRENT.with(|c| c.replace(Some(Arc::clone(&self.shared))));
        let prev_timers = timer::enter(Some(Arc::clone(&self.shared.timers)));
        for _ in 0..ROUNDS_PER_TURN {
            let spawned = std::mem::take(&mut *self.shared.spawned.lock().unwrap());
            for task in spawned {
                self.insert(task);
            }
            std::mem::swap(&mut self.batch, &mut *self.shared.woken.lock().unwrap());
            if self.batch.is_empty() {
                break;
            }
            let batch = std::mem::take(&mut self.batch);
            for &key in &batch {
                self.poll_one(key);
            }
            self.batch = batch;
            self.batch.clear();
        }
        CURRENT.with(|c| *c.borrow_mut() = prev);
        timer::enter(prev_timers);
        self.has_woken()
    }

    fn poll_one(&mut self, key: usize) {
        let Some(slot) = self.slab.get_mut(key) else {
            return;
        };
        slot.waker.queued.store(false, Ordering::Release);
        let waker = Waker::from(Arc::clone(&slot.waker));
        let mut cx = Context::from_waker(&waker);
        if let Poll::Ready(()) = slot.task.as_mut().poll(&mut cx) {
            self.slab.remove(key);
        }
    }

    fn has_woken(&self) -> bool {
        !self.shared.woken.lock().unwrap().is_empty()
            || !self.shared.spawned.lock().unwrap().is_empty()
    }

    /// The earliest timer.
    pub fn next_due(&self) -> Option<Instant> {
        if self.slab.is_empty() {
            return None;
        }
        self.shared.timers.next_due()
    }

    /// The loop is about to wait for events: from now a wake from outside rings it. `true`:
    /// tasks were woken meanwhile, so the loop must not sleep. With no task, nothing can be
    /// woken (a pump is spawned for a connection's stream), and nothing is asked.
    pub fn before_wait(&self) -> bool {
        if self.slab.is_empty() {
            return false;
        }
        self.shared.sleeping.store(true, Ordering::SeqCst);
        self.has_woken()
    }

    /// The loop's wait is over.
    pub fn after_wait(&self) {
        self.shared.sleeping.store(false, Ordering::SeqCst);
    }

    /// Drop every task (the loop's end): their connections close.
    pub fn clear(&mut self) {
        self.slab.clear();
    }
}
