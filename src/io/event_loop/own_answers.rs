//! The answers the loop gives itself, without the app (`own_answer`: the health path and
//! static files, framed by the caller for its protocol), and how an HTTP/1.1 connection goes on
//! after one (`answered_here`: counted, logged, kept alive or closed).

use sluicegate_proto::forwarded::{self, Hop};
use sluicegate_proto::h1::response::{health_answer, OwnAnswer};
use sluicegate_proto::uwsgi::UwsgiFacts;

use super::*;
use crate::http_date::http_date;
use crate::io::static_files::Own;
use crate::observe::request_end::PendingLog;
use crate::observe::timings::End;

/// The answers the loop gives itself, without the app, on any protocol: the health path
/// (`--health-path`; it comes first, so a check is answered within the loop's round even while
/// every app thread computes) and static files (`--static`), each handed to `frame`, which
/// frames it for its protocol. `None`: the request is the app's. A stop, a retired worker
/// or the request that retires it (`io::request_limit`) closes the connection after it.
#[inline]
pub(crate) fn own_answer<R>(
    head: &RequestHead,
    ctx: &LoopCtx,
    frame: impl FnOnce(Own<'_>) -> R,
) -> Option<R> {
    let config = &ctx.settings.config;
    // Compared first: the answer is made only for the health path itself.
    if !config.health_path.is_empty() && head.path() == config.health_path.as_slice() {
        if let Some(mut answer) = health_answer(head, &config.health_path, !ctx.health_failing()) {
            answer.closes |= ctx.keep_alive_ending() || ctx.next_request_retires();
            return Some(frame(Own {
                answer: &answer,
                date: &http_date(),
                file: None,
                expires: None,
            }));
        }
    }
    ctx.settings.statics.as_ref()?.serve(head, |own| {
        if !ctx.keep_alive_ending() && !ctx.next_request_retires() {
            return frame(own);
        }
        let mut answer = *own.answer;
        answer.closes = true;
        frame(Own {
            answer: &answer,
            ..own
        })
    })
}

/// The client a loop answer is logged for: on a uwsgi listener, the REMOTE_ADDR nginx passed
/// (when the hop is trusted, as for the app's requests, `wsgi::call_setup`), else the peer's
/// address (none for a unix-socket client).
pub(super) fn answer_client(
    conn: &Conn,
    uwsgi: Option<&UwsgiFacts>,
    ctx: &LoopCtx,
) -> Option<std::net::IpAddr> {
    let trust = ctx.settings.config.forwarding.as_ref().map(|(t, _)| t);
    uwsgi
        .filter(|_| forwarded::trusted(trust, Hop::of(conn.peer.ip(), conn.peer_origin)))
        .and_then(|facts| facts.resolved().client)
        .map(|(ip, _)| ip)
        .or_else(|| conn.peer.ip())
}

/// The loop answered a request itself (`own_answer`): count and log it (for `client`, its
/// request time from `parsed_at`), and decide whether the connection closes after the answer.
pub(super) fn answered_here(
    conn: &mut Conn,
    head: RequestHead,
    answer: OwnAnswer,
    ctx: &LoopCtx,
    client: Option<std::net::IpAddr>,
    parsed_at: u64,
) {
    conn.requests += 1;
    ctx.count_request();
    let has_body = head.body != BodyFraming::None;
    let client_closes = !head.keep_alive;
    ctx.counters.by_request.loop_answer(answer.status);
    let end = if answer.status >= 400 {
        End::Error
    } else {
        End::Ok
    };
    if ctx.settings.access_log.is_none() {
        // No line to write: counted now (a loop answer spends nothing in the app; its send
        // time is measured only when the access log asks for it, which saves a record per
        // static file).
        let t = crate::observe::timings::Timings::default();
        ctx.counters
            .by_request
            .record(answer.status, answer.body_bytes, &t, end, false);
    } else {
        let pending = PendingLog::answered_since(
            head,
            client,
            answer.status,
            answer.body_bytes,
            end,
            parsed_at,
        );
        if let Some(old) = conn.pending_log.replace(Box::new(pending)) {
            old.finish(
                ctx.settings.access_log.as_deref(),
                &ctx.counters.by_request,
                false,
            );
        }
    }
    // The loop reads no request body: a request with one cannot be followed by another on
    // this connection (the answer said Connection: close). The answer's head decided
    // (`own_answer`): closing after a head that promised keep-alive would lose the client's
    // next request.
    if !answer.keep_alive {
        conn.after_output = if has_body {
            AfterOutput::CloseLingering
        } else if client_closes {
            AfterOutput::CloseAsAsked
        } else {
            AfterOutput::Close
        };
    }
    // Idle once the answer is written (if the socket is full, writing it switches to the
    // write timeout).
    conn.phase = Phase::Idle;
    conn.deadline = Some(Instant::now() + ctx.settings.config.keepalive_timeout);
}
