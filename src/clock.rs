//! Clocks: the monotonic clock as plain nanoseconds (request timings) and a CPU clock's time
//! (the scheduler's watchdog and the pool's watcher judge calls by the CPU they used).
//!
//! Plain functions over `clock_gettime` (and the timer that keeps the process's CPU clock cheap to
//! read, `cheap_process_cpu_clock`), on the bottom floor so that every layer above (the
//! loop, the bridge, the observability counters, the scheduler) reads the same clocks without
//! importing each other.

use std::time::Duration;

/// The monotonic clock in nanoseconds (CLOCK_MONOTONIC, as `Instant`): request timings are
/// kept as these plain integers, whose difference is one subtraction (an `Instant`'s costs a
/// normalisation, ~30 instructions, and a request takes several).
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `to - from` as a Duration (0 if the clock reads are out of order).
#[inline]
pub fn since(from: u64, to: u64) -> Duration {
    Duration::from_nanos(to.saturating_sub(from))
}

/// A CPU clock's time so far (one `clock_gettime`).
pub fn clock_time(clock: libc::clockid_t) -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; an invalid clock id only makes the call fail.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return None;
    }
    Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// Make the process's CPU clock (`CLOCK_PROCESS_CPUTIME_ID`) cheap to read, once per process:
/// with a process CPU timer armed, Linux keeps the process's CPU time as one running sum
/// (`signal->cputimer`, added to as each thread's time is accounted) and a read returns it,
/// where without one every read walks all the process's threads (`thread_group_cputime`).
/// The pool's watcher reads it at every look (up to 4,000 a second while calls queue), the
/// watchdog and the loop's pacing at theirs. Measured (this VM, CPython 3.11, 1,001 threads):
/// 17.2 µs a read without a timer, 0.5 µs with one; with 1,000 sleeping calls (S5) the watcher
/// cost 13-28 µs of CPU per request, 2-2.6% of all the server's samples in that walk
/// (`benchmarks/results/2026-11-28-s5call/`). The timer expires after `u32::MAX` seconds of the
/// process's CPU (136 years: never); it must name a signal, since Linux does not arm a timer
/// that notifies nobody (`SIGEV_NONE`), and names `SIGURG`, which is ignored unless a handler
/// is set. It stays for the process's life.
pub fn cheap_process_cpu_clock() {
    static ARMED: std::sync::Once = std::sync::Once::new();
    ARMED.call_once(|| {
        // SAFETY: a zeroed `sigevent` is a valid value (all fields plain data); only the
        // notification kind and its signal are set.
        let mut event: libc::sigevent = unsafe { std::mem::zeroed() };
        event.sigev_notify = libc::SIGEV_SIGNAL;
        event.sigev_signo = libc::SIGURG;
        let mut timer: libc::timer_t = std::ptr::null_mut();
        // SAFETY: valid pointers to a sigevent and a timer id for the call to fill.
        if unsafe { libc::timer_create(libc::CLOCK_PROCESS_CPUTIME_ID, &mut event, &mut timer) }
            != 0
        {
            return; // the reads stay exact, only slower
        }
        let far = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: libc::time_t::from(u32::MAX),
                tv_nsec: 0,
            },
        };
        // SAFETY: `timer` was created above and is never deleted; `far` is a valid itimerspec
        // and the old value is not asked for.
        unsafe { libc::timer_settime(timer, 0, &far, std::ptr::null_mut()) };
    });
}

/// Seconds since the Unix epoch, by the wall clock (certificate expiry and the like).
pub fn unix_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::{cheap_process_cpu_clock, clock_time};

    #[test]
    fn the_process_cpu_timer_is_armed_once_and_the_clock_still_counts() {
        cheap_process_cpu_clock();
        cheap_process_cpu_clock();
        // Linux lists a process's POSIX timers; -6 is the process CPU clock (CPUCLOCK_SCHED).
        let timers = std::fs::read_to_string("/proc/self/timers").unwrap();
        assert_eq!(timers.matches("ClockID: -6").count(), 1, "{timers}");
        assert!(
            timers.contains("notify: signal"),
            "a timer that notifies nobody is not armed"
        );
        let before = clock_time(libc::CLOCK_PROCESS_CPUTIME_ID).unwrap();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = std::hint::black_box(x.wrapping_add(i.wrapping_mul(i)));
        }
        assert!(clock_time(libc::CLOCK_PROCESS_CPUTIME_ID).unwrap() > before);
    }
}
