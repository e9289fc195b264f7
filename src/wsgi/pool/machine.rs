//! How idle the CPU the process may use was lately (`MachineIdle`, for `Climb::machine`: no
//! growth of the blocking class's room as a trial below `climb::MACHINE_IDLE_LEAST`). Under a
//! cgroup CPU quota or a cpuset below the machine's CPUs (`observe::allowance`, `own_cores`):
//! the share of that allowance the process did not use (`quota_idle`). Without either: the
//! machine's, from the first line of /proc/stat (`ticks_idle`). Read by the pool's watcher before it takes the pool's lock; the two
//! formulas are plain functions, which the replay of the scheduler's rules
//! (`server/scheduler/replay.rs`) feeds 2-, 16- and 64-core figures.

use std::time::{Duration, Instant};

use crate::clock::clock_time;
use crate::observe::allowance::{online_cpus, Allowance};

/// The shortest span the idle share is read over: /proc/stat counts in ticks of 10 ms.
const MACHINE_SPAN: Duration = Duration::from_millis(100);

/// How often the allowance is read again: a process can be moved into a cgroup, or its quota
/// changed, while it runs (read once at start, a server moved into a container's cgroup after
/// it started judged the machine by the host's /proc/stat for its whole life).
const ALLOWANCE_EVERY: Duration = Duration::from_secs(1);

/// The idle share of the CPU the process may use over the last `MACHINE_SPAN` or more. Under a
/// quota or a cpuset, its own CPU clock against those cores × time (a container's other
/// processes are assumed to use little: on 64 cores with 8 of them in the cpuset, the machine
/// can be 88% idle while the 8 are busy); without either, the machine's idle, iowait and niced time over all its CPUs (a
/// process at a high nice value yields its CPU to ours), the line read alone (the whole file is
/// thousands of lines on a large machine).
pub(super) struct MachineIdle {
    /// The CPUs the process may use, where below the machine's (`own_cores`).
    quota: Option<f64>,
    /// One core of the allowance: min(1, its cores) (what the app threads' share is of).
    one_core: f64,
    /// When the allowance was read.
    read_at: Instant,
    /// The last reading: when, and the idle and total ticks then (under a quota: the
    /// process's CPU nanoseconds and 0).
    last: Option<(Instant, u64, u64)>,
    idle: f64,
    /// The share of the quota used over the last span, once read and not yet taken
    /// (`take_quota_used`); `Some(None)`: a reading without a quota.
    quota_used: Option<Option<f64>>,
}

/// The CPUs whose idle share the rule reads for a process allowed `a` on a machine of `online`
/// CPUs: its quota or cpuset where below them; None: the machine's (from /proc/stat).
pub(crate) fn own_cores(a: &Allowance, online: usize) -> Option<f64> {
    a.below(online).then(|| a.cores())
}

/// The share of a quota of `quota` CPUs left unused by a process that used `used` of CPU over
/// `wall`.
pub(crate) fn quota_idle(used: Duration, wall: Duration, quota: f64) -> f64 {
    quota_idle_unclamped(used, wall, quota).clamp(0.0, 1.0)
}

/// `quota_idle`, negative for a burst past the quota.
fn quota_idle_unclamped(used: Duration, wall: Duration, quota: f64) -> f64 {
    if wall.is_zero() || quota <= 0.0 {
        return 1.0;
    }
    1.0 - used.as_secs_f64() / (wall.as_secs_f64() * quota)
}

/// The idle share of a machine whose CPUs counted `idle` idle ticks of `total` (all CPUs).
pub(crate) fn ticks_idle(idle: u64, total: u64) -> f64 {
    if total == 0 {
        return 1.0;
    }
    idle as f64 / total as f64
}

impl MachineIdle {
    /// The reading of this process's allowance, read now.
    pub(super) fn read(now: Instant) -> MachineIdle {
        let mut m = MachineIdle {
            quota: None,
            one_core: 1.0,
            read_at: now,
            last: None,
            idle: 1.0,
            quota_used: None,
        };
        m.read_allowance(now);
        m
    }

    fn read_allowance(&mut self, now: Instant) {
        let a = Allowance::read();
        let quota = own_cores(&a, online_cpus());
        if quota != self.quota {
            self.quota = quota;
            self.last = None;
        }
        self.one_core = a.cores().min(1.0);
        self.read_at = now;
    }

    /// One core of the CPU the process may use: under a quota of half a CPU, half a core is an
    /// interpreter kept busy (`climb::INTERPRETER_BUSY`).
    pub(super) fn one_core(&self) -> f64 {
        self.one_core
    }

    /// The share as of `now` (read again once `MACHINE_SPAN` has passed; 1.0 until known; the
    /// allowance read again once `ALLOWANCE_EVERY` has).
    pub(super) fn idle(&mut self, now: Instant) -> f64 {
        if now.saturating_duration_since(self.read_at) >= ALLOWANCE_EVERY {
            self.read_allowance(now);
        }
        if self
            .last
            .is_some_and(|(t, ..)| now.saturating_duration_since(t) < MACHINE_SPAN)
        {
            return self.idle;
        }
        if let Some(quota) = self.quota {
            let Some(cpu) = clock_time(libc::CLOCK_PROCESS_CPUTIME_ID) else {
                return self.idle;
            };
            let cpu = cpu.as_nanos() as u64;
            if let Some((t0, cpu0, _)) = self.last {
                let used = Duration::from_nanos(cpu.saturating_sub(cpu0));
                let wall = now.saturating_duration_since(t0);
                self.idle = quota_idle(used, wall, quota);
                self.quota_used = Some(Some(1.0 - quota_idle_unclamped(used, wall, quota)));
            }
            self.last = Some((now, cpu, 0));
            return self.idle;
        }
        let Some((idle, total)) = first_line("/proc/stat").and_then(|line| cpu_ticks(&line)) else {
            return self.idle;
        };
        if let Some((_, idle0, total0)) = self.last {
            if total > total0 {
                self.idle = ticks_idle(idle.saturating_sub(idle0), total - total0);
            }
        }
        self.quota_used = Some(None);
        self.last = Some((now, idle, total));
        self.idle
    }
}

impl MachineIdle {
    /// The share of the quota the process used over the span last read (`Some(None)`: read
    /// without a quota), once per reading: None until the next one.
    pub(super) fn take_quota_used(&mut self) -> Option<Option<f64>> {
        self.quota_used.take()
    }
}

/// The first line of a file (one read of a few hundred bytes).
fn first_line(path: &str) -> Option<String> {
    use std::io::Read;
    let mut buf = [0u8; 256];
    let n = std::fs::File::open(path).ok()?.read(&mut buf).ok()?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    Some(text.lines().next()?.to_string())
}

/// Idle (nice + idle + iowait) and total ticks of all CPUs, from /proc/stat's `cpu` line.
fn cpu_ticks(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let idle = ticks.get(1)? + ticks.get(3)? + ticks.get(4).copied().unwrap_or(0);
    // Guest time is counted in user time already.
    let total = ticks.iter().take(8).sum();
    Some((idle, total))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{cpu_ticks, quota_idle, ticks_idle};

    #[test]
    fn the_cpu_line_of_proc_stat_gives_idle_and_total_ticks() {
        let stat = "cpu  100 5 50 800 20 3 2 1 7 0\ncpu0 50 2 25 400 10 1 1 0 3 0\n";
        assert_eq!(cpu_ticks(stat), Some((825, 981)));
        assert_eq!(cpu_ticks("intr 1 2 3"), None);
    }

    #[test]
    fn the_idle_share_is_of_the_quota_or_of_the_ticks() {
        let s = Duration::from_secs(1);
        assert!((quota_idle(s * 3 / 2, s, 2.0) - 0.25).abs() < 1e-9);
        assert_eq!(
            quota_idle(s * 3, s, 2.0),
            0.0,
            "a burst past the quota is none idle"
        );
        assert_eq!(ticks_idle(25, 100), 0.25);
        assert_eq!(ticks_idle(0, 0), 1.0);
    }
}
