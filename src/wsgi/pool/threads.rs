//! The pool's threads: starting one (into a parked thread's slot, or a new thread), a
//! thread's life (attached to the interpreter once, then its loop: a job, the queued calls it
//! admits itself, then parking in its slot until a job or `IDLE_EXIT`), and the pause that
//! lets admitted fast calls go before the next long one.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use super::admission::{Class, STALLED_LOOKS};

use super::{Holder, Inner, Pool, Slot, Ticket, FAST_FIRST, IDLE_EXIT, MANY_THREADS, STACK_SIZE};

impl<J: Send + 'static> Pool<J> {
    /// Give `job` to a parked thread, or to a new one. An admitted job's thread becomes a
    /// holder (watched while calls wait).
    pub(super) fn start(
        self: &Arc<Self>,
        mut inner: std::sync::MutexGuard<'_, Inner<J>>,
        job: J,
        ticket: Option<Ticket>,
    ) {
        let (slot, new) = match inner.idle.pop() {
            Some(slot) => (slot, false),
            None => {
                inner.total += 1;
                (Slot::new(), true)
            }
        };
        let warn = new && inner.total > MANY_THREADS && !inner.warned;
        inner.warned |= warn;
        match ticket {
            Some(t) if t.class == Class::Blocking => inner.blocking.push(Arc::clone(&slot)),
            Some(t) => self.hold(&mut inner, &slot, t),
            None => {}
        }
        drop(inner);
        if new {
            self.spawn(slot, Some((job, ticket)), warn);
        } else {
            *slot.job.lock().unwrap() = Some((job, ticket));
            slot.cond.notify_one();
        }
    }

    /// Start a thread for `slot` (its first job: `first`); false if none could be started.
    /// Call without holding `inner`.
    pub(super) fn spawn(
        self: &Arc<Self>,
        slot: Arc<Slot<J>>,
        first: Option<(J, Option<Ticket>)>,
        warn: bool,
    ) -> bool {
        let pool = Arc::clone(self);
        let life = self.lives.enter();
        let res = std::thread::Builder::new()
            .name("sg-app".into())
            .stack_size(STACK_SIZE)
            .spawn(move || {
                pool.thread_main(slot, first, warn); // consumes the thread's share of the pool
                drop(life);
            });
        if let Err(e) = res {
            // Out of threads. The job (moved into the closure) is lost with it: say so loudly.
            eprintln!("sluicegate: cannot start an app thread: {e}");
            let mut inner = self.inner.lock().unwrap();
            inner.total -= 1;
            return false;
        }
        true
    }

    /// Before a thread that just ended a call starts the next long one: wait (at most
    /// `FAST_FIRST`) until the admitted fast calls (`Holder::is_fast`) are done. They are
    /// waiting for the GIL that the ended call held, and CPython's GIL is not fair: a thread
    /// that releases it and asks for it again at once (the next long call) usually gets it
    /// back before a waiter wakes, and the fast call waits a whole switch interval more.
    /// Measured (S12, `/hello` beside 16 clients of a 200 ms computing route): a probe that
    /// came within 5 ms of a long call's end took 8-10 ms instead of 5.5 ms, one probe in
    /// 10-40. (A waiter that has asked the holder to drop the GIL gets it fairly: that is
    /// every wait longer than a switch interval.)
    pub(super) fn let_fast_calls_go_first<'a>(
        &self,
        mut inner: std::sync::MutexGuard<'a, Inner<J>>,
    ) -> std::sync::MutexGuard<'a, Inner<J>> {
        let waiting = |inner: &Inner<J>| inner.holders.iter().any(Holder::is_fast);
        if !waiting(&inner) {
            return inner;
        }
        inner.adm.stats.fast_first += 1;
        let deadline = Instant::now() + FAST_FIRST;
        while waiting(&inner) && !inner.stopping {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            inner = self.fast_done.wait_timeout(inner, left).unwrap().0;
        }
        inner
    }

    /// Turn the calling thread into a pool thread (after its event-loop duty was taken over).
    pub fn join_as_worker(self: &Arc<Self>) {
        self.inner.lock().unwrap().total += 1;
        self.worker_loop(Slot::new(), None);
    }

    pub(super) fn thread_main(
        self: Arc<Self>,
        slot: Arc<Slot<J>>,
        first: Option<(J, Option<Ticket>)>,
        warn: bool,
    ) {
        super::batch::batch_this_thread(true);
        // Attach once for the thread's life (past the start gate: a burst of new threads would
        // otherwise all wait for the GIL here); jobs re-attach cheaply inside.
        super::attach_to_start(|py| {
            if warn {
                self.warn_many_threads(py);
            }
            py.detach(|| self.worker_loop(slot, first));
            // The thread ends: what it kept for its next request goes now, while attached.
            crate::wsgi::start_response::Callables::drop_kept(py);
        });
    }

    /// The one-time `MANY_THREADS` warning, on the logger the server's errors go to. Given from
    /// the new thread (which takes the GIL anyway), never from the event loop.
    pub(super) fn warn_many_threads(&self, py: Python<'_>) {
        let msg = format!(
            "more than {MANY_THREADS} app calls at once: the app thread pool grew past \
             {MANY_THREADS} threads (limit {}). If each call holds a database connection, a \
             database with a default connection limit (PostgreSQL max_connections = 100) \
             refuses the next ones; cap it with --threads MIN:MAX below that limit (see \
             docs/deploying.md, \"Sizing --threads\")",
            self.max
        );
        let logged = py
            .import("logging")
            .and_then(|l| l.call_method1("getLogger", ("sluicegate.error",)))
            .and_then(|l| l.call_method1("warning", (msg.as_str(),)));
        if logged.is_err() {
            eprintln!("sluicegate: {msg}");
        }
    }

    /// An admitted call starts on `slot`'s thread and counts as runnable: the watcher judges
    /// it, and looks at once if it was waiting quietly (`BLOCKING_QUIET_LOOK`).
    fn hold(&self, inner: &mut Inner<J>, slot: &Arc<Slot<J>>, ticket: Ticket) {
        inner.holders.push(Holder::new(slot, ticket));
        if inner.quiet {
            self.queued.notify_one();
        }
    }

    /// A call ended on `slot`'s thread: it stops counting (as a holder, in the blocking
    /// class, or as a place it held there), and its time is remembered for its route.
    fn ended(&self, inner: &mut Inner<J>, slot: &Arc<Slot<J>>, ticket: Ticket, took: Duration) {
        if ticket.class == Class::Blocking {
            if let Some(i) = inner.blocking.iter().position(|s| Arc::ptr_eq(s, slot)) {
                inner.blocking.swap_remove(i);
            }
        }
        let held = inner
            .holders
            .iter()
            .position(|h| Arc::ptr_eq(&h.slot, slot));
        // The holder's class, which may have become long while it ran.
        let (class, took, unblocked, fast) = match held {
            Some(i) => {
                let h = inner.holders.swap_remove(i);
                let fast = h.is_fast();
                (
                    h.ticket.class,
                    h.took(took),
                    h.clean_looks >= STALLED_LOOKS,
                    fast,
                )
            }
            None => (ticket.class, Some(took), false, false),
        };
        inner
            .adm
            .finished(class, held.is_some(), ticket.route, took);
        if ticket.judged {
            inner.adm.release_blocking();
        }
        if let Some(i) = inner.held.iter().position(|s| Arc::ptr_eq(s, slot)) {
            inner.held.swap_remove(i);
            inner.adm.release_blocking();
        }
        if ticket.class == Class::Blocking {
            inner
                .adm
                .settle_blocking(Instant::now(), took.unwrap_or_default());
        }
        if fast {
            self.fast_done.notify_all();
        }
        if unblocked && ticket.judged {
            inner.adm.unblocked(ticket.route);
        }
    }

    pub(super) fn worker_loop(
        self: &Arc<Self>,
        slot: Arc<Slot<J>>,
        mut next: Option<(J, Option<Ticket>)>,
    ) {
        slot.set_clock_of_this_thread();
        loop {
            let mut finished: Option<(Ticket, Duration)> = None;
            if let Some((job, ticket)) = next.take() {
                let start = Instant::now();
                self.busy.fetch_add(1, Ordering::Relaxed);
                let own = (self.run)(job);
                self.busy.fetch_sub(1, Ordering::Relaxed);
                // The call's own time, not the wait for the interpreter before it: a fast
                // call that waited for the GIL behind long ones while the watcher was not
                // looking (no call queued, so nobody judged it `Waited`) would otherwise
                // record that wait as its route's time and mark a fast route long. Measured
                // (`bench.s12_startup`): `/hello` probes on a fresh server beside CPU-bound
                // calls waited 75 ms for the GIL, one such time marked `/hello` long, and
                // the next probes queued behind whole 200 ms calls.
                finished = ticket.map(|t| (t, own.unwrap_or_else(|| start.elapsed())));
            }
            let mut inner = self.inner.lock().unwrap();
            if let Some((ticket, took)) = finished {
                self.ended(&mut inner, &slot, ticket, took);
            }
            // Queued work first (on this thread, no wake-up), then park.
            let queued = if inner.stopping {
                inner.adm.admit_any()
            } else {
                inner.adm.admit_next()
            };
            if let Some((job, route, class)) = queued {
                let ticket = Ticket {
                    route,
                    class,
                    judged: false,
                };
                // A holder from now on, so that a demotion of its route while it lets fast
                // calls go first counts it in the blocking room (`Pool::hold_route`).
                if class == Class::Blocking {
                    inner.blocking.push(Arc::clone(&slot));
                } else {
                    self.hold(&mut inner, &slot, ticket);
                }
                if class == Class::Long && !inner.stopping {
                    inner = self.let_fast_calls_go_first(inner);
                }
                next = Some((job, Some(ticket)));
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
}
