//! HTTP/2: connections that spoke the client preface (h2c with prior knowledge on a plain
//! listener) or agreed on `h2` by ALPN (a TLS listener) leave the event loop and are served
//! by hyperium's `h2` crate on a tokio current-thread runtime, driven by one thread at a time,
//! the *HTTP/2 thread*, which also runs fast streams' calls (`inline.rs`; a call that blocks
//! loses the role to a new thread). docs/architecture.md, "HTTP/2", says why.
//!
//! - [`H2Hub`]: what the loop and the server know of it: `hand_over` takes a connection from
//!   the loop (the socket leaves the loop's epoll set; the bytes read so far come along),
//!   `start` readies the runtime with the server's [`StreamRunner`] (inline now, or to the
//!   pool?), `next_batch` is the driving thread's wait, `stop_changed` tells the connections
//!   of a stop (the loop calls it when the stop state moves), `join` waits for the end.
//! - `conn.rs`: one connection's task: the handshake, accepting streams, the idle timer, the
//!   GOAWAY at a stop, the resets at its deadline.
//! - `inline.rs`: the inline path for fast streams: the queue and the driver role, which a
//!   blocking call loses to a new thread (the server floor runs the calls and the watchdog).
//! - `open_streams.rs`: a connection's open streams, reset at the end of a stop's graceful time.
//! - `own_answer.rs`: `--static` and `--health-path` answered on the HTTP/2 thread.
//! - `parked.rs`: answers waiting for the client's window, held here, not by an app thread.
//! - `socket_io.rs`: the socket (plain or TLS) as tokio's `AsyncRead`/`AsyncWrite`.
//! - `stream.rs`: one stream seen from its app thread: the body in, the response out.
//!
//! Nothing here knows Python: a stream leaves as a [`StreamCall`], a plain value.

mod call;
mod conn;
pub mod inline;
mod open_streams;
mod own_answer;
mod parked;
mod socket_io;
pub mod stream;

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::{mpsc, Notify};

use crate::config::Config;
use crate::io::conn::Conn;
pub use call::{LoopView, Stop, StreamCall, StreamRunner, Upper};
use conn::ThreadShare;
pub use inline::{Batch, Inline};
pub use stream::{StreamBody, StreamCut, StreamReply};

/// The HTTP/2 preface's first line: a plain listener's connection that opens with it speaks
/// HTTP/2 (h2c with prior knowledge, RFC 9113 §3.3).
pub use sluicegate_proto::h2::starts_with_preface;

/// What the loop and the server hold of the HTTP/2 thread.
pub struct H2Hub {
    config: Arc<Config>,
    to_thread: mpsc::UnboundedSender<Box<Conn>>,
    from_loop: Mutex<Option<mpsc::UnboundedReceiver<Box<Conn>>>>,
    /// The current-thread runtime every connection's task runs on, driven by whichever thread
    /// holds the driver role (`inline.rs`).
    runtime: OnceLock<tokio::runtime::Runtime>,
    /// The streams to run inline, and the driver role.
    pub inline: Arc<Inline>,
    /// Rung when the stop state moves, and when a connection ends during a stop.
    stop_bell: Arc<Notify>,
    finished: Mutex<bool>,
    finished_cond: Condvar,
    /// Connections being served.
    pub open: Arc<AtomicUsize>,
}

impl H2Hub {
    pub fn new(config: Arc<Config>) -> Arc<H2Hub> {
        let (to_thread, from_loop) = mpsc::unbounded_channel();
        Arc::new(H2Hub {
            config,
            to_thread,
            from_loop: Mutex::new(Some(from_loop)),
            runtime: OnceLock::new(),
            inline: Arc::new(Inline::new()),
            stop_bell: Arc::new(Notify::new()),
            finished: Mutex::new(false),
            finished_cond: Condvar::new(),
            open: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// Ready the runtime and its work; `runner` runs each stream's call. Nothing runs until a
    /// thread drives it (`next_batch`): the server starts the first one. `false`: started
    /// already.
    pub fn start(
        &self,
        ctx: Arc<dyn LoopView>,
        runner: Arc<dyn StreamRunner>,
    ) -> std::io::Result<bool> {
        let Some(rx) = self.from_loop.lock().unwrap().take() else {
            return Ok(false);
        };
        let share = Arc::new(ThreadShare {
            config: Arc::clone(&self.config),
            runner,
            inline: Arc::clone(&self.inline),
            stop_bell: Arc::clone(&self.stop_bell),
            open: Arc::clone(&self.open),
            parked: Arc::default(),
        });
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let inline = Arc::clone(&self.inline);
        rt.spawn(async move {
            conn::serve_all(share, ctx, rx).await;
            inline.all_done();
        });
        let _ = self.runtime.set(rt);
        Ok(true)
    }

    /// The driving thread's wait: drive every connection until streams are queued to run
    /// inline ([`Batch::Calls`]), or until the work is over after a stop.
    pub fn next_batch(&self) -> Batch {
        match self.runtime.get() {
            Some(rt) => rt.block_on(self.inline.wait()),
            None => Batch::Done,
        }
    }

    /// The stop state moved (the loop's `request_shutdown`, the drain's end): the connections
    /// hear of it now (GOAWAY), not at a timer's next look.
    pub fn stop_changed(&self) {
        self.stop_bell.notify_one();
    }

    /// The driving thread saw [`Batch::Done`]: the HTTP/2 thread's work is over.
    pub fn finish(&self) {
        *self.finished.lock().unwrap() = true;
        self.finished_cond.notify_all();
    }

    /// Take a connection from the event loop (its socket is out of the loop's epoll set).
    pub fn hand_over(&self, conn: Box<Conn>) {
        // Fails only once the thread has ended (a stop): the connection then closes.
        let _ = self.to_thread.send(conn);
    }

    /// Wait up to `timeout` for the HTTP/2 thread to end (it ends once a stop was asked for
    /// and every connection has closed after its GOAWAY).
    pub fn join(&self, timeout: Duration) {
        let g = self.finished.lock().unwrap();
        let _ = self
            .finished_cond
            .wait_timeout_while(g, timeout, |done| !*done)
            .unwrap();
    }
}
