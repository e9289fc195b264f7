//! Whether the cgroup's CPU quota binds: stops the process in a good share of its periods
//! (`QuotaBinding`, judged from `cpu.stat` by the watchdog each second), and the last verdict
//! for every rule that depends on it ([`quota_binds`]).
//!
//! Why: the rules made for a quota (the pool's room kept to what the quota can run, two places
//! at the start gate, calls judged by their CPU time; `wsgi::pool`, `server::scheduler`) pay
//! where the quota stops the process: throttled periods leave every call whose sleep ended in
//! them runnable at once. A quota the process does not reach costs it nothing, and those rules
//! then only cost: S5's sleeping app at 1,000 clients in a cgroup of 1.5 CPUs on 2 cores (one
//! throttled period in 60 or fewer) ran 13% faster without them, at a lower p99
//! (benchmarks/results/2026-11-28-s5-group/). So they apply while the quota binds, judged from
//! the process's own throttling, and on a cpuset below the machine (no throttling there: the
//! process has those CPUs and no more).
//!
//! Until the first reading is judged (a second), and for a quota just set, the quota binds
//! (the rules as if it did): a server started in a container under load must not meet its
//! first throttled periods without them. That first verdict is an assumption, so the first
//! reading below `BINDS_SHARE` ends it at once; a binding seen in a reading is kept through
//! `CALM_READINGS`.

use std::sync::atomic::{AtomicBool, Ordering};

use super::allowance::Throttling;

/// The share of its periods in which the quota stopped the cgroup, over one reading, from which
/// the quota binds. Three in ten periods (a second at the default 100 ms): S5's sleeping app
/// at 1.0 CPU was stopped in 40-90% of them, hello world at 0.5 CPU in nearly all; at 1.5 CPUs
/// on 2 cores, without the quota's rules, in 5% (one or two at a time, which one reading of ten
/// periods must not take for a binding quota).
pub const BINDS_SHARE: f64 = 0.3;

/// Readings in a row below `BINDS_SHARE` after which a binding quota no longer binds: five
/// seconds at the watchdog's reading each second. A process whose quota binds and that then
/// uses less (its load fell) keeps the rules through a pause of a few seconds in its load.
pub const CALM_READINGS: u32 = 5;

/// The last verdict (see the module doc): true until the first.
static BINDS: AtomicBool = AtomicBool::new(true);

/// Whether the process's CPU quota binds, by the watchdog's last judgement (true where it has
/// not judged yet). One atomic load: callable on any path.
pub fn quota_binds() -> bool {
    BINDS.load(Ordering::Relaxed)
}

/// The judge of successive `cpu.stat` readings (see the module doc).
#[derive(Debug)]
pub struct QuotaBinding {
    /// The last reading (None: none yet, or no quota then).
    last: Option<Throttling>,
    binds: bool,
    /// Whether a reading showed it binding (else `binds` is the first verdict's assumption).
    seen: bool,
    /// Readings in a row below `BINDS_SHARE` while binding.
    calm: u32,
}

impl Default for QuotaBinding {
    fn default() -> Self {
        QuotaBinding {
            last: None,
            binds: true,
            seen: false,
            calm: 0,
        }
    }
}

impl QuotaBinding {
    /// A new reading: `quota` whether the cgroup has a CPU quota, `now` its `cpu.stat` (None
    /// where it cannot be read). Returns the verdict and publishes it for [`quota_binds`].
    pub fn observe(&mut self, quota: bool, now: Option<Throttling>) -> bool {
        let verdict = self.judge(quota, now);
        BINDS.store(verdict, Ordering::Relaxed);
        verdict
    }

    /// [`observe`](Self::observe) without publishing (the rule alone, for tests).
    pub fn judge(&mut self, quota: bool, now: Option<Throttling>) -> bool {
        if !quota {
            // No quota: nothing binds; a quota set later starts as binding.
            *self = QuotaBinding::default();
            return false;
        }
        let Some(now) = now else {
            return self.binds;
        };
        let Some(before) = self.last.replace(now) else {
            return self.binds;
        };
        let periods = now.periods.saturating_sub(before.periods);
        if periods == 0 {
            return self.binds;
        }
        let share = now.throttled.saturating_sub(before.throttled) as f64 / periods as f64;
        if share >= BINDS_SHARE {
            self.binds = true;
            self.seen = true;
            self.calm = 0;
        } else if !self.seen {
            self.binds = false;
        } else if self.binds {
            self.calm += 1;
            if self.calm >= CALM_READINGS {
                self.binds = false;
                self.calm = 0;
            }
        }
        self.binds
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn stat(periods: u64, throttled: u64) -> Option<Throttling> {
        Some(Throttling {
            periods,
            throttled,
            throttled_time: Duration::ZERO,
        })
    }

    #[test]
    fn a_quota_seen_binding_binds_until_calm_readings_in_a_row_say_otherwise() {
        let mut b = QuotaBinding::default();
        assert!(b.judge(true, stat(0, 0)), "first reading: binds");
        assert!(b.judge(true, stat(10, 3)), "three in ten periods: binds");
        let mut periods = 10;
        for i in 1..CALM_READINGS {
            periods += 10;
            assert!(
                b.judge(true, stat(periods, 0)),
                "calm reading {i}: still binds"
            );
        }
        periods += 10;
        assert!(
            !b.judge(true, stat(periods, 0)),
            "the fifth calm reading ends it"
        );
        periods += 10;
        assert!(
            !b.judge(true, stat(periods, 2)),
            "two in ten periods: not binding"
        );
        periods += 10;
        assert!(
            b.judge(true, stat(periods, 5)),
            "three in ten: binds at once"
        );
    }

    #[test]
    fn a_stopped_reading_restarts_the_calm_count() {
        let mut b = QuotaBinding::default();
        b.judge(true, stat(0, 0));
        b.judge(true, stat(0, 0));
        for r in 1..CALM_READINGS as u64 {
            b.judge(true, stat(10 * r, 3 * r));
        }
        let (at, stopped) = (10 * CALM_READINGS as u64, 3 * CALM_READINGS as u64);
        for r in 1..CALM_READINGS as u64 {
            assert!(b.judge(true, stat(at + 10 * r, stopped)), "calm, {r}");
        }
        assert!(
            b.judge(true, stat(at + 10 * CALM_READINGS as u64, stopped + 4)),
            "stopped in 4 of 10"
        );
        let at = at + 10 * CALM_READINGS as u64;
        for r in 1..CALM_READINGS as u64 {
            assert!(
                b.judge(true, stat(at + 10 * r, stopped + 4)),
                "calm again, {r}"
            );
        }
        assert!(!b.judge(true, stat(at + 10 * CALM_READINGS as u64, stopped + 4)));
    }

    #[test]
    fn a_first_calm_reading_ends_the_assumed_binding_at_once() {
        let mut b = QuotaBinding::default();
        assert!(b.judge(true, stat(100, 7)), "before any reading: assumed");
        assert!(!b.judge(true, stat(110, 8)), "one in ten: not binding");
        assert!(b.judge(true, stat(120, 11)), "three in ten: binds");
    }

    #[test]
    fn no_quota_never_binds_and_a_new_quota_starts_binding() {
        let mut b = QuotaBinding::default();
        assert!(!b.judge(false, stat(0, 0)));
        assert!(!b.judge(false, None));
        assert!(b.judge(true, None), "a quota without cpu.stat: binds");
        assert!(b.judge(true, stat(100, 0)));
    }

    #[test]
    fn no_period_passed_keeps_the_verdict() {
        let mut b = QuotaBinding::default();
        b.judge(true, stat(50, 0));
        b.judge(true, stat(60, 5));
        for _ in 0..2 * CALM_READINGS {
            assert!(b.judge(true, stat(50, 0)), "no new period: no evidence");
        }
    }
}
