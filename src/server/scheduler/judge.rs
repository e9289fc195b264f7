//! The watchdog's judgement of an inline call seen running at a look (`Judge`): from the loop
//! thread's CPU clock, whether the thread ran since the previous look, and whether the call
//! waited in the kernel (blocked), computed for `CPU_BOUND_TAKEOVER`, or computed for
//! `PREEMPT_CPU` while other work waited. A call whose thread waits for the GIL while another
//! thread can run (`Found::ForGil`) is not blocked: the thread holding the GIL computes, or the
//! CPU quota stops it with the rest of the process; the call is charged the CPU the process
//! uses meanwhile, so that a C call computing on another thread with the GIL held still frees
//! the loop (as a long call), while a stop, which uses none, frees nothing. Plain state with no
//! clock and no /proc read of its own (the caller passes what it read, and is asked only for
//! what a verdict needs), so that the replay of the scheduler's rules (`replay.rs`) runs these
//! rules, not a copy of them.

use std::time::{Duration, Instant};

use super::{CPU_BOUND_TAKEOVER, PREEMPT_CPU};

/// What becomes of an inline call seen running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// It stays on the loop's thread.
    Leave,
    /// Its thread waits in the kernel (a sleep, a socket, a lock, or the GIL held by a thread
    /// that waits in the kernel too): taken over, counted in the pool's blocking class.
    Blocked,
    /// It computed for `CPU_BOUND_TAKEOVER` by its thread's CPU clock (by the wall only where
    /// that clock cannot be read): taken over as a long call.
    CpuBound,
    /// It computed for `PREEMPT_CPU` while other work waited behind it: taken over.
    Hogging,
}

/// What a read of the loop thread's kernel state found (`Judge::look`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Found {
    /// Running, or runnable (waiting for a CPU, or stopped by a CPU quota).
    Runnable,
    /// Asleep in the kernel: the call blocks.
    Asleep,
    /// Asleep waiting for the GIL while another thread of the process can run (its holder
    /// computes, or the quota stops it); `process_cpu`: the process's CPU clock then.
    ForGil { process_cpu: Option<Duration> },
}

/// What the looks at the current call have seen so far.
#[derive(Debug, Default)]
pub(super) struct Judge {
    /// The loop thread's CPU time when the current call was first seen running.
    call_cpu_start: Option<Duration>,
    /// The loop thread's CPU clock at the previous look, and when: a thread whose clock advanced
    /// by half the time since was running, and asking /proc where it waits (an open, a read and
    /// a close) is skipped; the question stays pending for the next look. Measured on a
    /// CPU-bound app (1 ms of Python per request): the watchdog's own CPU fell from 8% of a core
    /// to under 1%.
    last_sample: Option<(Instant, Duration)>,
    state_pending: bool,
    /// The process's CPU clock at the first read that found the call waiting for the GIL
    /// (`Found::ForGil`), and the CPU the process has used since, as of the last such read: the
    /// call is charged it as if its own.
    gil_mark: Option<Duration>,
    charged: Duration,
    /// The loop thread ran for at least half the time since the previous look.
    pub(super) ran: bool,
}

impl Judge {
    /// One look that found the call running (`Look::Running`: `first`, `read_state`, and
    /// `wall_bound`, its run on the wall past `CPU_BOUND_TAKEOVER`) at `now`, the loop thread's
    /// CPU clock reading `cpu_now`. `state()`: where the thread is (read only when the thread
    /// did not run since the previous look); `waiting()`: whether other work waits behind the
    /// call (asked only of a call past `PREEMPT_CPU`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn look(
        &mut self,
        first: bool,
        read_state: bool,
        wall_bound: bool,
        now: Instant,
        cpu_now: Option<Duration>,
        state: impl FnOnce() -> Found,
        waiting: impl FnOnce() -> bool,
    ) -> Verdict {
        if first {
            self.call_cpu_start = cpu_now;
            self.state_pending = false;
            self.gil_mark = None;
            self.charged = Duration::ZERO;
        }
        self.ran = match (self.last_sample, cpu_now) {
            (Some((t0, c0)), Some(c1)) => {
                c1.saturating_sub(c0) * 2 >= now.saturating_duration_since(t0)
            }
            _ => false,
        };
        self.last_sample = cpu_now.map(|c| (now, c));
        self.state_pending |= read_state;
        let found = (self.state_pending && !self.ran).then(state);
        if !self.ran {
            self.state_pending = false;
        }
        if let Some(Found::ForGil {
            process_cpu: Some(p),
        }) = found
        {
            let mark = *self.gil_mark.get_or_insert(p);
            self.charged = self.charged.max(p.saturating_sub(mark));
        }
        let blocked = found == Some(Found::Asleep);
        let computed = self
            .call_cpu_start
            .zip(cpu_now)
            .map(|(a, b)| b.saturating_sub(a).max(self.charged));
        if blocked {
            Verdict::Blocked
        } else if computed.map_or(wall_bound, |c| c >= CPU_BOUND_TAKEOVER) {
            // By the thread's CPU clock, so that a call stopped by a CPU quota (runnable, not
            // running) is not taken for one that computes.
            Verdict::CpuBound
        } else if computed.is_some_and(|c| c >= PREEMPT_CPU) && waiting() {
            Verdict::Hogging
        } else {
            Verdict::Leave
        }
    }
}
