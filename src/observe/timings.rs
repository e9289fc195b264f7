//! What a finished request tells the counters and the access log: how it ended ([`End`]) and
//! where its time went ([`Timings`]), measured with the monotonic clock (`crate::clock`).
//! Plain values: both the counters and the access log read them, neither owns them.

use std::time::Duration;

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Ok,
    /// The client went away before the response was sent.
    ClientGone,
    /// `--timeout` answered for the app (504, or the connection cut).
    Timeout,
    /// The app failed (500), or the request was refused.
    Error,
}

impl End {
    /// Every end, in the order of [`End::index`] (a label value each).
    pub const ALL: [End; 4] = [End::Ok, End::ClientGone, End::Timeout, End::Error];

    pub fn as_str(self) -> &'static str {
        match self {
            End::Ok => "ok",
            End::ClientGone => "client_gone",
            End::Timeout => "timeout",
            End::Error => "error",
        }
    }

    /// Its slot in a per-end array of counters.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Where one request's time went, measured with the monotonic clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timings {
    /// Parsed → the app called (waiting for a thread, or for the loop).
    pub queue: Duration,
    /// The app called → its iterable exhausted and closed.
    pub app: Duration,
    /// First byte written → last byte taken by the kernel's send buffer.
    pub send: Duration,
    /// Parsed → last byte taken.
    pub total: Duration,
}

/// Whole microseconds, in u64 arithmetic (`as_micros` divides a u128).
#[inline]
pub fn micros(d: Duration) -> u64 {
    d.as_secs() * 1_000_000 + u64::from(d.subsec_micros())
}
