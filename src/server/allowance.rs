//! `_core.cpu_allowance()`: the CPU this process may use (`observe::allowance`), for the Python
//! front (`--workers auto`, `sluicegate ctl status`). One reader in Rust, so that the front and
//! the core never disagree on what the container allows.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::observe::allowance::{online_cpus, Allowance};

/// The allowance read now: `cpus` (the affinity mask), `quota` (CPUs, or None), `period_s`,
/// `cores` (the quota, at most the CPUs), `workers` (what `--workers auto` starts), `online`
/// (the machine's CPUs), and the cgroup's throttling so far (`nr_periods`, `nr_throttled`,
/// `throttled_s`; None without a `cpu.stat` that counts it). The GIL is released while the
/// files are read.
#[pyfunction]
pub fn cpu_allowance(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let (a, throttling) = py.detach(|| {
        let a = Allowance::read();
        let t = a.throttling();
        (a, t)
    });
    let d = PyDict::new(py);
    d.set_item("cpus", a.cpus)?;
    d.set_item("quota", a.quota)?;
    d.set_item("period_s", a.period.map(|p| p.as_secs_f64()))?;
    d.set_item("cores", a.cores())?;
    d.set_item("workers", a.workers())?;
    d.set_item("online", online_cpus())?;
    d.set_item("nr_periods", throttling.map(|t| t.periods))?;
    d.set_item("nr_throttled", throttling.map(|t| t.throttled))?;
    d.set_item(
        "throttled_s",
        throttling.map(|t| t.throttled_time.as_secs_f64()),
    )?;
    Ok(d)
}
