//! What the streams' connection tasks (`io::h2`, `io::h3`) read of the loop, through
//! `io::streams`' `LoopView` trait: the loop implements it here, so neither imports the loop
//! (no import cycle: `scripts/check_floors.py`): the shutdown state (a retired worker's
//! included), the counters, and the loop's own answers (`--static`, `--health-path`) with
//! their accounting, the same decisions as for an HTTP/1.1 request.

use sluicegate_proto::RequestHead;

use super::{Counters, LoopCtx, Shutdown};
use crate::io::static_files::Own;
use crate::observe::request_end::PendingLog;
use crate::observe::timings::End;

/// The loop as the streams' connection tasks see it (they do not import the loop).
impl crate::io::streams::LoopView for LoopCtx {
    /// A retired worker (`io::request_limit`) is stopping for its connections: each hears a
    /// GOAWAY, its streams in flight finish and it closes, as keep-alive ends after each
    /// HTTP/1.1 answer; the process itself serves on until the master stops it.
    fn stop(&self) -> crate::io::streams::Stop {
        use crate::io::streams::Stop;
        match self.shutdown_state() {
            Shutdown::Running | Shutdown::Draining if self.retired() => Stop::Graceful,
            Shutdown::Running | Shutdown::Draining => Stop::Running,
            Shutdown::Graceful => Stop::Graceful,
            Shutdown::Immediate => Stop::Immediate,
        }
    }

    fn graceful_left(&self) -> std::time::Duration {
        LoopCtx::graceful_left(self)
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn own_answer(&self, head: &RequestHead, frame: &mut dyn FnMut(Own<'_>)) -> bool {
        super::own_answers::own_answer(head, self, frame).is_some()
    }

    fn server_header(&self) -> &[u8] {
        &self.settings.config.server_header
    }

    fn account_own(
        &self,
        head: RequestHead,
        client: Option<std::net::IpAddr>,
        status: u16,
        sent: u64,
        parsed_at: u64,
    ) {
        let end = if status >= 400 { End::Error } else { End::Ok };
        PendingLog::answered_since(head, client, status, sent, end, parsed_at).finish(
            self.settings.access_log.as_deref(),
            &self.counters.by_request,
            false,
        );
    }
}
