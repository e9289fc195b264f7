//! The CPU this process may use, as the kernel enforces it: the cgroup's CPU quota (cgroup v2
//! `cpu.max`; v1 `cpu.cfs_quota_us` over `cpu.cfs_period_us`), the CPUs it may run on (its
//! affinity, which a cpuset sets), and how often the quota stopped it (`cpu.stat`: v2
//! `nr_throttled`/`throttled_usec`, v1 `nr_throttled`/`throttled_time` in ns).
//!
//! A container with `--cpus 0.5` (Kubernetes `limits.cpu: 500m`) gets 50 ms of every 100 ms:
//! the host's core count and `/proc/stat` say nothing of it. The cgroup is found as the kernel
//! gives it: `/proc/self/cgroup` names the process's path in each hierarchy, and
//! `/proc/self/mountinfo` where (and from which root) each hierarchy is mounted. Every level
//! from that path up to the mount's root may hold a quota; the smallest applies (a nested
//! cgroup cannot use more than its parent).
//!
//! Read (`Allowance::read`) at start by `--workers auto` (through `_core.cpu_allowance`); every
//! second by the slow-call rule (`Scheduler::refresh_quota`), the pool's machine-idle rule
//! (`wsgi::pool::machine`), `--pace auto` and the spin's `auto`, so that a process moved into a
//! cgroup after it started, or given a quota, follows it; at each scrape by the metrics.
//! `throttling()` re-reads `cpu.stat` (one small file) each time it is called.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// What the process may use.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Allowance {
    /// CPUs the process may run on (its affinity mask; the machine's online CPUs where that
    /// cannot be read).
    pub cpus: usize,
    /// The smallest quota on the cgroup's path, in CPUs (quota / period); None: no quota.
    pub quota: Option<f64>,
    /// The period of that quota (the kernel's default is 100 ms).
    pub period: Option<Duration>,
    /// The `cpu.stat` file of the process's own cgroup, for `throttling`.
    stat: Option<(PathBuf, Version)>,
}

/// Which cgroup version a file belongs to: their names and units differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// One hierarchy's reading: the smallest quota on the path (CPUs, period), and its `cpu.stat`.
struct Found {
    quota: Option<(f64, Duration)>,
    stat: PathBuf,
    version: Version,
}

/// How often the quota stopped the cgroup, since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Throttling {
    /// Periods in which the cgroup ran at all.
    pub periods: u64,
    /// Periods in which it used up its quota and was stopped until the next.
    pub throttled: u64,
    /// The time it spent stopped.
    pub throttled_time: Duration,
}

/// Where the files are: the real system, or a fixture tree for tests.
pub struct Sources<'a> {
    /// Prefix of every mount point (`/` for the real system).
    pub root: &'a Path,
    /// The text of `/proc/self/cgroup`.
    pub cgroup: &'a str,
    /// The text of `/proc/self/mountinfo`.
    pub mountinfo: &'a str,
    /// CPUs in the affinity mask.
    pub cpus: usize,
}

impl Allowance {
    /// This process's allowance, read now.
    pub fn read() -> Allowance {
        let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        Allowance::from_sources(&Sources {
            root: Path::new("/"),
            cgroup: &cgroup,
            mountinfo: &mountinfo,
            cpus: affinity_cpus(),
        })
    }

    /// The allowance the given files describe: the first hierarchy (v2, then v1's `cpu`
    /// controller) with a quota on the path; without one, the first whose `cpu.stat` counts
    /// throttling (a hybrid system mounts v2 without its `cpu` controller).
    pub fn from_sources(src: &Sources) -> Allowance {
        let found: Vec<Found> = [Version::V2, Version::V1]
            .into_iter()
            .filter_map(|version| {
                let (mount, own) = cgroup_dir(src, version)?;
                Some(Found {
                    quota: smallest_quota(&mount, &own, version),
                    stat: own.join("cpu.stat"),
                    version,
                })
            })
            .collect();
        let counts = |f: &Found| {
            std::fs::read_to_string(&f.stat)
                .ok()
                .and_then(|text| parse_stat(&text, f.version))
                .is_some()
        };
        let pick = found
            .iter()
            .find(|f| f.quota.is_some())
            .or_else(|| found.iter().find(|f| counts(f)));
        Allowance {
            cpus: src.cpus.max(1),
            quota: pick.and_then(|f| f.quota.map(|(q, _)| q)),
            period: pick.and_then(|f| f.quota.map(|(_, p)| p)),
            stat: pick.map(|f| (f.stat.clone(), f.version)),
        }
    }

    /// The CPUs the process may use: the quota, at most its CPUs.
    pub fn cores(&self) -> f64 {
        let cpus = self.cpus as f64;
        self.quota.map_or(cpus, |q| q.min(cpus))
    }

    /// Worker processes for `--workers auto`: the quota rounded up (as Go's automaxprocs
    /// rounds it; a worker uses one core at most while its app holds the GIL), at most the
    /// CPUs, at least one.
    pub fn workers(&self) -> usize {
        let by_quota = self
            .quota
            .map_or(self.cpus, |q| (q - 1e-9).ceil().max(1.0) as usize);
        by_quota.min(self.cpus).max(1)
    }

    /// Whether the process has less than every online CPU of the machine to itself.
    pub fn below_machine(&self) -> bool {
        self.below(online_cpus())
    }

    /// Whether the process has less than `online` CPUs (a machine's) to itself.
    pub fn below(&self, online: usize) -> bool {
        self.cores() < online as f64
    }

    /// The cgroup's throttling now; None without a `cpu.stat` that counts it.
    pub fn throttling(&self) -> Option<Throttling> {
        let (path, version) = self.stat.as_ref()?;
        parse_stat(&std::fs::read_to_string(path).ok()?, *version)
    }
}

/// The mount point of `version`'s CPU hierarchy and the process's own directory in it; None
/// when the process is in no such hierarchy or it is not mounted.
fn cgroup_dir(src: &Sources, version: Version) -> Option<(PathBuf, PathBuf)> {
    let path = src.cgroup.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let wanted = match version {
            Version::V2 => controllers.is_empty(),
            Version::V1 => controllers.split(',').any(|c| c == "cpu"),
        };
        wanted.then_some(path)
    })?;
    let mount = src.mountinfo.lines().find_map(|line| {
        // id parent major:minor root mount-point options... - fstype source super-options
        let (head, tail) = line.split_once(" - ")?;
        let fields: Vec<&str> = head.split(' ').collect();
        let mut tail = tail.split(' ');
        let (fstype, _source, options) = (tail.next()?, tail.next()?, tail.next().unwrap_or(""));
        let ours = match version {
            Version::V2 => fstype == "cgroup2",
            Version::V1 => fstype == "cgroup" && options.split(',').any(|o| o == "cpu"),
        };
        ours.then(|| (fields.get(3).copied(), fields.get(4).copied()))
            .and_then(|(root, point)| Some((root?.to_string(), point?.to_string())))
    });
    let (mount_root, point) = mount?;
    // The path is relative to the hierarchy's root; the mount shows the part under
    // `mount_root` (a container's own cgroup, with a cgroup namespace or a bind mount).
    let rel = path
        .strip_prefix(mount_root.as_str())
        .unwrap_or(path)
        .trim_start_matches('/');
    let base = src.root.join(point.trim_start_matches('/'));
    let own = if rel.is_empty() {
        base.clone()
    } else {
        base.join(rel)
    };
    Some((base, own))
}

/// The smallest quota from `own` up to `mount` (CPUs, and its period).
fn smallest_quota(mount: &Path, own: &Path, version: Version) -> Option<(f64, Duration)> {
    let mut best: Option<(f64, Duration)> = None;
    let mut dir = Some(own);
    while let Some(d) = dir {
        if let Some((cpus, period)) = read_quota(d, version) {
            if best.is_none_or(|(b, _)| cpus < b) {
                best = Some((cpus, period));
            }
        }
        if d == mount {
            break;
        }
        dir = d.parent().filter(|p| p.starts_with(mount));
    }
    best
}

/// One directory's quota in CPUs and its period; None where there is none ("max", -1).
fn read_quota(dir: &Path, version: Version) -> Option<(f64, Duration)> {
    let (quota_us, period_us) = match version {
        Version::V2 => {
            let text = std::fs::read_to_string(dir.join("cpu.max")).ok()?;
            let mut parts = text.split_whitespace();
            let quota = parts.next()?.parse::<u64>().ok()?; // "max": no quota
            let period = parts.next().map_or(Some(100_000), |p| p.parse().ok())?;
            (quota, period)
        }
        Version::V1 => {
            let read = |name: &str| -> Option<i64> {
                std::fs::read_to_string(dir.join(name))
                    .ok()?
                    .trim()
                    .parse()
                    .ok()
            };
            let quota = u64::try_from(read("cpu.cfs_quota_us")?).ok()?; // -1: no quota
            (quota, u64::try_from(read("cpu.cfs_period_us")?).ok()?)
        }
    };
    (quota_us > 0 && period_us > 0).then(|| {
        (
            quota_us as f64 / period_us as f64,
            Duration::from_micros(period_us),
        )
    })
}

fn parse_stat(text: &str, version: Version) -> Option<Throttling> {
    let mut out = Throttling::default();
    let mut seen = false;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(' ') else {
            continue;
        };
        let Ok(value) = value.trim().parse::<u64>() else {
            continue;
        };
        match (key, version) {
            ("nr_periods", _) => out.periods = value,
            ("nr_throttled", _) => {
                out.throttled = value;
                seen = true;
            }
            ("throttled_usec", Version::V2) => out.throttled_time = Duration::from_micros(value),
            ("throttled_time", Version::V1) => out.throttled_time = Duration::from_nanos(value),
            _ => {}
        }
    }
    seen.then_some(out)
}

/// CPUs in this thread's affinity mask (what a cpuset allows); the online CPUs where it
/// cannot be read.
fn affinity_cpus() -> usize {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity writes at most
    // size_of::<cpu_set_t>() bytes into it, and CPU_COUNT only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            return (libc::CPU_COUNT(&set) as usize).max(1);
        }
    }
    online_cpus()
}

/// Whether the cgroup was throttled between two readings of its `nr_throttled` (`Throttling`;
/// None where `cpu.stat` does not count it): the spin's `auto` and the start gate's places.
pub fn throttled_between(before: Option<u64>, now: Option<u64>) -> bool {
    matches!((before, now), (Some(b), Some(n)) if n > b)
}

/// The machine's online CPUs.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf has no pointer arguments.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).max(1)
}

#[cfg(test)]
#[path = "allowance_tests.rs"]
mod tests;
