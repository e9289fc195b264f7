//! App threads under the kernel's `SCHED_BATCH` policy: their wake-ups do not preempt the
//! thread running on the CPU they wake on (Linux's CFS and EEVDF both skip wakeup preemption
//! for a woken batch task; it runs at the next tick or when that thread sleeps), and they
//! still get their fair share of the CPU, as under `SCHED_OTHER`.
//!
//! Why: on the pool, the thread that runs on a CPU is often the GIL's holder, and the threads
//! woken beside it are app threads that will only wait for the GIL: CPython's waiters wake
//! every switch interval (5 ms) to ask again, a call back from its sleep or its database wakes
//! to ask, and each of those wake-ups, preempting the holder, left the holder runnable and the
//! interpreter stopped until it ran again. Measured (S5's app, 1,000 clients of a 0.1 s sleep,
//! `wrk -c1000`, three alternations each against the same build without it): in a cgroup of
//! 1.5 CPUs +9-13% requests/s, without a cgroup +3-9% at a lower p99; in S18, against the build
//! before in one run, S5 1.08-1.24× and S13's Django view 1.04-1.11× with and without a quota,
//! at 10-20% less CPU per request (`benchmarks/results/2026-11-29-batch/`).
//!
//! What it costs: where other processes keep every CPU busy, a woken thread handed the GIL
//! waits for a tick instead of preempting. S13's 300-client bursts on a view that opens a
//! PostgreSQL connection per request (PostgreSQL's forks keep both CPUs busy), with the thread
//! count raised by hand to 90 or 300, ran 0.85× and 0.93× the build before, each build with
//! the same `--threads`; 1.09× with `--threads auto` (`benchmarks/results/2026-11-29-bursts/`).
//!
//! Only the pool's threads: the event loop's thread (and a pool thread while it drives the
//! loop, `server::drive`) stays `SCHED_OTHER`, so a request's arrival still preempts. A thread
//! the app starts from one of its calls inherits the policy (`pthread_create`'s default).
//! Setting `SCHED_BATCH` or back needs no privilege; where the kernel refuses it the thread
//! keeps its policy.

/// Put the calling thread under `SCHED_BATCH` (`batch`) or back under `SCHED_OTHER`, at
/// priority 0. False if the kernel refused.
pub fn batch_this_thread(batch: bool) -> bool {
    let policy = if batch {
        libc::SCHED_BATCH
    } else {
        libc::SCHED_OTHER
    };
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; the kernel reads `param` only during the call.
    unsafe { libc::sched_setscheduler(0, policy, &param) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's policy (`SCHED_BATCH`, `SCHED_OTHER`, …), or -1.
    fn policy_of_this_thread() -> i32 {
        // SAFETY: pid 0 is the calling thread; no memory is passed.
        unsafe { libc::sched_getscheduler(0) }
    }

    #[test]
    fn a_thread_goes_to_batch_and_back_and_its_children_inherit() {
        std::thread::spawn(|| {
            assert!(batch_this_thread(true));
            assert_eq!(policy_of_this_thread(), libc::SCHED_BATCH);
            let child = std::thread::spawn(policy_of_this_thread).join().unwrap();
            assert_eq!(child, libc::SCHED_BATCH);
            assert!(batch_this_thread(false));
            assert_eq!(policy_of_this_thread(), libc::SCHED_OTHER);
        })
        .join()
        .unwrap();
    }
}
