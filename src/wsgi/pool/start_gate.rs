//! The gate a pool thread passes before it asks for the GIL to start a call (and a new pool
//! thread before it first attaches): at most `START_WAITERS` threads wait for the interpreter to
//! start; the others wait here, asleep until a place frees ([`attach_to_start`]).
//!
//! Why: CPython's GIL waiters (3.11, `take_gil`) do not sleep until woken. Each wakes every
//! switch interval (5 ms) to look again, and a waiter that saw no hand-off in its interval asks
//! the holder to drop the GIL. With a room of hundreds of sleeping calls (S5's app under a
//! CPU quota: a throttled period ends with every call whose sleep ended in it runnable at
//! once), tens of threads waited at once, and their wake-ups and forced hand-offs were 94% of
//! the app threads' sleeps (benchmarks/results/2026-11-28-s5call/). A call that has not started
//! holds nothing another call needs, so it can wait where waiting costs nothing: a thread
//! asleep on this gate's condition variable is woken once, when its turn comes. Calls that
//! already run (back from the app's own sleep or I/O) are not gated: they ask the GIL as before.
//!
//! One gate per process, as there is one GIL. Uncontended (fewer than `START_WAITERS` waiting),
//! passing costs one lock and unlock each way and no system call.

use pyo3::prelude::*;
use std::sync::{Condvar, Mutex};

/// Threads that may wait for the GIL to start a call at once. Two: one per core of the machine
/// this was measured on (2 vCPUs), so that a start never waits for the gate while a core could
/// take the GIL next; on more cores the GIL still lets one thread run Python at a time, so more
/// waiters would only wait in CPython's timed loop instead of here.
const START_WAITERS: usize = 2;

struct State {
    /// Threads past the gate that have not yet been given the GIL.
    waiting: usize,
    /// Threads asleep on the gate (woken only when there are some).
    asleep: usize,
}

/// See the module doc.
struct StartGate {
    state: Mutex<State>,
    turn: Condvar,
}

/// The process's gate (the GIL is the process's).
static GATE: StartGate = StartGate::new();

/// Attach to the interpreter (take the GIL) past the gate, and run `f`. Call detached.
pub fn attach_to_start<R>(f: impl FnOnce(Python<'_>) -> R) -> R {
    let place = GATE.enter();
    Python::attach(|py| {
        drop(place);
        f(py)
    })
}

/// A place among the `START_WAITERS`: give it back (drop it) as soon as the GIL is held.
struct Place<'a>(&'a StartGate);

impl StartGate {
    const fn new() -> StartGate {
        StartGate {
            state: Mutex::new(State {
                waiting: 0,
                asleep: 0,
            }),
            turn: Condvar::new(),
        }
    }

    /// Wait (detached: never call this holding the GIL) until fewer than `START_WAITERS`
    /// threads wait for the GIL to start a call, and take a place among them.
    fn enter(&self) -> Place<'_> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while st.waiting >= START_WAITERS {
            st.asleep += 1;
            st = self.turn.wait(st).unwrap_or_else(|e| e.into_inner());
            st.asleep -= 1;
        }
        st.waiting += 1;
        Place(self)
    }

    /// Threads past the gate not yet given the GIL (for tests).
    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.state.lock().unwrap().waiting
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let mut st = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
        st.waiting -= 1;
        let wake = st.asleep > 0;
        drop(st);
        if wake {
            self.0.turn.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn no_more_than_start_waiters_are_past_the_gate_and_every_thread_passes() {
        let gate = Arc::new(StartGate::new());
        let most = Arc::new(AtomicUsize::new(0));
        let passed = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let (gate, most, passed) = (gate.clone(), most.clone(), passed.clone());
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let place = gate.enter();
                        most.fetch_max(gate.waiting(), Ordering::SeqCst);
                        std::thread::yield_now();
                        drop(place);
                        passed.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(passed.load(Ordering::SeqCst), 16 * 200);
        assert!(most.load(Ordering::SeqCst) <= START_WAITERS);
        assert_eq!(gate.waiting(), 0);
    }

    #[test]
    fn a_thread_waits_while_the_places_are_taken_and_passes_when_one_frees() {
        let gate = Arc::new(StartGate::new());
        let places: Vec<_> = (0..START_WAITERS).map(|_| gate.enter()).collect();
        let (tx, rx) = std::sync::mpsc::channel();
        let g = gate.clone();
        let t = std::thread::spawn(move || {
            let _p = g.enter();
            tx.send(()).unwrap();
        });
        // The gate is full: the thread cannot pass (it would have sent by now if it could;
        // this only checks it has not, it never waits for time to pass to decide).
        assert!(rx.try_recv().is_err());
        drop(places);
        rx.recv().unwrap();
        t.join().unwrap();
        assert_eq!(gate.waiting(), 0);
    }
}
