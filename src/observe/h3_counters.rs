//! HTTP/3's own counters (`--http3`): its connections open and in the handshake (gauges), and
//! what happened to them and their streams ([`H3Event`], counted). The requests themselves are
//! counted as every protocol's are (`counters::RequestMetrics`); these say what only QUIC has
//! (handshakes, Retry, 0-RTT). `table` shows them as `sluicegate_http3_*`.

use std::sync::atomic::{AtomicU64, Ordering};

/// Something that happened to an HTTP/3 connection or stream, as the `event` label of
/// `sluicegate_http3_events_total` says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum H3Event {
    /// A connection's handshake completed.
    Connection,
    /// A handshake not completed within `--header-timeout`: its state dropped.
    HandshakeTimeout,
    /// A handshake that failed (refused by TLS, or the client went away).
    HandshakeFailed,
    /// A Retry sent to an unvalidated address (`--http3-retry-above`).
    Retry,
    /// A request stream whose head arrived.
    Stream,
    /// A request that arrived in 0-RTT (before the handshake completed) and was served at
    /// once: an idempotent method (`--http3-0rtt`).
    EarlyServed,
    /// A request that arrived in 0-RTT and waited for the handshake's end before its call.
    EarlyWaited,
}

impl H3Event {
    pub const ALL: [H3Event; 7] = [
        H3Event::Connection,
        H3Event::HandshakeTimeout,
        H3Event::HandshakeFailed,
        H3Event::Retry,
        H3Event::Stream,
        H3Event::EarlyServed,
        H3Event::EarlyWaited,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            H3Event::Connection => "connection",
            H3Event::HandshakeTimeout => "handshake_timeout",
            H3Event::HandshakeFailed => "handshake_failed",
            H3Event::Retry => "retry",
            H3Event::Stream => "stream",
            H3Event::EarlyServed => "early_served",
            H3Event::EarlyWaited => "early_waited",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The counts, in [`crate::observe::counters::Counters`].
#[derive(Default)]
pub struct H3Counters {
    /// Connections being served now whose handshake completed (or that serve 0-RTT).
    pub open: AtomicU64,
    /// Handshakes in progress now (what `--http3-retry-above` compares with).
    pub handshaking: AtomicU64,
    events: [AtomicU64; H3Event::ALL.len()],
}

impl H3Counters {
    pub fn count(&self, e: H3Event) {
        self.events[e.index()].fetch_add(1, Ordering::Relaxed);
    }

    pub fn events(&self, e: H3Event) -> u64 {
        self.events[e.index()].load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_event_has_its_own_slot_and_name() {
        let c = H3Counters::default();
        c.count(H3Event::Retry);
        c.count(H3Event::Retry);
        c.count(H3Event::EarlyWaited);
        let got: Vec<u64> = H3Event::ALL.iter().map(|&e| c.events(e)).collect();
        assert_eq!(got, [0, 0, 0, 2, 0, 0, 1]);
        for (i, e) in H3Event::ALL.iter().enumerate() {
            assert_eq!(e.index(), i);
        }
        let names: std::collections::HashSet<_> = H3Event::ALL.iter().map(|e| e.as_str()).collect();
        assert_eq!(names.len(), H3Event::ALL.len());
    }
}
