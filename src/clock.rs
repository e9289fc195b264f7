//! The monotonic clock as plain nanoseconds, for every layer that times things (the request
//! timings of `observe`, the I/O layer, the bridge). Plain data: it imports nothing of ours.

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
