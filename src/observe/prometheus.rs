//! The Prometheus text format (0.0.4) of the counter table (`observe::table`), plus the
//! series every exporter has: `sluicegate_build_info` and `process_*`. With worker processes
//! every series carries the worker's `worker` label; without, series carry no label set at
//! all (no empty `{}`).

use std::fmt::Write;

use super::allowance::Allowance;
use super::counters::{Histogram, BUCKETS_US};
use super::process::{self, ProcessReadings};
use super::table::{Read, Readings, TABLE};

/// The Content-Type of [`render`]'s text.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The whole scrape.
pub fn render(r: &Readings<'_>) -> String {
    let base = r
        .worker
        .map(|w| format!("worker=\"{w}\""))
        .unwrap_or_default();
    let mut out = String::with_capacity(8192);
    for e in TABLE {
        let Some(name) = e.name else { continue };
        match e.read {
            Read::Num(read) => {
                let Some(v) = read(r) else { continue };
                header(&mut out, name, e.help, e.kind.as_str());
                sample(&mut out, name, &base, None, v);
            }
            Read::Labelled(label, read) => {
                header(&mut out, name, e.help, e.kind.as_str());
                read(r, &mut |value, v| {
                    sample(&mut out, name, &base, Some((label, value)), v)
                });
            }
            Read::Histogram(read) => histogram(&mut out, name, e.help, &base, read(r)),
            Read::Text(_) => {}
        }
    }
    header(
        &mut out,
        "sluicegate_build_info",
        "The running version.",
        "gauge",
    );
    let version = ("version", env!("CARGO_PKG_VERSION"));
    sample(
        &mut out,
        "sluicegate_build_info",
        &base,
        Some(version),
        1u64,
    );
    if let Some(p) = process::read() {
        process_series(&mut out, &base, &p);
    }
    allowance_series(&mut out, &base, &Allowance::read());
    out
}

/// The CPU the process may use and how often its cgroup's quota stopped it: the cgroup's
/// figures, the same in every process of a server (read them from one, not summed).
fn allowance_series(out: &mut String, base: &str, a: &Allowance) {
    let name = "process_cpu_allowance_cores";
    header(
        out,
        name,
        "CPUs this process may use: its cgroup's CPU quota, at most the CPUs of its affinity.",
        "gauge",
    );
    sample(out, name, base, None, a.cores());
    let Some(t) = a.throttling() else { return };
    let series: [(&str, &str, f64); 2] = [
        (
            "process_cpu_throttled_periods_total",
            "Periods in which the cgroup's CPU quota stopped it (cpu.stat nr_throttled).",
            t.throttled as f64,
        ),
        (
            "process_cpu_throttled_seconds_total",
            "Time the cgroup's CPU quota kept it stopped (cpu.stat).",
            t.throttled_time.as_secs_f64(),
        ),
    ];
    for (name, help, v) in series {
        header(out, name, help, "counter");
        sample(out, name, base, None, v);
    }
}

fn process_series(out: &mut String, base: &str, p: &ProcessReadings) {
    let series: [(&str, &str, &str, f64); 4] = [
        (
            "process_start_time_seconds",
            "gauge",
            "Start time of the process since the Unix \
          epoch in seconds.",
            p.start_time_seconds,
        ),
        (
            "process_cpu_seconds_total",
            "counter",
            "Total user and system CPU time spent in \
          seconds.",
            p.cpu_seconds,
        ),
        (
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory size in bytes.",
            p.resident_memory_bytes as f64,
        ),
        (
            "process_open_fds",
            "gauge",
            "Number of open file descriptors.",
            p.open_fds as f64,
        ),
    ];
    for (name, kind, help, v) in series {
        header(out, name, help, kind);
        sample(out, name, base, None, v);
    }
}

fn header(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n");
}

/// `name{base,label="value"} v`, the braces left out when there is no label.
fn sample(
    out: &mut String,
    name: &str,
    base: &str,
    label: Option<(&str, &str)>,
    v: impl std::fmt::Display,
) {
    out.push_str(name);
    match (base.is_empty(), label) {
        (true, None) => {}
        (false, None) => {
            let _ = write!(out, "{{{base}}}");
        }
        (true, Some((l, value))) => {
            let _ = write!(out, "{{{l}=\"{value}\"}}");
        }
        (false, Some((l, value))) => {
            let _ = write!(out, "{{{base},{l}=\"{value}\"}}");
        }
    }
    let _ = writeln!(out, " {v}");
}

fn histogram(out: &mut String, name: &str, help: &str, base: &str, h: &Histogram) {
    header(out, name, help, "histogram");
    let bucket = format!("{name}_bucket");
    let mut cumulative = 0;
    for (b, n) in BUCKETS_US.iter().zip(h.buckets()) {
        cumulative += n;
        let le = (*b as f64 / 1e6).to_string();
        sample(out, &bucket, base, Some(("le", &le)), cumulative);
    }
    let count = h.count();
    sample(out, &bucket, base, Some(("le", "+Inf")), count);
    sample(
        out,
        &format!("{name}_sum"),
        base,
        None,
        h.sum_us() as f64 / 1e6,
    );
    sample(out, &format!("{name}_count"), base, None, count);
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::observe::counters::Counters;

    fn readings(c: &Counters, worker: Option<u32>) -> Readings<'_> {
        Readings {
            counters: c,
            app_timeouts: 0,
            stuck_calls: 0,
            app_calls_in_flight: 0,
            inline_calls: 3,
            dispatched_calls: 0,
            takeovers: 0,
            handoffs: 0,
            preemptions: 0,
            mode: "inline",
            threads: 1,
            busy_threads: 0,
            admission: None,
            access_log_dropped: None,
            static_cache: None,
            worker,
        }
    }

    #[test]
    fn a_histogram_renders_cumulative_buckets() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(500));
        h.observe(Duration::from_millis(30));
        h.observe(Duration::from_secs(60));
        let mut out = String::new();
        histogram(&mut out, "x_seconds", "help", "w=\"1\"", &h);
        assert!(out.contains("x_seconds_bucket{w=\"1\",le=\"0.001\"} 1\n"));
        assert!(out.contains("x_seconds_bucket{w=\"1\",le=\"0.05\"} 2\n"));
        assert!(out.contains("x_seconds_bucket{w=\"1\",le=\"10\"} 2\n"));
        assert!(out.contains("x_seconds_bucket{w=\"1\",le=\"+Inf\"} 3\n"));
        assert!(out.contains("x_seconds_count{w=\"1\"} 3\n"));
    }

    #[test]
    fn no_empty_label_sets_and_the_worker_label_on_every_sample() {
        let c = Counters::default();
        let alone = render(&readings(&c, None));
        assert!(!alone.contains("{}"), "{alone}");
        assert!(alone.contains("\nsluicegate_inline_calls_total 3\n"));
        assert!(alone.contains("sluicegate_requests_total{class=\"2xx\"} 0\n"));
        assert!(alone.contains("sluicegate_build_info{version=\""));
        assert!(alone.contains("\nprocess_open_fds "));
        let worker = render(&readings(&c, Some(1)));
        for line in worker.lines().filter(|l| !l.starts_with('#')) {
            assert!(line.contains("{worker=\"1\""), "{line}");
        }
    }
}
