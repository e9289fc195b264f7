//! The allowance reader fed fixture trees: the mount table and `/proc/self/cgroup` of a
//! Docker container on cgroup v2, a Kubernetes pod on cgroup v1, a nested quota, a hybrid
//! host with no quota, and a 64-CPU machine with and without a cpuset.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Allowance, Sources, Throttling};

/// A fresh directory holding `files` (path relative to it, contents).
fn tree(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let root = std::env::temp_dir().join(format!("sg-allowance-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for (path, text) in files {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    root
}

fn read(root: &Path, cgroup: &str, mountinfo: &str, cpus: usize) -> Allowance {
    Allowance::from_sources(&Sources {
        root,
        cgroup,
        mountinfo,
        cpus,
    })
}

/// `docker run --cpus 0.5` on a cgroup v2 host with a cgroup namespace: the container sees its
/// own cgroup as `/` and the hierarchy mounted from it.
#[test]
fn docker_on_cgroup_v2_half_a_cpu() {
    let root = tree(
        "v2",
        &[
            ("sys/fs/cgroup/cpu.max", "50000 100000\n"),
            (
                "sys/fs/cgroup/cpu.stat",
                "usage_usec 912345\nuser_usec 800000\nsystem_usec 112345\nnr_periods 120\n\
                 nr_throttled 37\nthrottled_usec 1850000\nnr_bursts 0\nburst_usec 0\n",
            ),
        ],
    );
    let mountinfo = "1371 1362 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw,nsdelegate,memory_recursiveprot\n";
    let a = read(&root, "0::/\n", mountinfo, 64);
    assert_eq!(a.quota, Some(0.5));
    assert_eq!(a.period, Some(Duration::from_millis(100)));
    assert_eq!(a.cores(), 0.5);
    assert_eq!(a.workers(), 1);
    assert_eq!(
        a.throttling(),
        Some(Throttling {
            periods: 120,
            throttled: 37,
            throttled_time: Duration::from_micros(1_850_000)
        })
    );
}

/// A Kubernetes pod with `limits.cpu: 1500m` on cgroup v1 (no cgroup namespace): the container's
/// path under the kubepods hierarchy, the controller mounted at its root.
#[test]
fn kubernetes_on_cgroup_v1_one_and_a_half_cpus() {
    let pod = "kubepods/burstable/pod6f1c/3b9e";
    let dir = format!("sys/fs/cgroup/cpu,cpuacct/{pod}");
    let root = tree(
        "v1",
        &[
            (&format!("{dir}/cpu.cfs_quota_us"), "150000\n"),
            (&format!("{dir}/cpu.cfs_period_us"), "100000\n"),
            (
                &format!("{dir}/cpu.stat"),
                "nr_periods 5000\nnr_throttled 250\nthrottled_time 12500000000\n",
            ),
            ("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n"),
            ("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n"),
        ],
    );
    let cgroup = format!(
        "12:memory:/{pod}\n11:cpu,cpuacct:/{pod}\n5:cpuset:/{pod}\n1:name=systemd:/{pod}\n0::/\n"
    );
    let mountinfo = "\
30 24 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec - tmpfs tmpfs ro,mode=755
35 30 0:31 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime - cgroup cgroup rw,cpu,cpuacct
36 30 0:32 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime - cgroup cgroup rw,memory
";
    let a = read(&root, &cgroup, mountinfo, 8);
    assert_eq!(a.quota, Some(1.5));
    assert_eq!(a.workers(), 2);
    assert_eq!(a.cores(), 1.5);
    let t = a.throttling().unwrap();
    assert_eq!((t.periods, t.throttled), (5000, 250));
    assert_eq!(t.throttled_time, Duration::from_millis(12_500));
}

/// A quota on the parent is the limit even when the child's own is larger (or absent).
#[test]
fn the_smallest_quota_on_the_path_applies() {
    let root = tree(
        "nested",
        &[
            ("cg/app.slice/cpu.max", "200000 100000\n"),
            ("cg/app.slice/web/cpu.max", "max 100000\n"),
            ("cg/app.slice/web/worker/cpu.max", "400000 100000\n"),
            (
                "cg/app.slice/web/worker/cpu.stat",
                "usage_usec 5\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n",
            ),
        ],
    );
    let mountinfo = "29 23 0:27 / /cg rw,nosuid - cgroup2 cgroup2 rw\n";
    let a = read(&root, "0::/app.slice/web/worker\n", mountinfo, 16);
    assert_eq!(a.quota, Some(2.0));
    assert_eq!(a.workers(), 2);
    assert_eq!(a.throttling().unwrap().throttled, 0);
}

/// A mount of a part of the hierarchy (its root field is not `/`): the path in
/// /proc/self/cgroup is relative to the hierarchy, so the mount's root is taken off it.
#[test]
fn a_mount_of_a_subtree_is_followed() {
    let root = tree("subtree", &[("sys/fs/cgroup/cpu.max", "25000 50000\n")]);
    let mountinfo =
        "40 30 0:26 /system.slice/docker-ab12.scope /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
    let a = read(&root, "0::/system.slice/docker-ab12.scope\n", mountinfo, 2);
    assert_eq!(a.quota, Some(0.5));
    assert_eq!(a.period, Some(Duration::from_millis(50)));
}

/// A hybrid host without a quota (this project's CI machines): v2 mounted without its `cpu`
/// controller, v1's `cpu` at -1. No quota; throttling from v1's `cpu.stat`, which counts it.
#[test]
fn no_quota_on_a_hybrid_host() {
    let root = tree(
        "hybrid",
        &[
            (
                "sys/fs/cgroup/unified/cpu.stat",
                "usage_usec 1\nuser_usec 1\nsystem_usec 0\n",
            ),
            ("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n"),
            ("sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n"),
            (
                "sys/fs/cgroup/cpu/cpu.stat",
                "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
            ),
        ],
    );
    let mountinfo = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
44 31 0:41 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    let a = read(&root, "3:cpuset:/\n1:cpu:/\n0::/\n", mountinfo, 2);
    assert_eq!(a.quota, None);
    assert_eq!(a.cores(), 2.0);
    assert_eq!(a.workers(), 2);
    assert_eq!(a.throttling(), Some(Throttling::default()));
}

/// A 64-CPU machine: no quota gives 64 workers; a cpuset of 4 bounds both the cores and the
/// workers, whatever the quota; a quota above the cpuset is bounded by it.
#[test]
fn sixty_four_cpus_with_and_without_a_cpuset() {
    let root = tree(
        "many",
        &[
            ("cg/cpu.max", "max 100000\n"),
            ("cg/small/cpu.max", "800000 100000\n"),
        ],
    );
    let mountinfo = "29 23 0:27 / /cg rw - cgroup2 cgroup2 rw\n";
    let whole = read(&root, "0::/\n", mountinfo, 64);
    assert_eq!(
        (whole.quota, whole.workers(), whole.cores()),
        (None, 64, 64.0)
    );
    let pinned = read(&root, "0::/\n", mountinfo, 4);
    assert_eq!((pinned.workers(), pinned.cores()), (4, 4.0));
    let quota_above_cpuset = read(&root, "0::/small\n", mountinfo, 4);
    assert_eq!(quota_above_cpuset.quota, Some(8.0));
    assert_eq!(
        (quota_above_cpuset.workers(), quota_above_cpuset.cores()),
        (4, 4.0)
    );
}

/// Nothing readable (no /proc, no cgroup files): the CPUs alone, at least one.
#[test]
fn nothing_readable_is_the_cpus_alone() {
    let a = read(Path::new("/nonexistent"), "", "", 0);
    assert_eq!((a.quota, a.cpus, a.workers()), (None, 1, 1));
    assert_eq!(a.throttling(), None);
}

/// The real process: whatever this machine has, a reading that makes sense.
#[test]
fn this_process_is_read() {
    let a = Allowance::read();
    assert!(a.cpus >= 1 && a.cores() > 0.0 && a.workers() >= 1);
}
