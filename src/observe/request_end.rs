//! A request's end, accounted once: counted in the [`RequestMetrics`] and, if the access log is
//! on, written to it, with its send time known then. [`PendingLog`] owns what it needs: a
//! response the event loop is still sending is accounted when its last byte is taken, or when
//! the client goes away (`finish`); one whose last byte was taken before its app thread let go
//! of it, at once (`account_at`). [`Finished`] borrows the same fields (an HTTP/2 stream's
//! end). [`log_refused`]: the line of a request the server refused itself.

use std::net::IpAddr;
use std::time::Duration;

use sluicegate_proto::RequestHead;

use super::access_log::AccessLog;
use super::counters::RequestMetrics;
use super::entry::{Entry, LogExtras};
use super::timings::{End, Timings};
use crate::clock::{now_ns, since};

/// A request whose response is still being sent by the event loop.
pub struct PendingLog {
    pub head: RequestHead,
    /// The client (after forwarding rules and the PROXY protocol); None: a unix-socket client.
    pub client: Option<IpAddr>,
    pub status: u16,
    pub body_bytes: u64,
    /// `clock::now_ns` readings.
    pub parsed_at: u64,
    pub queue: Duration,
    pub app: Duration,
    /// When the response's first byte was ready (its head encoded).
    pub send_from: u64,
    pub end: End,
    pub inline: Option<bool>,
    /// The response's headers, kept when the log's format names one.
    pub extras: Option<Box<LogExtras>>,
}

impl PendingLog {
    /// A request the loop answered itself, without an app call (a static file, the health
    /// path).
    /// `parsed_at`: when its head was parsed (a `clock::now_ns` reading), from which its
    /// request time runs (`%(L)s`) until its last byte is taken.
    pub fn answered_since(
        head: RequestHead,
        client: Option<IpAddr>,
        status: u16,
        body_bytes: u64,
        end: End,
        parsed_at: u64,
    ) -> PendingLog {
        PendingLog {
            head,
            client,
            status,
            body_bytes,
            parsed_at,
            queue: Duration::ZERO,
            app: Duration::ZERO,
            send_from: parsed_at,
            end,
            inline: None,
            extras: None,
        }
    }

    /// The request is over (its last byte taken, or `gone`: the client left first): count it
    /// in `metrics`, and write its line if the log is on.
    pub fn finish(mut self, log: Option<&AccessLog>, metrics: &RequestMetrics, gone: bool) {
        if gone {
            self.end = End::ClientGone;
        }
        self.account_at(log, metrics, now_ns());
    }

    /// Count it and write its line now, its last byte taken at `now` (a request whose last
    /// byte was taken before its app thread let go of it: nothing is boxed or copied).
    pub fn account_at(self, log: Option<&AccessLog>, metrics: &RequestMetrics, now: u64) {
        Finished {
            head: &self.head,
            client: self.client,
            status: self.status,
            body_bytes: self.body_bytes,
            parsed_at: self.parsed_at,
            queue: self.queue,
            app: self.app,
            send_from: self.send_from,
            end: self.end,
            inline: self.inline,
            extras: self.extras.as_deref(),
        }
        .account(log, metrics, now);
    }
}

/// A finished request, its fields borrowed: what `PendingLog` holds, for a request whose last
/// byte was taken before its app thread let go of it (no copy of the head then).
pub struct Finished<'a> {
    pub head: &'a RequestHead,
    pub client: Option<IpAddr>,
    pub status: u16,
    pub body_bytes: u64,
    pub parsed_at: u64,
    pub queue: Duration,
    pub app: Duration,
    pub send_from: u64,
    pub end: End,
    pub inline: Option<bool>,
    pub extras: Option<&'a LogExtras>,
}

impl Finished<'_> {
    /// Count it in `metrics` and write its line if the log is on; `now`: its last byte's time.
    pub fn account(&self, log: Option<&AccessLog>, metrics: &RequestMetrics, now: u64) {
        let timings = Timings {
            queue: self.queue,
            app: self.app,
            send: since(self.send_from, now),
            total: since(self.parsed_at, now),
        };
        metrics.record(
            self.status,
            self.body_bytes,
            &timings,
            self.end,
            self.inline.is_some(),
        );
        if let Some(log) = log {
            log.write(&Entry {
                head: self.head,
                client: self.client,
                status: self.status,
                body_bytes: self.body_bytes,
                timings,
                end: self.end,
                inline: self.inline,
                extras: self.extras,
            });
        }
    }
}

/// A request the server refused by itself (a protocol error, a head or body too slow to come:
/// `head` as far as it is known, see `RequestHead::refused`), counted already where it was
/// refused: its access log line, status `status`, `answer` the error answer it was sent (its
/// body's length is logged), no app, no times.
pub fn log_refused(
    log: &AccessLog,
    head: &RequestHead,
    client: Option<IpAddr>,
    status: u16,
    answer: &[u8],
) {
    let body_bytes = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(0, |end| answer.len() - end - 4) as u64;
    log.write(&Entry {
        head,
        client,
        status,
        body_bytes,
        timings: Timings::default(),
        end: End::Error,
        inline: None,
        extras: None,
    });
}
