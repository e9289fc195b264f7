//! The counters: what every finished request adds to ([`RequestMetrics::record`], always on:
//! a few relaxed atomic adds), the server-wide [`Counters`] the event loop and the app threads
//! bump, and the duration [`Histogram`]. Only storage and the adds: what each number is called
//! and how it is shown is declared once in `observe::table`.

use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::h3_counters::H3Counters;
use super::timings::{End, Timings};

/// Histogram bucket bounds, in microseconds (1 ms … 10 s, then +Inf).
pub const BUCKETS_US: [u64; 13] = [
    1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000,
    5_000_000, 10_000_000,
];

/// A Prometheus histogram of durations: each observation lands in one bucket; the cumulative
/// counts are computed when rendered.
#[derive(Default)]
pub struct Histogram {
    buckets: [AtomicU64; BUCKETS_US.len()],
    count: AtomicU64,
    sum_us: AtomicU64,
}

impl Histogram {
    pub fn observe(&self, d: Duration) {
        let us = d.as_micros().min(u128::from(u64::MAX)) as u64;
        if let Some(i) = BUCKETS_US.iter().position(|&b| us <= b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_us.fetch_add(us, Ordering::Relaxed);
    }

    /// Observations in each bucket (not cumulative), in the order of [`BUCKETS_US`].
    pub fn buckets(&self) -> [u64; BUCKETS_US.len()] {
        std::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed))
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    pub fn sum_us(&self) -> u64 {
        self.sum_us.load(Ordering::Relaxed)
    }
}

/// Bytes read from clients (heads and bodies), by the loop and by `wsgi.input`. One per
/// process (as the release bell): a process runs one server.
pub static BYTES_IN: AtomicU64 = AtomicU64::new(0);

/// The statuses the event loop answers itself (static files, the health path) are counted
/// by these; the last slot: others.
pub const LOOP_STATUSES: [u16; 5] = [200, 206, 304, 404, 503];

/// The statuses a refused request can get, for `protocol_refusals` (the last slot: others).
pub const REFUSAL_STATUSES: [u16; 7] = [400, 408, 413, 414, 431, 501, 505];

/// What every finished request (app or loop answered) adds to.
#[derive(Default)]
pub struct RequestMetrics {
    /// By status class: 1xx … 5xx.
    pub by_class: [AtomicU64; 5],
    pub bytes_out: AtomicU64,
    /// By how it ended ([`End::index`]).
    pub ends: [AtomicU64; 4],
    pub total: Histogram,
    pub app: Histogram,
    pub send: Histogram,
    /// Requests the loop refused itself, by status (`REFUSAL_STATUSES`, then others).
    pub refusals: [AtomicU64; REFUSAL_STATUSES.len() + 1],
    /// Connections open now.
    pub open_connections: AtomicU64,
    /// Of those, waiting between requests (counted at each sweep of the loop, ≤ 1 s old).
    pub idle_connections: AtomicU64,
    /// Answers the event loop gave itself, by status (`LOOP_STATUSES`, then others).
    pub loop_answers: [AtomicU64; LOOP_STATUSES.len() + 1],
}

impl RequestMetrics {
    /// An answer the loop gave itself (a static file, the health path).
    pub fn loop_answer(&self, status: u16) {
        let i = LOOP_STATUSES
            .iter()
            .position(|&s| s == status)
            .unwrap_or(LOOP_STATUSES.len());
        self.loop_answers[i].fetch_add(1, Ordering::Relaxed);
    }

    /// A request refused by the loop with `status` (a protocol error, a 408).
    pub fn refused(&self, status: u16) {
        let i = REFUSAL_STATUSES
            .iter()
            .position(|&s| s == status)
            .unwrap_or(REFUSAL_STATUSES.len());
        self.refusals[i].fetch_add(1, Ordering::Relaxed);
    }

    pub fn record(&self, status: u16, body_bytes: u64, t: &Timings, end: End, app: bool) {
        let class = usize::from(status / 100).clamp(1, 5) - 1;
        self.by_class[class].fetch_add(1, Ordering::Relaxed);
        self.bytes_out.fetch_add(body_bytes, Ordering::Relaxed);
        self.ends[end.index()].fetch_add(1, Ordering::Relaxed);
        self.total.observe(t.total);
        if app {
            self.app.observe(t.app);
        }
        self.send.observe(t.send);
    }
}

/// Counters shared by the loop and the app threads (diagnostics and tests).
#[derive(Default)]
pub struct Counters {
    pub accepted: AtomicU64,
    pub requests: AtomicU64,
    pub protocol_errors: AtomicU64,
    pub timeouts: AtomicU64,
    /// Accept attempts refused because the process is out of file descriptors (EMFILE/ENFILE).
    pub fd_exhausted: AtomicU64,
    /// Requests cut by the shutdown: still in the app or still sending when the graceful
    /// timeout ended (or at an immediate stop).
    pub cut: AtomicU64,
    /// `--timeout`: app calls past it that have not returned (kept by `wsgi::deadline`; the
    /// loop ends a graceful stop when only these are left).
    pub stuck_calls: Arc<AtomicUsize>,
    /// Forwarding headers (or PROXY headers) from trusted peers ignored as malformed.
    pub forwarded_malformed: AtomicU64,
    /// Connections closed for a missing, malformed or untrusted PROXY protocol header.
    pub proxy_refused: AtomicU64,
    /// Every finished request: by status class and end, bytes, duration histograms.
    pub by_request: RequestMetrics,
    /// TLS connections that failed, by [`TLS_FAILURE_REASONS`] index.
    pub tls_failures: [AtomicU64; TLS_FAILURE_REASONS.len()],
    /// The earliest `notAfter` of the TLS certificates served, unix seconds (0: no TLS).
    pub tls_not_after: AtomicI64,
    /// HTTP/3's connections and what happened to them (`--http3`).
    pub h3: H3Counters,
}

/// Why a TLS connection failed, as the `reason` label of `sluicegate_tls_failures_total` says
/// it (`io::tls::session::TlsError::reason` gives one of these, and the loop's sweep
/// `handshake_timeout` for a handshake cut by `--header-timeout`). `other` stays last.
pub const TLS_FAILURE_REASONS: [&str; 10] = [
    "plain_http",
    "handshake_timeout",
    "no_client_certificate",
    "bad_client_certificate",
    "incompatible",
    "alert_received",
    "bad_message",
    "decrypt_error",
    "peer_misbehaved",
    "other",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_counts_each_observation_in_one_bucket() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(500));
        h.observe(Duration::from_millis(30));
        h.observe(Duration::from_secs(60));
        let b = h.buckets();
        assert_eq!((b[0], b[5], b.iter().sum::<u64>()), (1, 1, 2));
        assert_eq!((h.count(), h.sum_us()), (3, 60_030_500));
    }
}
