//! Clocks: the monotonic clock as plain nanoseconds (request timings) and a CPU clock's time
//! (the scheduler's watchdog and the pool's watcher judge calls by the CPU they used).
//!
//! Plain functions over `clock_gettime`, on the bottom floor so that every layer above (the
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

/// Seconds since the Unix epoch, by the wall clock (certificate expiry and the like).
pub fn unix_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
