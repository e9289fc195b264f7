//! The one counter table: every number the server shows, declared once ([`TABLE`]: its
//! `stats()` key, its Prometheus name, type and help, and how to read it), from which both
//! `Server.stats` (the dict Python sees) and the Prometheus text (`observe::prometheus`) are
//! rendered. Adding a counter is one entry here plus the code that counts it.
//!
//! The numbers live with whoever counts them (the loop's [`Counters`], the scheduler, the pool,
//! the `--timeout` watcher, the access log); the server copies the few that are not in
//! `Counters` into a plain [`Readings`] when asked, so this floor imports none of them.

use std::sync::atomic::{AtomicU64, Ordering};

use super::counters::{
    Counters, Histogram, BYTES_IN, LOOP_STATUSES, REFUSAL_STATUSES, TLS_FAILURE_REASONS,
};
use super::h3_counters::H3Event;
use super::timings::End;

/// What one `stats()` call or one scrape reads: the loop's counters, and the values the
/// server's other parts keep, copied.
pub struct Readings<'a> {
    pub counters: &'a Counters,
    /// `--timeout`: calls that passed it; of those, still in the app; calls in the app now.
    pub app_timeouts: u64,
    pub stuck_calls: u64,
    pub app_calls_in_flight: u64,
    /// The scheduler's.
    pub inline_calls: u64,
    pub dispatched_calls: u64,
    pub takeovers: u64,
    pub handoffs: u64,
    pub preemptions: u64,
    pub mode: &'static str,
    /// The pool's threads, and those running a call.
    pub threads: u64,
    pub busy_threads: u64,
    /// The pool's admission, once the pool exists.
    pub admission: Option<AdmissionReadings>,
    /// Access log lines dropped, when the log is on.
    pub access_log_dropped: Option<u64>,
    /// Static files kept in memory, with `--static`.
    pub static_cache: Option<StaticCacheReadings>,
    /// With worker processes, which one this is (the `worker` label).
    pub worker: Option<u32>,
}

/// The pool's admission control (`wsgi::pool::admission`), copied.
#[derive(Clone, Copy, Debug, Default)]
pub struct AdmissionReadings {
    pub max_runnable: u64,
    pub runnable_short: u64,
    pub runnable_long: u64,
    pub runnable_short_peak: u64,
    pub runnable_long_peak: u64,
    pub queue: u64,
    pub waits: u64,
    pub demotions: u64,
    pub lengthened: u64,
    pub admitted_blocking: u64,
    pub fast_first: u64,
    pub blocking_room: u64,
    pub blocking_room_least: u64,
    /// Pool calls that may wait for the GIL to start at once (`--start-gate`; 0: no gate).
    pub start_gate_places: u64,
}

/// Static files kept in memory (`io::static_cache`): how many, their bytes, and the answers
/// they gave.
#[derive(Clone, Copy, Debug, Default)]
pub struct StaticCacheReadings {
    pub files: u64,
    pub bytes: u64,
    pub hits: u64,
}

/// A Prometheus type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// Where a labelled entry puts each (label value, number).
pub type Sink<'s> = dyn FnMut(&str, u64) + 's;

/// How an entry is read.
pub enum Read {
    /// One number; None: absent now (no pool yet, no access log).
    Num(fn(&Readings<'_>) -> Option<u64>),
    /// A word (`stats()` only).
    Text(fn(&Readings<'_>) -> &'static str),
    /// One number per value of a label (Prometheus only), given to the callback in order.
    Labelled(&'static str, fn(&Readings<'_>, &mut Sink<'_>)),
    /// A duration histogram (Prometheus only).
    Histogram(for<'a> fn(&Readings<'a>) -> &'a Histogram),
}

/// One entry of the table.
pub struct Entry {
    /// Its key in `stats()`; None: Prometheus only.
    pub key: Option<&'static str>,
    /// Its Prometheus name; None: `stats()` only.
    pub name: Option<&'static str>,
    pub kind: Kind,
    pub help: &'static str,
    pub read: Read,
}

/// Seconds until the TLS certificate's `notAfter`, or None without TLS listeners.
fn tls_expiry(c: &Counters) -> Option<u64> {
    let not_after = c.tls_not_after.load(Ordering::Relaxed);
    (not_after != 0).then(|| {
        let now = crate::clock::unix_seconds();
        u64::try_from(not_after - now).unwrap_or(0)
    })
}

fn load(a: &AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}

/// Each slot of `counts` under the label value of the same index in `names` (the last slot,
/// past `names`: "other").
fn by_status(counts: &[AtomicU64], names: &[u16], f: &mut Sink<'_>) {
    for (i, c) in counts.iter().enumerate() {
        match names.get(i) {
            Some(s) => f(&s.to_string(), load(c)),
            None => f("other", load(c)),
        }
    }
}

macro_rules! entry {
    ($key:expr, $name:expr, $kind:ident, $help:expr, $read:expr) => {
        Entry {
            key: $key,
            name: $name,
            kind: Kind::$kind,
            help: $help,
            read: $read,
        }
    };
}

/// Every number the server shows, in the order Prometheus gets them (`stats()` keys keep
/// their names from before the table, the Prometheus names theirs).
pub static TABLE: &[Entry] =
    &[
        entry!(
            Some("requests"),
            None,
            Counter,
            "Requests answered (the app's and the loop's own).",
            Read::Num(|r| Some(load(&r.counters.requests)))
        ),
        entry!(
            None,
            Some("sluicegate_requests_total"),
            Counter,
            "Requests answered, by status class.",
            Read::Labelled("class", |r, f| {
                for (i, c) in r.counters.by_request.by_class.iter().enumerate() {
                    f(["1xx", "2xx", "3xx", "4xx", "5xx"][i], load(c));
                }
            })
        ),
        entry!(
            None,
            Some("sluicegate_request_ends_total"),
            Counter,
            "Requests by how they ended.",
            Read::Labelled("end", |r, f| {
                for e in End::ALL {
                    f(e.as_str(), load(&r.counters.by_request.ends[e.index()]));
                }
            })
        ),
        entry!(
            None,
            Some("sluicegate_refused_requests_total"),
            Counter,
            "Requests the server refused itself, by status (malformed or smuggling-prone heads \
         400, too slow 408, limits 413/414/431).",
            Read::Labelled("status", |r, f| {
                by_status(&r.counters.by_request.refusals, &REFUSAL_STATUSES, f)
            })
        ),
        entry!(None, Some("sluicegate_loop_answers_total"), Counter,
        "Answers the event loop gave without the app (static files, the health path), by status.",
        Read::Labelled("status", |r, f| {
            by_status(&r.counters.by_request.loop_answers, &LOOP_STATUSES, f)
        })),
        entry!(
            None,
            Some("sluicegate_tls_certificate_expiry_seconds"),
            Gauge,
            "Seconds until the earliest TLS certificate served expires (0: expired; only with TLS \
         listeners).",
            Read::Num(|r| tls_expiry(r.counters))
        ),
        entry!(
            None,
            Some("sluicegate_tls_failures_total"),
            Counter,
            "TLS connections that failed (handshake or record), by reason.",
            Read::Labelled("reason", |r, f| {
                if r.counters.tls_not_after.load(Ordering::Relaxed) != 0 {
                    for (reason, n) in TLS_FAILURE_REASONS.iter().zip(&r.counters.tls_failures) {
                        f(reason, load(n));
                    }
                }
            })
        ),
        entry!(
            None,
            Some("sluicegate_http3_connections"),
            Gauge,
            "HTTP/3 connections being served now, by state (handshake, or open with it).",
            Read::Labelled("state", |r, f| {
                let h3 = &r.counters.h3;
                f("handshake", load(&h3.handshaking));
                f("open", load(&h3.open));
            })
        ),
        entry!(
            None,
            Some("sluicegate_http3_events_total"),
            Counter,
            "HTTP/3 connections and streams by what happened to them (handshakes completed, \
         timed out, failed; Retry packets; request streams; 0-RTT requests served at once or \
         held for the handshake).",
            Read::Labelled("event", |r, f| {
                for e in H3Event::ALL {
                    f(e.as_str(), r.counters.h3.events(e));
                }
            })
        ),
        entry!(
            None,
            Some("sluicegate_request_bytes_total"),
            Counter,
            "Bytes read from clients (heads and bodies).",
            Read::Num(|_| Some(load(&BYTES_IN)))
        ),
        entry!(
            None,
            Some("sluicegate_connections_open"),
            Gauge,
            "Client connections open now.",
            Read::Num(|r| Some(load(&r.counters.by_request.open_connections)))
        ),
        entry!(
            None,
            Some("sluicegate_connections_idle"),
            Gauge,
            "Client connections waiting between requests (as of the loop's last sweep).",
            Read::Num(|r| Some(load(&r.counters.by_request.idle_connections)))
        ),
        entry!(
            None,
            Some("sluicegate_response_body_bytes_total"),
            Counter,
            "Response body bytes sent.",
            Read::Num(|r| Some(load(&r.counters.by_request.bytes_out)))
        ),
        entry!(
            None,
            Some("sluicegate_request_duration_seconds"),
            Histogram,
            "Parsed to last byte taken by the kernel.",
            Read::Histogram(|r| &r.counters.by_request.total)
        ),
        entry!(
            None,
            Some("sluicegate_app_duration_seconds"),
            Histogram,
            "App called to its iterable closed.",
            Read::Histogram(|r| &r.counters.by_request.app)
        ),
        entry!(
            None,
            Some("sluicegate_send_duration_seconds"),
            Histogram,
            "First byte ready to last byte taken by the kernel.",
            Read::Histogram(|r| &r.counters.by_request.send)
        ),
        entry!(
            Some("accepted"),
            Some("sluicegate_connections_accepted_total"),
            Counter,
            "Connections accepted.",
            Read::Num(|r| Some(load(&r.counters.accepted)))
        ),
        entry!(
            Some("fd_exhausted"),
            Some("sluicegate_accept_refused_total"),
            Counter,
            "Accept attempts refused for lack of file descriptors.",
            Read::Num(|r| Some(load(&r.counters.fd_exhausted)))
        ),
        entry!(
            Some("protocol_errors"),
            Some("sluicegate_protocol_errors_total"),
            Counter,
            "Requests refused by the HTTP parser (400, 413, 414, 431, 501, 505).",
            Read::Num(|r| Some(load(&r.counters.protocol_errors)))
        ),
        entry!(
            Some("timeouts"),
            Some("sluicegate_timeouts_total"),
            Counter,
            "Connections timed out by the loop (408, idle, write).",
            Read::Num(|r| Some(load(&r.counters.timeouts)))
        ),
        entry!(
            Some("forwarded_malformed"),
            Some("sluicegate_forwarded_malformed_total"),
            Counter,
            "Forwarding headers from trusted peers ignored as malformed.",
            Read::Num(|r| Some(load(&r.counters.forwarded_malformed)))
        ),
        entry!(
            Some("proxy_refused"),
            Some("sluicegate_proxy_refused_total"),
            Counter,
            "Connections closed for a bad or untrusted PROXY header.",
            Read::Num(|r| Some(load(&r.counters.proxy_refused)))
        ),
        entry!(
            None,
            Some("sluicegate_shutdown_cut_total"),
            Counter,
            "Requests cut by a stop.",
            Read::Num(|r| Some(load(&r.counters.cut)))
        ),
        entry!(
            Some("app_timeouts"),
            Some("sluicegate_app_timeouts_total"),
            Counter,
            "App calls that passed --timeout.",
            Read::Num(|r| Some(r.app_timeouts))
        ),
        entry!(
            Some("stuck_calls"),
            Some("sluicegate_stuck_calls"),
            Gauge,
            "App calls past --timeout still running.",
            Read::Num(|r| Some(r.stuck_calls))
        ),
        entry!(
            None,
            Some("sluicegate_app_calls_in_flight"),
            Gauge,
            "App calls running now.",
            Read::Num(|r| Some(r.app_calls_in_flight))
        ),
        entry!(
            Some("inline_calls"),
            Some("sluicegate_inline_calls_total"),
            Counter,
            "App calls run inline on the loop's thread.",
            Read::Num(|r| Some(r.inline_calls))
        ),
        entry!(
            Some("dispatched_calls"),
            Some("sluicegate_pool_calls_total"),
            Counter,
            "App calls run on a pool thread.",
            Read::Num(|r| Some(r.dispatched_calls))
        ),
        entry!(
            Some("takeovers"),
            Some("sluicegate_takeovers_total"),
            Counter,
            "Loop hand-overs by the watchdog (mode switches).",
            Read::Num(|r| Some(r.takeovers))
        ),
        entry!(
            Some("handoffs"),
            Some("sluicegate_handoffs_total"),
            Counter,
            "Loop hand-overs to another thread before an inline call.",
            Read::Num(|r| Some(r.handoffs))
        ),
        entry!(
            Some("preemptions"),
            Some("sluicegate_preemptions_total"),
            Counter,
            "Inline calls the watchdog took the loop from.",
            Read::Num(|r| Some(r.preemptions))
        ),
        entry!(
            Some("mode"),
            None,
            Gauge,
            "The scheduler's mode: inline or pool.",
            Read::Text(|r| r.mode)
        ),
        entry!(
            Some("threads"),
            Some("sluicegate_pool_threads"),
            Gauge,
            "App threads alive.",
            Read::Num(|r| Some(r.threads))
        ),
        entry!(
            Some("busy_threads"),
            Some("sluicegate_pool_busy_threads"),
            Gauge,
            "App threads running a call.",
            Read::Num(|r| Some(r.busy_threads))
        ),
        entry!(
            Some("max_runnable"),
            None,
            Gauge,
            "Calls admitted to run at once.",
            Read::Num(|r| r.admission.map(|a| a.max_runnable))
        ),
        entry!(
            Some("runnable_short"),
            None,
            Gauge,
            "Short calls runnable now.",
            Read::Num(|r| r.admission.map(|a| a.runnable_short))
        ),
        entry!(
            Some("runnable_long"),
            None,
            Gauge,
            "Long calls runnable now.",
            Read::Num(|r| r.admission.map(|a| a.runnable_long))
        ),
        entry!(
            Some("runnable_short_peak"),
            None,
            Gauge,
            "The most short calls runnable at once.",
            Read::Num(|r| r.admission.map(|a| a.runnable_short_peak))
        ),
        entry!(
            Some("runnable_long_peak"),
            None,
            Gauge,
            "The most long calls runnable at once.",
            Read::Num(|r| r.admission.map(|a| a.runnable_long_peak))
        ),
        entry!(
            Some("admission_queue"),
            Some("sluicegate_admission_queue"),
            Gauge,
            "Calls waiting for admission.",
            Read::Num(|r| r.admission.map(|a| a.queue))
        ),
        entry!(
            Some("admission_waits"),
            Some("sluicegate_admission_waits_total"),
            Counter,
            "Calls that waited in a queue before being admitted.",
            Read::Num(|r| r.admission.map(|a| a.waits))
        ),
        entry!(
            Some("demotions"),
            None,
            Counter,
            "Calls seen blocked, which stopped counting as runnable.",
            Read::Num(|r| r.admission.map(|a| a.demotions))
        ),
        entry!(
            Some("lengthened"),
            None,
            Counter,
            "Short calls that ran long and moved to the long class.",
            Read::Num(|r| r.admission.map(|a| a.lengthened))
        ),
        entry!(
            Some("admitted_blocking"),
            None,
            Counter,
            "Calls admitted at once because their route was seen blocking.",
            Read::Num(|r| r.admission.map(|a| a.admitted_blocking))
        ),
        entry!(
            Some("fast_first"),
            None,
            Counter,
            "Long calls that waited for admitted fast calls to go first.",
            Read::Num(|r| r.admission.map(|a| a.fast_first))
        ),
        entry!(
            Some("blocking_room"),
            None,
            Gauge,
            "Calls to routes seen blocking that may be in flight at once now.",
            Read::Num(|r| r.admission.map(|a| a.blocking_room))
        ),
        entry!(
            Some("blocking_room_least"),
            None,
            Gauge,
            "The least room the calls to routes seen blocking have had.",
            Read::Num(|r| r.admission.map(|a| a.blocking_room_least))
        ),
        entry!(
            Some("start_gate_places"),
            Some("sluicegate_start_gate_places"),
            Gauge,
            "Pool calls that may wait for the GIL to start at once (0: no gate).",
            Read::Num(|r| r.admission.map(|a| a.start_gate_places))
        ),
        entry!(
            None,
            Some("sluicegate_access_log_dropped_total"),
            Counter,
            "Access log lines dropped (the writer fell behind, or a write failed).",
            Read::Num(|r| r.access_log_dropped)
        ),
        entry!(
            Some("static_cache_files"),
            Some("sluicegate_static_cache_files"),
            Gauge,
            "Static files kept in memory.",
            Read::Num(|r| r.static_cache.map(|c| c.files))
        ),
        entry!(
            Some("static_cache_bytes"),
            Some("sluicegate_static_cache_bytes"),
            Gauge,
            "Memory the static files kept in memory take, with their entries.",
            Read::Num(|r| r.static_cache.map(|c| c.bytes))
        ),
        entry!(
            Some("static_cache_hits"),
            Some("sluicegate_static_cache_hits_total"),
            Counter,
            "Static answers sent from memory.",
            Read::Num(|r| r.static_cache.map(|c| c.hits))
        ),
    ];

/// A `stats()` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stat {
    Num(u64),
    Text(&'static str),
}

/// The `stats()` dict's items, in the table's order (absent entries left out).
pub fn stats(r: &Readings<'_>) -> Vec<(&'static str, Stat)> {
    TABLE
        .iter()
        .filter_map(|e| {
            let value = match e.read {
                Read::Num(read) => Stat::Num(read(r)?),
                Read::Text(read) => Stat::Text(read(r)),
                Read::Labelled(..) | Read::Histogram(_) => return None,
            };
            Some((e.key?, value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_is_shown_somewhere_and_named_once() {
        let mut keys = std::collections::HashSet::new();
        let mut names = std::collections::HashSet::new();
        for e in TABLE {
            assert!(e.key.is_some() || e.name.is_some());
            if let Some(k) = e.key {
                assert!(keys.insert(k), "stats key {k} twice");
                assert!(matches!(e.read, Read::Num(_) | Read::Text(_)), "{k}");
            }
            if let Some(n) = e.name {
                assert!(names.insert(n), "series {n} twice");
                assert!(n.starts_with("sluicegate_") && !matches!(e.read, Read::Text(_)));
                assert_eq!(n.ends_with("_total"), e.kind == Kind::Counter, "{n}");
            }
        }
    }
}
