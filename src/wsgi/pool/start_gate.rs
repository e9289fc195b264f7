//! The gate a pool thread passes before it asks for the GIL to start a call (and a new pool
//! thread before it first attaches): at most a few threads (its places, below) wait for the
//! interpreter to start; the others wait here, asleep until a place frees ([`attach_to_start`]).
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
//! One gate per process, as there is one GIL. Uncontended (fewer waiting than it has places),
//! passing costs one lock and unlock each way and no system call.
//!
//! Whether calls wait to start (`crowded`: past the gate for the GIL, or asleep on it) also
//! tells a call's sender to leave its first block to the loop (`wsgi::sender`): a send holds
//! the GIL they wait for.
//!
//! How many places (`--start-gate`, [`set_policy`]): `START_WAITERS` under `on`, none (no
//! gate) under `off`, and under `auto` (the default) `START_WAITERS` while the allowance binds
//! ([`allowance_binds`]: a cpuset of fewer CPUs than the machine, or a CPU quota that stopped the
//! cgroup since the previous reading; `observe::allowance`, read when the server starts, then
//! again every second by the watchdog with the quota, `Scheduler::refresh_quota`, never on a
//! call's path), else `WHOLE_MACHINE_WAITERS`. A quota that does not stop the process leaves
//! its threads to run as on the whole machine, and no throttled period ends with a crowd.
//! (benchmarks/results/2026-11-28-gate-auto/: on the whole machine two places cost S5 8-14% of
//! its steady rate, no gate at all collapsed some cold starts (a thousand new threads at once),
//! and sixteen did neither; under a quota of 0.5 CPU, throttled, two kept the p99 lower.
//! benchmarks/results/2026-11-29-gate-unbound/: S5 at 1.5 CPUs, never throttled, sixteen places
//! 7,722 requests/s to two's 6,682, ahead in six rounds of six; at 0.5 CPU level.)

use pyo3::prelude::*;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use crate::config::GatePolicy;
use crate::observe::allowance::{online_cpus, Allowance};

/// Threads that may wait for the GIL to start a call at once. Two: one per core of the machine
/// this was measured on (2 vCPUs), so that a start never waits for the gate while a core could
/// take the GIL next; on more cores the GIL still lets one thread run Python at a time, so more
/// waiters would only wait in CPython's timed loop instead of here.
const START_WAITERS: usize = 2;

/// The places under `--start-gate auto` while the allowance does not bind: the whole machine, or
/// a quota that has not throttled the process since the last reading.
/// Assumes what S5 showed on 2 vCPUs: a steady load of calls that sleep (9,000 a second) seldom
/// has more than this many waiting to start, so the gate costs it nothing, while a burst (a
/// thousand new threads at once) leaves at most this many in CPython's timed wait, not all.
/// The GIL is one whatever the cores, so more cores do not call for more.
const WHOLE_MACHINE_WAITERS: usize = 16;

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

/// Threads past the gate or asleep on it (`State::waiting` + `State::asleep`), kept beside the
/// state for a read without its lock (`crowded`).
static CROWD: AtomicUsize = AtomicUsize::new(0);

/// Whether calls wait to start now (at the gate or past it, for the GIL): the GIL is wanted by
/// more threads than hold it, and what a holder does in the kernel keeps them all waiting.
/// Always false without a gate (`--start-gate off`).
pub fn crowded() -> bool {
    CROWD.load(Ordering::Relaxed) > 0
}

/// `--start-gate` as the server set it (a [`GatePolicy`] as its place in `GatePolicy::ALL`).
static POLICY: AtomicU8 = AtomicU8::new(0);
/// Under `auto`: the places the last reading of the allowance gave (`note_allowance`).
static AUTO_PLACES: AtomicUsize = AtomicUsize::new(START_WAITERS);

/// Set `--start-gate` (once, when the server starts; `auto` reads the allowance at once).
pub fn set_policy(policy: GatePolicy) {
    let place = GatePolicy::ALL
        .iter()
        .position(|p| *p == policy)
        .unwrap_or(0);
    POLICY.store(place as u8, Ordering::Relaxed);
    if policy == GatePolicy::Auto {
        // No earlier reading of the throttling to compare with: a quota counts as not binding
        // until the watchdog's first reading a second later.
        note_allowance(allowance_binds(&Allowance::read(), online_cpus(), false));
    }
}

/// `auto`: the allowance was read (`binds`: [`allowance_binds`]).
pub fn note_allowance(binds: bool) {
    AUTO_PLACES.store(places_for(GatePolicy::Auto, binds), Ordering::Relaxed);
}

/// Whether the allowance `a` binds the process's threads, on a machine of `online` CPUs: a
/// cpuset of fewer CPUs does always (they are all its threads have); a CPU quota below the
/// machine only where it stopped the cgroup since the previous reading (`throttled`).
pub fn allowance_binds(a: &Allowance, online: usize, throttled: bool) -> bool {
    a.cpus < online || (a.below(online) && throttled)
}

/// The places for a call starting now (0: no gate); also the stats' `start_gate_places`.
pub fn places() -> usize {
    let policy = GatePolicy::ALL[POLICY.load(Ordering::Relaxed) as usize];
    if policy == GatePolicy::Auto {
        return AUTO_PLACES.load(Ordering::Relaxed);
    }
    places_for(policy, false)
}

/// The places `policy` gives a process whose allowance binds it (`binds`) or not.
fn places_for(policy: GatePolicy, binds: bool) -> usize {
    match policy {
        GatePolicy::On => START_WAITERS,
        GatePolicy::Off => 0,
        GatePolicy::Auto if binds => START_WAITERS,
        GatePolicy::Auto => WHOLE_MACHINE_WAITERS,
    }
}

/// Attach to the interpreter (take the GIL) past the gate, and run `f`. Call detached.
pub fn attach_to_start<R>(f: impl FnOnce(Python<'_>) -> R) -> R {
    let places = places();
    if places == 0 {
        return Python::attach(f);
    }
    let place = GATE.enter(places);
    Python::attach(|py| {
        drop(place);
        f(py)
    })
}

/// A place among the gate's: give it back (drop it) as soon as the GIL is held.
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

    /// Wait (detached: never call this holding the GIL) until fewer than `places` threads
    /// wait for the GIL to start a call, and take a place among them.
    fn enter(&self, places: usize) -> Place<'_> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while st.waiting >= places {
            st.asleep += 1;
            CROWD.store(st.waiting + st.asleep, Ordering::Relaxed);
            st = self.turn.wait(st).unwrap_or_else(|e| e.into_inner());
            st.asleep -= 1;
        }
        st.waiting += 1;
        CROWD.store(st.waiting + st.asleep, Ordering::Relaxed);
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
        CROWD.store(st.waiting + st.asleep, Ordering::Relaxed);
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
                        let place = gate.enter(START_WAITERS);
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
        let places: Vec<_> = (0..START_WAITERS)
            .map(|_| gate.enter(START_WAITERS))
            .collect();
        let (tx, rx) = std::sync::mpsc::channel();
        let g = gate.clone();
        let t = std::thread::spawn(move || {
            let _p = g.enter(START_WAITERS);
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

    #[test]
    fn auto_gives_two_places_where_the_allowance_binds_and_sixteen_where_not() {
        assert_eq!(places_for(GatePolicy::Auto, true), START_WAITERS);
        assert_eq!(places_for(GatePolicy::Auto, false), WHOLE_MACHINE_WAITERS);
        for binds in [true, false] {
            assert_eq!(places_for(GatePolicy::On, binds), START_WAITERS);
            assert_eq!(places_for(GatePolicy::Off, binds), 0, "off: no gate");
        }
    }

    #[test]
    fn a_cpuset_binds_always_a_quota_only_while_it_throttles() {
        let on = |cpus: usize, quota: Option<f64>| {
            let mut a = Allowance::default();
            a.cpus = cpus;
            a.quota = quota;
            a
        };
        for throttled in [false, true] {
            assert!(
                allowance_binds(&on(1, None), 2, throttled),
                "a cpuset of 1 of 2"
            );
            assert!(
                !allowance_binds(&on(2, None), 2, throttled),
                "the whole machine"
            );
            assert!(
                !allowance_binds(&on(2, Some(4.0)), 2, throttled),
                "a quota above it"
            );
            assert!(
                allowance_binds(&on(1, Some(1.5)), 2, throttled),
                "a cpuset under a quota"
            );
        }
        assert!(
            !allowance_binds(&on(2, Some(1.5)), 2, false),
            "a quota that never stops it"
        );
        assert!(allowance_binds(&on(2, Some(1.5)), 2, true));
        assert!(allowance_binds(&on(64, Some(0.5)), 64, true));
        assert!(!allowance_binds(&on(64, Some(0.5)), 64, false));
    }
}
