//! HTTP/2: connections that spoke the client preface (h2c with prior knowledge on a plain
//! listener) or agreed on `h2` by ALPN (a TLS listener) leave the loop's table and are served
//! by hyperium's `h2` crate, each as a task the event loop polls itself (`io::streams::tasks`):
//! no runtime and no thread of their own. Fast streams' calls run on the loop's thread
//! (`io::streams::inline`). docs/architecture.md, "HTTP/2", says why.
//!
//! - [`H2Hub`]: what the loop and the server know of it: `serve` makes a connection's task
//!   (the loop registers its socket under the task's token; the bytes read so far come
//!   along), `start` readies it with the server's [`StreamRunner`] (inline now, or to the
//!   pool?). A stop reaches the connections through the loop's task set
//!   (`io::streams::stop`), as HTTP/3's.
//! - `conn.rs`: one connection's task: the handshake, accepting streams, the idle timer, the
//!   GOAWAY at a stop, the resets at its deadline.
//! - `open_streams.rs`: a connection's open streams, reset at the end of a stop's graceful time.
//! - `own_answer.rs`: `--static` and `--health-path` answered by a task of the loop.
//! - `parked.rs`: answers waiting for the client's window, held here, not by an app thread.
//! - `socket_io.rs`: the socket (plain or TLS) as tokio's `AsyncRead`/`AsyncWrite`.
//! - `stream.rs`: one stream seen from its app thread: the body in (`stream/body.rs`), the
//!   response out.
//!
//! Nothing here knows Python: a stream leaves as a `StreamCall` (`io::streams`), a plain value.

mod conn;
mod open_streams;
mod own_answer;
mod parked;
mod socket_io;
pub mod stream;

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, OnceLock, Weak};

use crate::config::Config;
use crate::io::conn::Conn;
use crate::io::streams::{Inline, LoopView, Readiness, StopWatch, StreamRunner, Task};
use conn::ThreadShare;
pub use stream::{StreamBody, StreamReply};

/// The HTTP/2 preface's first line: a plain listener's connection that opens with it speaks
/// HTTP/2 (h2c with prior knowledge, RFC 9113 §3.3).
pub use sluicegate_proto::h2::starts_with_preface;

/// What the loop and the server hold of HTTP/2.
pub struct H2Hub {
    config: Arc<Config>,
    /// The connections' shared work and the loop they run on. Weak to the loop: the loop's
    /// context holds this hub (its settings), and a strong reference back would keep both,
    /// with the loop's epoll and eventfd descriptors, after the server stops.
    share: OnceLock<(Arc<ThreadShare>, Weak<dyn LoopView>)>,
    /// The streams to run inline on the loop's thread.
    pub inline: Arc<Inline>,
    /// Connections being served.
    pub open: Arc<AtomicUsize>,
}

impl H2Hub {
    pub fn new(config: Arc<Config>) -> Arc<H2Hub> {
        Arc::new(H2Hub {
            config,
            share: OnceLock::new(),
            inline: Arc::new(Inline::new()),
            open: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// Ready the connections' work; `runner` runs each stream's call. `false`: started
    /// already.
    pub fn start(
        &self,
        ctx: Arc<dyn LoopView>,
        runner: Arc<dyn StreamRunner>,
    ) -> std::io::Result<bool> {
        let share = Arc::new(ThreadShare {
            config: Arc::clone(&self.config),
            runner,
            inline: Arc::clone(&self.inline),
            open: Arc::clone(&self.open),
            parked: Arc::default(),
        });
        Ok(self.share.set((share, Arc::downgrade(&ctx))).is_ok())
    }

    /// The task that serves a connection taken from the loop's table (its socket registered
    /// under the task's token by the loop; `stop`: the task set's stop), or `None` before
    /// `start`.
    pub fn serve(&self, conn: Box<Conn>, ready: Arc<Readiness>, stop: StopWatch) -> Option<Task> {
        let (share, ctx) = self.share.get()?;
        let ctx = ctx.upgrade()?;
        self.open.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let task = conn::serve_one(Arc::clone(share), ctx, conn, ready, stop);
        Some(Box::pin(task))
    }
}
