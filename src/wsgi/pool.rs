//! The elastic thread pool that runs app calls which must not run on the event loop's thread.
//!
//! Threads are created on demand up to `max` and exit after `IDLE_EXIT` without work (down to
//! `min`). Idle threads wait on their own slot, most recently idle first (LIFO): a job goes
//! straight into a parked thread's slot and only that thread is woken, hot threads stay hot,
//! and threads at the bottom of the stack time out when the load drops. When every thread is
//! busy and the pool is at `max`, jobs wait in a FIFO queue that finishing threads drain.
//!
//! Each thread stays attached to the Python interpreter for its whole life (one thread state,
//! created once), so taking the GIL for a job costs a lock, not a thread-state allocation.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use pyo3::prelude::*;

/// An idle thread with no work for this long exits (while more than `min` threads exist).
const IDLE_EXIT: Duration = Duration::from_secs(30);

/// Stack size of app threads: the same 8 MiB a Python `threading.Thread` gets by default on
/// Linux, so deep recursion in apps behaves as it does elsewhere. Only touched pages use memory.
const STACK_SIZE: usize = 8 * 1024 * 1024;

/// A parked thread's mailbox.
struct Slot<J> {
    job: Mutex<Option<J>>,
    cond: Condvar,
}

struct Inner<J> {
    idle: Vec<Arc<Slot<J>>>,
    queue: VecDeque<J>,
    total: usize,
    stopping: bool,
}

pub struct Pool<J: Send + 'static> {
    inner: Mutex<Inner<J>>,
    /// Signalled when a thread exits (for `stop`).
    exited: Condvar,
    min: usize,
    max: usize,
    run: Box<dyn Fn(J) + Send + Sync>,
    busy: AtomicUsize,
}

impl<J: Send + 'static> Pool<J> {
    pub fn new(min: usize, max: usize, run: Box<dyn Fn(J) + Send + Sync>) -> Arc<Pool<J>> {
        Arc::new(Pool {
            inner: Mutex::new(Inner {
                idle: Vec::new(),
                queue: VecDeque::new(),
                total: 0,
                stopping: false,
            }),
            exited: Condvar::new(),
            min,
            max,
            run,
            busy: AtomicUsize::new(0),
        })
    }

    /// Threads alive.
    pub fn threads(&self) -> usize {
        self.inner.lock().unwrap().total
    }

    /// Threads running a job now.
    pub fn busy(&self) -> usize {
        self.busy.load(Ordering::Relaxed)
    }

    /// Start `min` threads ahead of the first request.
    pub fn prestart(self: &Arc<Self>) {
        let mut inner = self.inner.lock().unwrap();
        while inner.total < self.min {
            inner.total += 1;
            self.spawn(None);
        }
    }

    /// Run `job` on a pool thread: a parked one if any, else a new one (below max), else queue.
    pub fn submit(self: &Arc<Self>, job: J) {
        self.submit_inner(job, false)
    }

    /// Like `submit`, but never queued: starts a thread beyond `max` if none is idle. For the
    /// event loop itself when it is handed to another thread.
    pub fn submit_urgent(self: &Arc<Self>, job: J) {
        self.submit_inner(job, true)
    }

    fn submit_inner(self: &Arc<Self>, job: J, urgent: bool) {
        let mut inner = self.inner.lock().unwrap();
        if let Some(slot) = inner.idle.pop() {
            drop(inner);
            *slot.job.lock().unwrap() = Some(job);
            slot.cond.notify_one();
            return;
        }
        if inner.total < self.max || urgent {
            inner.total += 1;
            drop(inner);
            self.spawn(Some(job));
            return;
        }
        inner.queue.push_back(job);
    }

    fn spawn(self: &Arc<Self>, first: Option<J>) {
        let pool = Arc::clone(self);
        let res = std::thread::Builder::new()
            .name("sluicegate-app".into())
            .stack_size(STACK_SIZE)
            .spawn(move || pool.thread_main(first));
        if let Err(e) = res {
            // Out of threads: the job is lost only if there was one; put it back in the queue
            // so a running thread picks it up.
            eprintln!("sluicegate: cannot start an app thread: {e}");
            let mut inner = self.inner.lock().unwrap();
            inner.total -= 1;
            drop(inner);
        }
    }

    /// Turn the calling thread into a pool thread (after its event-loop duty was taken over).
    pub fn join_as_worker(self: &Arc<Self>) {
        self.inner.lock().unwrap().total += 1;
        self.worker_loop(None);
    }

    fn thread_main(self: Arc<Self>, first: Option<J>) {
        // Attach once for the thread's life; jobs re-attach cheaply inside.
        Python::attach(|py| py.detach(|| self.worker_loop(first)));
    }

    fn worker_loop(self: &Arc<Self>, mut next: Option<J>) {
        let slot = Arc::new(Slot {
            job: Mutex::new(None),
            cond: Condvar::new(),
        });
        loop {
            if let Some(job) = next.take() {
                self.busy.fetch_add(1, Ordering::Relaxed);
                (self.run)(job);
                self.busy.fetch_sub(1, Ordering::Relaxed);
            }
            // Queued work first, then park.
            let mut inner = self.inner.lock().unwrap();
            if let Some(job) = inner.queue.pop_front() {
                next = Some(job);
                continue;
            }
            if inner.stopping {
                break;
            }
            inner.idle.push(Arc::clone(&slot));
            drop(inner);
            let mut job = slot.job.lock().unwrap();
            loop {
                if let Some(j) = job.take() {
                    next = Some(j);
                    break;
                }
                let (guard, timeout) = slot.cond.wait_timeout(job, IDLE_EXIT).unwrap();
                job = guard;
                if job.is_some() {
                    continue;
                }
                let mut inner = self.inner.lock().unwrap();
                let still_idle = inner.idle.iter().position(|s| Arc::ptr_eq(s, &slot));
                if inner.stopping || (timeout.timed_out() && inner.total > self.min) {
                    if let Some(i) = still_idle {
                        inner.idle.remove(i);
                        inner.total -= 1;
                        drop(inner);
                        self.exited.notify_all();
                        return;
                    }
                    // A job is being handed to us right now: take it.
                }
            }
        }
        let mut inner = self.inner.lock().unwrap();
        inner.total -= 1;
        drop(inner);
        self.exited.notify_all();
    }

    /// Stop: idle threads exit now, busy ones after their job. Waits up to `timeout` for all to
    /// be gone; returns the number still running.
    pub fn stop(&self, timeout: Duration) -> usize {
        let mut inner = self.inner.lock().unwrap();
        inner.stopping = true;
        for s in inner.idle.iter() {
            s.cond.notify_one();
        }
        let deadline = std::time::Instant::now() + timeout;
        while inner.total > 0 {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            inner = self.exited.wait_timeout(inner, left).unwrap().0;
            for s in inner.idle.iter() {
                s.cond.notify_one();
            }
        }
        inner.total
    }
}
