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
//!
//! Where it is in force (`--start-gate`, [`set_policy`]): `auto` engages it only while the
//! process has fewer CPUs than the machine (a CPU quota or a cpuset, `observe::allowance`, read
//! again every `READ_EVERY` by the first call past that time). That is where its premise was
//! measured: the calls a throttled period left runnable pile up on the GIL at once. Without a
//! quota the measurements split by host: on an Intel Xeon host S5 (1,000 sleeping clients)
//! lost 10% of its rate with the gate (a bisect over 552 commits put the loss on it alone), on
//! an AMD EPYC host that was slow at the time it gained 24-38% (docs/architecture.md). `on`
//! gives it whatever the allowance, `off` never.

use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::clock::now_ns;
use crate::config::GatePolicy;
use crate::observe::allowance::Allowance;

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

/// How often `--start-gate auto` reads the allowance again (as the spin and the pool do).
const READ_EVERY: Duration = Duration::from_secs(1);

/// `--start-gate` as the server set it (a [`GatePolicy`] as its place in `GatePolicy::ALL`).
static POLICY: AtomicU8 = AtomicU8::new(0);
/// Under `auto`: whether the last reading of the allowance engaged the gate.
static ENGAGED: AtomicBool = AtomicBool::new(false);
/// Under `auto`: when to read the allowance again (`clock::now_ns`; 0: at the next call).
static NEXT_READ: AtomicU64 = AtomicU64::new(0);

/// Set `--start-gate` (once, when the server starts; `auto` reads the allowance at once).
pub fn set_policy(policy: GatePolicy) {
    let place = GatePolicy::ALL
        .iter()
        .position(|p| *p == policy)
        .unwrap_or(0);
    POLICY.store(place as u8, Ordering::Relaxed);
    if policy == GatePolicy::Auto {
        NEXT_READ.store(0, Ordering::Relaxed);
        read_allowance_if_due();
    }
}

/// Whether a call starting now passes the gate.
fn in_force() -> bool {
    match GatePolicy::ALL[POLICY.load(Ordering::Relaxed) as usize] {
        GatePolicy::On => true,
        GatePolicy::Off => false,
        GatePolicy::Auto => {
            read_allowance_if_due();
            ENGAGED.load(Ordering::Relaxed)
        }
    }
}

/// `auto`: read the allowance if `READ_EVERY` has passed since the last reading (a few small
/// files, read detached). The thread that moves `NEXT_READ` on reads; the others pass with the
/// last answer.
fn read_allowance_if_due() {
    let now = now_ns();
    let next = NEXT_READ.load(Ordering::Relaxed);
    if now < next {
        return;
    }
    let later = now + READ_EVERY.as_nanos() as u64;
    if NEXT_READ
        .compare_exchange(next, later, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok()
    {
        ENGAGED.store(engages(&Allowance::read()), Ordering::Relaxed);
    }
}

/// `auto`'s rule: the gate is in force while the process has fewer CPUs than the machine.
fn engages(a: &Allowance) -> bool {
    a.below_machine()
}

/// Attach to the interpreter (take the GIL) past the gate, and run `f`. Call detached.
pub fn attach_to_start<R>(f: impl FnOnce(Python<'_>) -> R) -> R {
    if !in_force() {
        return Python::attach(f);
    }
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
