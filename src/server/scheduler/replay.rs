//! A replay of the scheduler's rules over call timings, on the allowances of a 2-, 16- and
//! 64-core machine with and without a CPU quota (fixture cgroup trees read by
//! `observe::allowance`, as a container sees them). For each machine and each call it runs the
//! watchdog's own rules (`Watch`, `Judge`) look by look against a simulated loop thread, and
//! the pool's slow-call (`call_time::judged`, `SLOW_CALL`), machine-idle (`wsgi::pool::machine`,
//! `MACHINE_IDLE_LEAST`) and spin (`Allowance::below`) decisions, beside what the wall clock
//! and the host's /proc/stat alone would have decided. `cargo test --lib replay -- --nocapture`
//! prints the decisions; the tests assert the ones that matter.
//!
//! The machine's model: `--workers auto` processes (the quota rounded up), each loop thread
//! busy (a saturating load); under a quota the cgroup's period's budget is spent by them
//! together, so each runs `period × quota / workers` and then waits, runnable, for the rest of
//! the period (`stall`). A call starts with 2 µs of its period's budget left: the worst case,
//! a call the quota stops at once. The calls' CPU and sleep figures are those of the
//! benchmarks' apps (hello world 5 µs of CPU, S18; `/cpu?ms=N`; S5's sleep; S13's Django view,
//! CPU around a database wait). A pool call is judged twice: with a run delay that counts all
//! the time the quota stopped its thread, and with one that counts none of it (`Delay`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::call_time::{judged, Ends};
use super::judge::{Found, Judge, Verdict};
use super::watch::{Look, Watch};
use super::SLOW_CALL;
use crate::observe::allowance::{Allowance, Sources};
use crate::wsgi::pool::machine::{own_cores, quota_idle, ticks_idle};
use crate::wsgi::pool::MACHINE_IDLE_LEAST;

/// One machine: its online CPUs, the CPUs of the process's cpuset, and the cgroup's quota in
/// µs of a 100 ms period (None: `max`).
struct Machine {
    name: &'static str,
    online: usize,
    cpuset: usize,
    quota_us: Option<u64>,
}

const MACHINES: [Machine; 6] = [
    Machine {
        name: "2 cores, no quota",
        online: 2,
        cpuset: 2,
        quota_us: None,
    },
    Machine {
        name: "2 cores, quota 0.5",
        online: 2,
        cpuset: 2,
        quota_us: Some(50_000),
    },
    Machine {
        name: "16 cores, quota 2.5",
        online: 16,
        cpuset: 16,
        quota_us: Some(250_000),
    },
    Machine {
        name: "64 cores, no quota",
        online: 64,
        cpuset: 64,
        quota_us: None,
    },
    Machine {
        name: "64 cores, cpuset 8",
        online: 64,
        cpuset: 8,
        quota_us: None,
    },
    Machine {
        name: "64 cores, quota 7.5",
        online: 64,
        cpuset: 64,
        quota_us: Some(750_000),
    },
];

/// A stretch of a call: computing, asleep in the kernel, or asleep waiting for the GIL while
/// another thread holds it and computes this long, under the same quota (µs of its CPU).
#[derive(Clone, Copy)]
enum Seg {
    Cpu(u64),
    Sleep(u64),
    Gil(u64),
}

/// A call replayed: its stretches, whether other work waits behind it (a loaded server:
/// requests queued, connections to read), and whether it starts with 2 µs of its period's
/// budget left (else at the start of a period).
struct Call {
    name: &'static str,
    segs: &'static [Seg],
    waiting: bool,
    edge: bool,
}

const CALLS: [Call; 9] = [
    Call {
        name: "hello world (5 us CPU)",
        segs: &[Seg::Cpu(5)],
        waiting: true,
        edge: true,
    },
    Call {
        name: "/cpu?ms=1, quota ends in it",
        segs: &[Seg::Cpu(1_000)],
        waiting: true,
        edge: true,
    },
    Call {
        name: "/cpu?ms=1",
        segs: &[Seg::Cpu(1_000)],
        waiting: true,
        edge: false,
    },
    Call {
        name: "/cpu?ms=20",
        segs: &[Seg::Cpu(20_000)],
        waiting: true,
        edge: false,
    },
    Call {
        name: "/cpu?ms=80, nothing waits",
        segs: &[Seg::Cpu(80_000)],
        waiting: false,
        edge: false,
    },
    Call {
        name: "S5 sleep 100 ms",
        segs: &[Seg::Cpu(30), Seg::Sleep(100_000), Seg::Cpu(20)],
        waiting: true,
        edge: false,
    },
    Call {
        name: "Django view, 1 ms DB wait",
        segs: &[Seg::Cpu(800), Seg::Sleep(1_000), Seg::Cpu(600)],
        waiting: true,
        edge: false,
    },
    Call {
        name: "1 ms after the GIL, held across a stop",
        segs: &[Seg::Gil(100), Seg::Cpu(1_000)],
        waiting: true,
        edge: true,
    },
    Call {
        name: "the GIL held by an 80 ms C call",
        segs: &[Seg::Cpu(30), Seg::Gil(80_000), Seg::Cpu(20)],
        waiting: false,
        edge: false,
    },
];

/// The allowance `observe::allowance` reads from a cgroup v2 fixture tree of `m`.
fn allowance(m: &Machine, i: usize) -> Allowance {
    static MADE: AtomicUsize = AtomicUsize::new(0);
    let n = MADE.fetch_add(1, Ordering::Relaxed);
    let root = std::env::temp_dir().join(format!("sg-replay-{}-{i}-{n}", std::process::id()));
    let dir: PathBuf = root.join("sys/fs/cgroup");
    std::fs::create_dir_all(&dir).unwrap();
    let max = m.quota_us.map_or("max".to_string(), |q| q.to_string());
    std::fs::write(dir.join("cpu.max"), format!("{max} 100000\n")).unwrap();
    std::fs::write(
        dir.join("cpu.stat"),
        "usage_usec 0\nnr_periods 0\nnr_throttled 0\n",
    )
    .unwrap();
    let mountinfo = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n";
    let a = Allowance::from_sources(&Sources {
        root: Path::new(&root),
        cgroup: "0::/\n",
        mountinfo,
        cpus: m.cpuset,
    });
    let _ = std::fs::remove_dir_all(&root);
    a
}

/// The loop thread running one call, µs by µs, under the quota's periods.
struct Thread {
    segs: Vec<Seg>,
    i: usize,
    done: u64,
    t: u64,
    cpu: u64,
    /// µs of CPU of the thread holding the GIL it waits for (`Seg::Gil`).
    holder_cpu: u64,
    /// µs runnable but stopped by the quota.
    throttled: u64,
    /// Times it went to sleep (a voluntary context switch each).
    sleeps: u64,
    /// Under a quota: budget left in this period, when the period ends, budget per period.
    quota: Option<(u64, u64, u64)>,
}

impl Thread {
    fn new(call: &Call, a: &Allowance) -> Thread {
        let quota = a.quota.map(|q| {
            let period = a.period.unwrap_or(Duration::from_millis(100)).as_micros() as u64;
            let per = ((period as f64 * q / a.workers() as f64) as u64).min(period);
            if call.edge {
                (2, 2 + period - per, per)
            } else {
                (per, period, per)
            }
        });
        let segs = call.segs.to_vec();
        Thread {
            segs,
            i: 0,
            done: 0,
            t: 0,
            cpu: 0,
            holder_cpu: 0,
            throttled: 0,
            sleeps: 0,
            quota,
        }
    }

    fn ended(&self) -> bool {
        self.i == self.segs.len()
    }

    /// What a read of its kernel state finds (the GIL's holder computes: it can run).
    fn found(&self) -> Found {
        match self.segs.get(self.i) {
            Some(Seg::Sleep(_)) => Found::Asleep,
            Some(Seg::Gil(_)) => Found::ForGil {
                process_cpu: Some(Duration::from_micros(self.cpu + self.holder_cpu)),
            },
            _ => Found::Runnable,
        }
    }

    fn advance_to(&mut self, t: u64) {
        while self.t < t && !self.ended() {
            if let Some((left, end, per)) = &mut self.quota {
                if self.t >= *end {
                    *end += 100_000;
                    *left = *per;
                }
            }
            let len = match self.segs[self.i] {
                Seg::Cpu(len) | Seg::Gil(len) => match &mut self.quota {
                    Some((0, ..)) => {
                        // Stopped with the process: the GIL's holder too, while this waits
                        // asleep (not runnable: no run delay).
                        if matches!(self.segs[self.i], Seg::Cpu(_)) {
                            self.throttled += 1;
                        }
                        self.t += 1;
                        continue;
                    }
                    budget => {
                        if let Some((left, ..)) = budget {
                            *left -= 1;
                        }
                        match self.segs[self.i] {
                            Seg::Cpu(_) => self.cpu += 1,
                            _ => {
                                self.sleeps += u64::from(self.done == 0);
                                self.holder_cpu += 1;
                            }
                        }
                        len
                    }
                },
                Seg::Sleep(len) => {
                    if self.done == 0 {
                        self.sleeps += 1;
                    }
                    len
                }
            };
            self.done += 1;
            self.t += 1;
            if self.done >= len {
                self.i += 1;
                self.done = 0;
            }
        }
    }
}

/// The watchdog's verdict on `call` run inline, and when (ms after the call started);
/// `by_wall`: with no CPU clock (the wall alone, as the rules were before they read it).
fn inline(call: &Call, a: &Allowance, by_wall: bool) -> (Verdict, f64) {
    let base = Instant::now();
    let mut watch = Watch::new(base);
    let mut judge = Judge::default();
    let mut th = Thread::new(call, a);
    let (mut now, mut computing) = (Duration::ZERO, false);
    watch.look(2, base, false); // the loop has served calls before this one
    loop {
        now += watch.next_sleep(computing);
        th.advance_to(now.as_micros() as u64);
        let ms = now.as_secs_f64() * 1e3;
        let seq = if th.ended() { 4 } else { 3 };
        if th.ended() {
            return (Verdict::Leave, ms);
        }
        if let Look::Running {
            first,
            read_state,
            cpu_bound,
        } = watch.look(seq, base + now, false)
        {
            let cpu = (!by_wall).then(|| Duration::from_micros(th.cpu));
            let v = judge.look(
                first,
                read_state,
                cpu_bound,
                base + now,
                cpu,
                || th.found(),
                || call.waiting,
            );
            computing = judge.ran;
            if v != Verdict::Leave {
                return (v, ms);
            }
        }
    }
}

/// How the kernel's run delay counts the time the quota stops a thread: all of it, or none
/// (on 6.18 most stops were counted, and some not at all: `call_time`).
#[derive(Clone, Copy, Debug)]
enum Delay {
    Counted,
    Missed,
}

/// A dispatched call as the slow-call rule sees it, the run delay counting the quota's stops as
/// `delay` says: (its wall time, its time as the rule judges it, the wall less the run delay
/// alone).
fn pool(call: &Call, a: &Allowance, delay: Delay) -> (Duration, Duration, Duration) {
    let mut th = Thread::new(call, a);
    th.advance_to(u64::MAX);
    let wall = Duration::from_micros(th.t);
    let us = Duration::from_micros;
    let run_delay = match delay {
        Delay::Counted => us(th.throttled),
        Delay::Missed => Duration::ZERO,
    };
    let before = Ends {
        delay: Some(Duration::ZERO),
        cpu: Some(Duration::ZERO),
        sleeps: Some(0),
    };
    let after = Ends {
        delay: Some(run_delay),
        cpu: Some(us(th.cpu)),
        sleeps: Some(th.sleeps),
    };
    let ends = a.quota.map(|_| (before, after));
    let delay_alone = Ends { cpu: None, ..after };
    let by_delay = judged(wall, ends.map(|(b, _)| (b, delay_alone)));
    (wall, judged(wall, ends), by_delay)
}

/// The machine-idle readings of a process busy at `busy` of its allowance for one second:
/// (by the rule: of the quota, or the host's ticks without one; by the host's ticks alone).
fn machine_idle(m: &Machine, a: &Allowance, busy: f64) -> (f64, f64) {
    let used = a.cores() * busy;
    let ticks = |used: f64| {
        ticks_idle(
            ((m.online as f64 - used) * 100.0) as u64,
            m.online as u64 * 100,
        )
    };
    let host = ticks(used);
    let s = Duration::from_secs(1);
    let rule = own_cores(a, m.online).map_or(host, |q| quota_idle(s.mul_f64(used), s, q));
    (rule, host)
}

fn verdict(v: Verdict, at: f64) -> String {
    match v {
        Verdict::Leave => format!("stays, seen ended at {at:.2} ms"),
        v => format!("{v:?} takeover at {at:.2} ms"),
    }
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// The decisions, as printed.
fn report() -> String {
    let mut out = String::new();
    for (i, m) in MACHINES.iter().enumerate() {
        let a = allowance(m, i);
        let spin = !a.below(m.online);
        let _ = writeln!(
            out,
            "== {} (allowance {:.1} cores, --workers auto {}, spin auto: {})",
            m.name,
            a.cores(),
            a.workers(),
            if spin { "on" } else { "off" }
        );
        for call in &CALLS {
            let name = call.name;
            let (v, at) = inline(call, &a, false);
            let (w, wat) = inline(call, &a, true);
            let (wall, took, _) = pool(call, &a, Delay::Counted);
            let (_, missed, by_delay) = pool(call, &a, Delay::Missed);
            let ms = |d: Duration| d.as_secs_f64() * 1e3;
            let _ = writeln!(out, "  {name:28} inline: {} (wall clock alone: {}); pool: wall {:.2} ms, judged {:.2} ms, slow {} (wall alone {}); run delay missing the stops: judged {:.2} ms, slow {} (run delay alone {})",
                verdict(v, at), verdict(w, wat), ms(wall), ms(took), yes(took > SLOW_CALL), yes(wall > SLOW_CALL), ms(missed), yes(missed > SLOW_CALL), yes(by_delay > SLOW_CALL));
        }
        let (rule, host) = machine_idle(m, &a, 0.95);
        let _ = writeln!(out, "  process at 95% of its allowance: idle {:.0}% by the rule, {:.0}% by /proc/stat; growth trials {} (by /proc/stat alone {})",
            rule * 100.0, host * 100.0, yes(rule >= MACHINE_IDLE_LEAST), yes(host >= MACHINE_IDLE_LEAST));
    }
    out
}

#[test]
fn replay_prints_the_decisions() {
    println!("{}", report());
}

fn machine(name: &str) -> (usize, &'static Machine) {
    MACHINES
        .iter()
        .enumerate()
        .find(|(_, m)| m.name == name)
        .unwrap()
}

/// Under every quota, a hello-world call the quota stops at once stays inline and is a quick
/// pool call; the wall clock alone took it for a CPU-bound one and a slow one.
#[test]
fn a_throttled_call_is_neither_taken_over_nor_slow() {
    for name in [
        "2 cores, quota 0.5",
        "16 cores, quota 2.5",
        "64 cores, quota 7.5",
    ] {
        let (i, m) = machine(name);
        let a = allowance(m, i);
        for call in &CALLS[..2] {
            assert_eq!(
                inline(call, &a, false).0,
                Verdict::Leave,
                "{name} {}",
                call.name
            );
        }
        for delay in [Delay::Counted, Delay::Missed] {
            let (wall, took, _) = pool(&CALLS[0], &a, delay);
            assert!(
                wall > SLOW_CALL && took <= SLOW_CALL,
                "{name} {delay:?}: {wall:?} {took:?}"
            );
        }
    }
    let (i, m) = machine("2 cores, quota 0.5");
    assert_eq!(
        inline(&CALLS[1], &allowance(m, i), true).0,
        Verdict::CpuBound
    );
}

/// On every machine a sleeping call is taken over as blocked within a millisecond, a call that
/// computes 80 ms as CPU-bound, one of 20 ms while work waits as hogging, and 1 ms stays.
#[test]
fn the_takeovers_hold_on_every_machine() {
    for (i, m) in MACHINES.iter().enumerate() {
        let a = allowance(m, i);
        let (v, at) = inline(&CALLS[5], &a, false);
        assert!(
            v == Verdict::Blocked && at < 1.0,
            "{}: {v:?} at {at} ms",
            m.name
        );
        assert_eq!(
            inline(&CALLS[4], &a, false).0,
            Verdict::CpuBound,
            "{}",
            m.name
        );
        assert_eq!(
            inline(&CALLS[3], &a, false).0,
            Verdict::Hogging,
            "{}",
            m.name
        );
        assert_eq!(inline(&CALLS[2], &a, false).0, Verdict::Leave, "{}", m.name);
    }
}

/// On 64 cores under a quota of 7.5 or a cpuset of 8, a process at 95% of its allowance stops
/// the growth trials (under 10% of it idle); the host's /proc/stat, 88-89% idle, never would.
/// At 85% of it the trials go on.
#[test]
fn the_machine_idle_rule_engages_on_64_cores_under_a_quota() {
    for name in ["64 cores, quota 7.5", "64 cores, cpuset 8"] {
        let (i, m) = machine(name);
        let (rule, host) = machine_idle(m, &allowance(m, i), 0.95);
        assert!(
            rule < MACHINE_IDLE_LEAST && host > 0.8,
            "{name}: {rule} {host}"
        );
        assert!(
            machine_idle(m, &allowance(m, i), 0.85).0 >= MACHINE_IDLE_LEAST,
            "{name}"
        );
    }
}

/// The spin runs where the process has every CPU of the machine, and only there.
#[test]
fn the_spin_is_on_only_with_the_whole_machine() {
    for (i, m) in MACHINES.iter().enumerate() {
        let whole = m.quota_us.is_none() && m.cpuset == m.online;
        assert_eq!(!allowance(m, i).below(m.online), whole, "{}", m.name);
    }
}

/// Where the run delay misses the quota's stops (6.18), a hello-world call the quota stops at
/// once is judged by its thread's CPU clock (5 µs), not slow; by the run delay alone it was
/// slow on every quota (the wall: 50 ms at 0.5 CPU), which kept a throttled server in dispatch
/// mode. Calls that compute past `SLOW_CALL` are slow by their CPU clock, and calls that sleep
/// (S5, the Django view) are slow whichever way the run delay counts.
#[test]
fn a_throttled_call_is_judged_by_its_cpu_clock_where_the_run_delay_misses_the_stops() {
    for (i, m) in MACHINES.iter().enumerate() {
        let a = allowance(m, i);
        let quota = m.quota_us.is_some();
        let (wall, took, by_delay) = pool(&CALLS[0], &a, Delay::Missed);
        assert!(took <= SLOW_CALL, "{}: {took:?}", m.name);
        assert_eq!(by_delay > SLOW_CALL, quota, "{}: {wall:?}", m.name);
        for delay in [Delay::Counted, Delay::Missed] {
            for call in [&CALLS[3], &CALLS[4], &CALLS[5], &CALLS[6]] {
                let (_, took, _) = pool(call, &a, delay);
                assert!(took > SLOW_CALL, "{} {delay:?} {}", m.name, call.name);
            }
        }
    }
}

/// A call whose thread waits for the GIL is not blocked while the GIL's holder can run: across
/// a stop of the quota (the holder stopped with the process) it stays inline on every quota,
/// where read as asleep it was taken over as blocked at the first look after the stop; behind
/// a C call that computes 80 ms holding the GIL it is charged that CPU and taken over as a long
/// call on every machine.
#[test]
fn a_call_waiting_for_the_gil_is_judged_by_its_holder() {
    for (i, m) in MACHINES.iter().enumerate() {
        let a = allowance(m, i);
        assert_eq!(inline(&CALLS[7], &a, false).0, Verdict::Leave, "{}", m.name);
        let (v, at) = inline(&CALLS[8], &a, false);
        assert!(
            v == Verdict::CpuBound && at >= 50.0,
            "{}: {v:?} at {at} ms",
            m.name
        );
    }
}
