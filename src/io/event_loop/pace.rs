//! Pacing under a CPU quota (`--pace auto`; off by default, as measured it did not pay:
//! `benchmarks/results/2026-11-27-containers/`): the loop keeps its process's CPU use under the quota's
//! rate in small slices, sleeping the difference, so that the kernel never throttles the
//! cgroup and no request waits out the rest of a period.
//!
//! Why: a CFS quota (`docker run --cpus 0.5`, Kubernetes `limits.cpu: 500m`) lets the cgroup
//! run 50 ms of every 100 ms period. A server that computes at full speed spends the 50 ms in
//! the first half of each period and is stopped for the second: a request that comes then
//! waits up to 50 ms (S18, hello world at half a CPU: p99 50 ms for every server, one
//! throttled period in each). Paced, the process uses `PACE_SHARE` of the quota spread over
//! the period, and a request waits at most one pacing sleep (a few ms).
//!
//! How: a bucket of CPU time, filled at quota × `PACE_SHARE` per second of wall time up to
//! `PACE_BURST` and drained by the process's CPU clock (every thread: the loop's, the app's on
//! the pool, the watchdog's). Before the loop waits for events (`turn`), an empty bucket makes
//! it sleep until the bucket holds half of `PACE_BURST` again: the sleeps come about once per
//! `PACE_BURST / 2` of CPU, not at every turn. Over any span the process uses at most
//! rate × span + `PACE_BURST`: over a 100 ms period at half a CPU, 45 + 1 ms of its 50.
//! The allowance is read again every `READ_EVERY` (a process moved into a cgroup, a quota
//! changed while it runs), off the hot path. One process per cgroup is assumed (what
//! `--workers auto` starts below 1.5 CPUs); under a master with several workers each paces to
//! the whole quota and the kernel's throttling remains possible.

use std::time::{Duration, Instant};

use crate::clock::clock_time;
use crate::config::PacePolicy;
use crate::observe::allowance::Allowance;

/// The share of the quota the process paces itself to: the rest is the margin for what the
/// bucket cannot see in time (a burst of the pool's threads between two turns).
pub const PACE_SHARE: f64 = 0.9;

/// The most CPU time used at once above the paced rate (the bucket's size), and the most it
/// owes: CPU used beyond that while the loop could not sleep (the pool's threads computing
/// while it waited for events) is left to the kernel's quota, so that no sleep outlasts
/// (1.5 × `PACE_BURST`) / rate: 3.3 ms at half a CPU.
pub const PACE_BURST: Duration = Duration::from_millis(1);

/// How often the allowance is read again.
const READ_EVERY: Duration = Duration::from_secs(1);

/// The loop's pacing state (see the module doc).
#[derive(Debug)]
pub struct Pace {
    off: bool,
    /// CPUs per second of wall time the process paces itself to; None: no quota.
    rate: Option<f64>,
    /// CPU seconds the process may still use now (negative: owed).
    bucket: f64,
    /// The previous turn: when, and the process's CPU clock then.
    last: Option<(Instant, Duration)>,
    next_read: Instant,
}

impl Pace {
    pub fn new(policy: PacePolicy) -> Pace {
        let mut pace = Pace {
            off: policy == PacePolicy::Off,
            rate: None,
            bucket: 0.0,
            last: None,
            next_read: Instant::now(),
        };
        pace.read(Instant::now());
        pace
    }

    fn read(&mut self, now: Instant) {
        self.next_read = now + READ_EVERY;
        if !self.off {
            self.rate = Allowance::read().quota.map(|q| q * PACE_SHARE);
        }
    }

    /// Before the loop waits for events: sleep off what the process used above its rate.
    pub fn turn(&mut self) {
        if self.off {
            return;
        }
        let now = Instant::now();
        if now >= self.next_read {
            self.read(now);
        }
        let Some(rate) = self.rate else {
            self.last = None;
            return;
        };
        let Some(cpu) = clock_time(libc::CLOCK_PROCESS_CPUTIME_ID) else {
            return;
        };
        if let Some((t0, c0)) = self.last {
            let earned = now.saturating_duration_since(t0).as_secs_f64() * rate;
            let used = cpu.saturating_sub(c0).as_secs_f64();
            let most = PACE_BURST.as_secs_f64();
            self.bucket = (self.bucket + earned - used).clamp(-most, most);
        }
        self.last = Some((now, cpu));
        if let Some(sleep) = owed(self.bucket, rate) {
            std::thread::sleep(sleep);
        }
    }
}

/// How long a loop whose bucket holds `bucket` CPU seconds sleeps at `rate`: until the bucket
/// holds half of `PACE_BURST`, once it is empty; None while it is not.
pub fn owed(bucket: f64, rate: f64) -> Option<Duration> {
    if bucket >= 0.0 || rate <= 0.0 {
        return None;
    }
    Some(Duration::from_secs_f64(
        (PACE_BURST.as_secs_f64() / 2.0 - bucket) / rate,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_bucket_sleeps_until_half_full_at_the_rate() {
        assert_eq!(owed(0.001, 0.45), None);
        let s = owed(-0.0001, 0.5).unwrap();
        assert!((s.as_secs_f64() - 0.0012).abs() < 1e-9, "{s:?}");
    }
}
