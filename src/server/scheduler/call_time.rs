//! A pool call's time as the slow-call rule judges it (`CallClock`, `judged`): the wall time
//! of the call, less what its thread spent waiting to run. Without a CPU quota nothing is read
//! (the wall, as measured for every figure of the unconstrained scenarios). Under one, a call
//! whose thread never went to sleep (`thread_state::sleeps`) is judged by its thread's CPU
//! clock, as the watchdog judges inline calls (`judge.rs`): all the rest of its wall time it was
//! runnable, stopped by the quota or preempted, which is no blocking. A call that slept is
//! judged by the wall less its run delay (`thread_state::run_delay`).
//!
//! Why not the run delay alone: on 6.18 it leaves out some of the time a throttled thread
//! waits, in some calls all of it (apparently where the kernel stops a throttled thread on its way
//! back to user space and takes it off the run queue, where the run delay does not count; not
//! checked in the kernel's source). Measured (a
//! thread computing 0.3 ms calls in a cgroup of 0.1 CPU, `getrusage` and `schedstat` around
//! each, `benchmarks/results/2026-11-27-throttle/`): most stops were in the run delay, but a
//! call of 12.3 ms on the wall had 0.3 ms of CPU, no sleep and a run delay of 0, a slow call by
//! the wall less its run delay. A stop never counted a voluntary switch. The rule is a plain
//! function, so that the replay (`replay.rs`) runs it on throttled timings.

use std::time::{Duration, Instant};

use super::super::thread_state::{run_delay, sleeps};
use crate::clock::clock_time;

/// What the thread's own counters said at one end of a call, under a quota.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Ends {
    /// The run delay (`run_delay`).
    pub(super) delay: Option<Duration>,
    /// The thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`).
    pub(super) cpu: Option<Duration>,
    /// Its voluntary context switches (`sleeps`).
    pub(super) sleeps: Option<u64>,
}

impl Ends {
    fn read() -> Ends {
        Ends {
            delay: run_delay(),
            cpu: clock_time(libc::CLOCK_THREAD_CPUTIME_ID),
            sleeps: sleeps(),
        }
    }
}

/// A pool call's clock (`Scheduler::call_clock`).
pub struct CallClock {
    start: Instant,
    /// The thread's counters at the start, under a quota.
    ends: Option<Ends>,
}

impl CallClock {
    /// Started now; `quota`: the process runs under a CPU quota (its counters are read).
    pub(super) fn start(quota: bool) -> CallClock {
        CallClock {
            start: Instant::now(),
            ends: quota.then(Ends::read),
        }
    }

    /// The call's time so far, as the slow-call rule judges it (`judged`).
    pub fn took(&self) -> Duration {
        let wall = self.start.elapsed();
        judged(wall, self.ends.map(|before| (before, Ends::read())))
    }
}

/// A call's `wall` time as the slow-call rule judges it, from its thread's counters `before`
/// and after it (`None`: no quota, the wall): its CPU time where the thread never slept (the
/// rest of the wall it was runnable: stopped by the quota, or preempted), else the wall less
/// its run delay; the wall alone where the counters needed are unknown.
pub(super) fn judged(wall: Duration, ends: Option<(Ends, Ends)>) -> Duration {
    let Some((before, after)) = ends else {
        return wall;
    };
    let slept = before.sleeps.zip(after.sleeps).map(|(b, a)| a != b);
    if let (Some(false), Some(b), Some(a)) = (slept, before.cpu, after.cpu) {
        return a.saturating_sub(b).min(wall);
    }
    less_delay(wall, before.delay, after.delay)
}

/// A call's `wall` time less what its thread waited to run between the run delays `before` and
/// `after` it (the wall alone where either is unknown).
fn less_delay(wall: Duration, before: Option<Duration>, after: Option<Duration>) -> Duration {
    match (before, after) {
        (Some(before), Some(after)) => wall.saturating_sub(after.saturating_sub(before)),
        _ => wall,
    }
}
