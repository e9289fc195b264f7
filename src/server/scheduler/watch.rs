//! The watchdog's look-by-look state (`Watch`): how long it sleeps between looks, what each look
//! found (`Look`), and how the tick grows, shrinks and stops (the scheduler's module doc). Plain
//! state and transitions, no threads and no clock of its own; the thread that acts on each look
//! is `Scheduler::watchdog`.

use std::time::{Duration, Instant};

use super::{
    CALM_LOOKS, CPU_BOUND_TAKEOVER, SPARSE_GAP, TICK_COMPUTING, TICK_MAX, TICK_MIN,
    WATCHDOG_IDLE_AFTER,
};

/// What one look of the watchdog found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Look {
    /// The same inline call as at the previous look is still running (`first`: the first look
    /// to see it so, which starts its CPU count). `read_state`: read the
    /// loop thread's kernel state now (looks 1, 2, 4, 8... of a call: each read is a small
    /// file read, not repeated at every look of a call seen computing). `cpu_bound`: it has
    /// run for `CPU_BOUND_TAKEOVER` on the wall: take it over whatever its state (the watchdog
    /// judges by the loop thread's CPU clock instead wherever it can read it).
    Running {
        first: bool,
        read_state: bool,
        cpu_bound: bool,
    },
    /// No call outlasted the tick.
    Calm,
    /// Nothing runs inline, and ticking costs more than being woken or the server is in
    /// dispatch mode (no call runs inline there): sleep until a call comes.
    Doze,
}

/// The watchdog's state between looks, with its transitions as plain methods of the sequence
/// number it reads and the time (no threads, no clock of its own: unit-tested in `tests.rs`).
///
/// `inline_seq` is odd exactly while an inline call holds the loop; the same odd number at two
/// looks means one call spanned a whole tick.
pub(super) struct Watch {
    /// The sequence number at the previous look.
    last: u64,
    pub(super) tick: Duration,
    /// Looks in a row that found no call outlasting a tick.
    calm: u32,
    /// How long the sequence number has not moved.
    quiet: Duration,
    /// Calls are rare: doze between them, woken by each (see `SPARSE_GAP`).
    pub(super) sparse: bool,
    /// Sequence steps (two per call) over the current run of calm looks.
    window_seq: u64,
    /// When the watchdog was last woken from a doze.
    last_wake: Instant,
    /// Looks that found the current call still running, and when the first of them was.
    running_looks: u32,
    pub(super) running_since: Instant,
    /// The last look saw a call it had not seen before: look again after `TICK_MIN`. Not after
    /// a look that was itself such a re-look: a call first seen there began at most `TICK_MIN`
    /// before it, so the next look, one tick later, still judges it within `TICK_MIN` plus a
    /// tick of its start, the bound a re-look gives a call first seen a tick after the look
    /// before. (Re-looking after every re-look that found yet another call kept the watchdog
    /// at `TICK_MIN` under steady load, where nearly every look finds a new call: 0.09–0.11
    /// wake-ups per S2 request at 5,000–9,000 requests a second, 3–6% of the server's CPU, on
    /// a loaded 2-core VM; benchmarks/results/2026-11-28-req9.)
    recheck: bool,
    /// The tick before the current call was seen running, or before the doze the call woke the
    /// watchdog from: back to it when that call ends by itself (a call the OS preempted, one that
    /// computed for a while, or one after a quiet second, is no reason to look closely at the
    /// calls after it); `None` after a takeover (the tick ramps up from `TICK_MIN`).
    resume_tick: Option<Duration>,
}

impl Watch {
    pub(super) fn new(now: Instant) -> Watch {
        Watch {
            last: u64::MAX,
            tick: TICK_MIN,
            calm: 0,
            quiet: Duration::ZERO,
            sparse: false,
            window_seq: 0,
            last_wake: now,
            running_looks: 0,
            running_since: now,
            recheck: false,
            resume_tick: None,
        }
    }

    /// How long to sleep before the next look: `TICK_MIN` after the first sight of a call,
    /// `TICK_COMPUTING` at least while the loop thread computes, else the tick.
    pub(super) fn next_sleep(&self, computing: bool) -> Duration {
        if self.recheck {
            TICK_MIN
        } else if computing {
            self.tick.max(TICK_COMPUTING)
        } else {
            self.tick
        }
    }

    /// One look at `seq`, the inline-call sequence number, at `now`; `dispatching`: the server
    /// is in dispatch mode, where every call goes to the pool and none is left to judge until
    /// the mode ends and an inline call parks, which wakes the watchdog (`Scheduler::park`).
    pub(super) fn look(&mut self, seq: u64, now: Instant, dispatching: bool) -> Look {
        let odd = !seq.is_multiple_of(2);
        let new_call = odd && seq != self.last;
        let verdict = if odd && seq == self.last {
            self.running_looks += 1;
            if self.running_looks == 1 {
                self.running_since = now;
                if self.resume_tick.is_none() {
                    self.resume_tick = Some(self.tick);
                }
            }
            self.tick = TICK_MIN;
            self.calm = 0;
            let cpu_bound = now.duration_since(self.running_since) >= CPU_BOUND_TAKEOVER;
            Look::Running {
                first: self.running_looks == 1,
                read_state: self.running_looks.is_power_of_two() || cpu_bound,
                cpu_bound,
            }
        } else {
            self.running_looks = 0;
            if let Some(tick) = self.resume_tick.take() {
                self.tick = tick;
            }
            self.calm += 1;
            self.window_seq += seq.wrapping_sub(self.last).min(u64::from(CALM_LOOKS) * 2);
            if self.calm >= CALM_LOOKS {
                // Fewer calls than two looks each, at the longest tick: ticking costs more
                // than being woken by each call.
                if self.tick == TICK_MAX && self.window_seq < u64::from(CALM_LOOKS) {
                    self.sparse = true;
                }
                self.calm = 0;
                self.window_seq = 0;
                self.tick = (self.tick * 2).min(TICK_MAX);
            }
            Look::Calm
        };
        if seq == self.last {
            self.quiet += self.tick;
        } else {
            self.quiet = Duration::ZERO;
        }
        self.last = seq;
        self.recheck = new_call && self.tick > TICK_MIN && !self.recheck;
        if (self.quiet >= WATCHDOG_IDLE_AFTER || self.sparse || dispatching)
            && seq.is_multiple_of(2)
        {
            return Look::Doze;
        }
        verdict
    }

    /// The running call was judged (`taken_over`, or found computing): the next looks count
    /// afresh; after a takeover the tick ramps up from `TICK_MIN` once calls run inline again
    /// (until then dispatch mode leaves the watchdog dozing: `look`).
    pub(super) fn judged(&mut self, taken_over: bool) {
        self.running_looks = 0;
        if taken_over {
            self.resume_tick = None;
        }
    }

    /// Woken from a doze by an inline call at `now`: look closely at this call (from
    /// `TICK_MIN`), then go back to the tick the watchdog dozed at (the longest, after a calm
    /// spell), as after any call that ends by itself; a takeover of it ramps the tick up from
    /// `TICK_MIN` instead (`judged`). Calls that come close together again end sparse mode.
    /// (Ramping up from `TICK_MIN` after every doze cost 256 looks, 240 ms of ticks at 2 ms or
    /// less, each time calls resumed after a second without one: 1.5 wake-ups per S3 fetch
    /// over a run of 200 fetches, against 0.5 at the longest tick.)
    pub(super) fn woken(&mut self, now: Instant) {
        if self.sparse && now.duration_since(self.last_wake) < SPARSE_GAP {
            self.sparse = false;
        }
        self.last_wake = now;
        self.quiet = Duration::ZERO;
        self.resume_tick = Some(self.tick);
        self.tick = TICK_MIN;
        self.calm = 0;
        self.window_seq = 0;
    }
}
