//! What the event loop is handed to serve the `--metrics-bind` listener: the server's pages,
//! as a value ([`MetricsPages`]), so that `io` imports nothing above it; and the [`PageJob`]
//! with which a connection goes away while its page is rendered off the loop's thread.
//! (The loop's side of that listener is `metrics.rs`.)

use std::sync::Arc;

use mio::Token;
use sluicegate_proto::RequestHead;

use super::ctx::LoopCtx;
use crate::io::conn::Conn;
use crate::observe::metrics_http::{answer, Page};

/// Token of the metrics listener (the app's listeners count down from `LISTENER_BASE`).
pub(super) const METRICS_LISTENER_TOKEN: Token = Token(usize::MAX - 1);

/// The pages of the metrics listener, given by the server.
pub trait MetricsPages: Send + Sync {
    /// The page at `path` if it is rendered on the loop's thread (so it must not wait for
    /// anything: no GIL); None for no such page (404) and for one rendered elsewhere.
    fn here(&self, path: &[u8]) -> Option<Page>;
    /// Whether the page at `path` is rendered off the loop's thread.
    fn elsewhere(&self, path: &[u8]) -> bool;
    /// Render a page off the loop's thread, and [`PageJob::finish`] it there. Err gives the
    /// job back when it cannot be taken now (too many at once): the loop answers 503.
    fn render_elsewhere(&self, job: Box<PageJob>) -> Result<(), Box<PageJob>>;
}

/// A metrics connection away from the loop while its page is rendered elsewhere.
pub struct PageJob {
    pub(super) conn: Box<Conn>,
    pub(super) head: RequestHead,
    pub(super) ctx: Arc<LoopCtx>,
}

impl PageJob {
    /// Answer with `page` (None: 404; called only for a GET or HEAD) and give the connection
    /// back to the loop, which writes the answer and closes.
    pub fn finish(self, page: impl FnOnce(&[u8]) -> Option<Page>) {
        let PageJob {
            mut conn,
            head,
            ctx,
        } = self;
        conn.out.push_owned(answer(Ok(&head), page));
        conn.after_output.close();
        ctx.return_conn(conn);
    }
}
