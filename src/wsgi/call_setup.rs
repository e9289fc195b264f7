//! What every app call does around the app, whatever the protocol (HTTP/1.1's
//! `driver::run_request`, an HTTP/2 or HTTP/3 stream's `streams::run_stream`, both entered through
//! `call::run_call`): it is counted, its forwarding facts are resolved
//! (`--forwarded-allow-ips`, the decision proto's), `--timeout` watches it from the start
//! ([`begin`]) until it is over ([`Watched::leave`], before the socket can be closed: see
//! `wsgi::deadline`), and the access log is told how it ended and whose it was.

use std::net::IpAddr;
use std::sync::atomic::Ordering;

use pyo3::prelude::*;
use sluicegate_proto::forwarded::{self, Hop, Resolved};
use sluicegate_proto::uwsgi::UwsgiFacts;
use sluicegate_proto::RequestHead;

use super::bridge::Bridge;
use super::deadline::Ticket;
use super::iterable::AppEnd;
use crate::io::transport::Cut;
use crate::observe::timings::End as LogEnd;
use crate::peer::Peer;

/// An app call begun: its forwarding facts and its `--timeout` ticket. (The facts are held
/// here, not boxed: behind a proxy every request has them, and a box was an allocation and a
/// free each.)
pub struct Watched {
    pub forwarded: Option<Resolved>,
    pub ticket: Option<Ticket>,
}

/// Begin a call: counted, its forwarding facts resolved (`uwsgi`: nginx's own variables),
/// and watched by `--timeout` (`cut`: how the watch ends it; `version`: the request line's
/// protocol, `" HTTP/1.1"`).
pub fn begin(
    bridge: &Bridge,
    head: &RequestHead,
    hop: Hop,
    uwsgi: Option<&UwsgiFacts>,
    cut: impl Into<Cut>,
    version: &[u8],
) -> Watched {
    bridge.loop_ctx.count_request();
    let ticket = bridge
        .deadlines
        .as_ref()
        .map(|d| d.enter(cut, request_line(head, version)));
    Watched {
        forwarded: forwarded_facts(bridge, hop, head, uwsgi),
        ticket,
    }
}

impl Watched {
    /// The call is over: it leaves `--timeout`'s watch. Returns whether it timed out, and
    /// whether the watch answered 504.
    pub fn leave(&mut self, bridge: &Bridge, py: Python<'_>) -> (bool, bool) {
        match (self.ticket.take(), &bridge.deadlines) {
            (Some(t), Some(d)) => {
                let answered = t.gate.answered();
                (d.leave(py, t), answered)
            }
            _ => (false, false),
        }
    }

    /// The client's address for the log: what a trusted proxy said, else the peer's.
    pub fn client_ip(&self, peer: &Peer) -> Option<IpAddr> {
        self.forwarded
            .as_ref()
            .and_then(|f| f.client)
            .map(|(ip, _)| ip)
            .or_else(|| peer.ip())
    }
}

/// How the access log says the call ended.
pub(crate) fn log_end(timed_out: bool, gone: bool, end: &AppEnd) -> LogEnd {
    if timed_out {
        LogEnd::Timeout
    } else if gone {
        LogEnd::ClientGone
    } else {
        end.log_end()
    }
}

/// What this request's forwarding facts are: a uwsgi request's from nginx's own variables,
/// never the forwarding headers it passes through unchanged (from a hop of either list); an
/// HTTP request's from its forwarding headers: all they say from a `--forwarded-for-ips`
/// hop, the scheme alone from a `--forwarded-allow-ips` one (gunicorn's meaning: REMOTE_ADDR
/// and the host stay the connection's). None: the hop is not trusted, or said nothing.
/// Values that do not parse are counted.
fn forwarded_facts(
    bridge: &Bridge,
    hop: Hop,
    head: &RequestHead,
    uwsgi: Option<&UwsgiFacts>,
) -> Option<Resolved> {
    let config = &bridge.config;
    let whole = config.forwarded_for.as_ref();
    let scheme_only = config.forwarding.as_ref().map(|(t, _)| t);
    if let Some(facts) = uwsgi {
        let trusted = forwarded::trusted(whole, hop) || forwarded::trusted(scheme_only, hop);
        return trusted.then(|| facts.resolved());
    }
    let family = config.forwarded_family;
    let r = if forwarded::trusted(whole, hop) {
        forwarded::forwarded(head, hop, whole, family)?
    } else {
        let r = forwarded::forwarded(head, hop, scheme_only, family)?;
        let r = Resolved {
            scheme: r.scheme,
            malformed: r.malformed,
            ..Resolved::default()
        };
        if r == Resolved::default() {
            return None;
        }
        r
    };
    if r.malformed > 0 {
        bridge
            .counters()
            .forwarded_malformed
            .fetch_add(u64::from(r.malformed), Ordering::Relaxed);
    }
    Some(r)
}

/// "METHOD TARGET" and `version`, as the client sent it (lossy for non-UTF-8 bytes). Built
/// every app call while calls are registered (the control socket's default): one allocation
/// of the exact size and copies, not `format!`, which cost about 600 instructions a request
/// more (callgrind, hello world).
fn request_line(head: &RequestHead, version: &[u8]) -> String {
    let (method, target) = (head.method(), head.target());
    let mut line = Vec::with_capacity(method.len() + target.len() + 1 + version.len());
    line.extend_from_slice(method);
    line.push(b' ');
    line.extend_from_slice(target);
    line.extend_from_slice(version);
    String::from_utf8(line).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}
