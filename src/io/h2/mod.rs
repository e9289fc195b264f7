//! HTTP/2: connections that spoke the client preface (h2c with prior knowledge on a plain
//! listener) or agreed on `h2` by ALPN (a TLS listener) leave the event loop and are served
//! by hyperium's `h2` crate on one thread of their own, the *HTTP/2 thread*, which runs a
//! tokio current-thread runtime (docs/architecture.md, "HTTP/2", says why and what it costs).
//!
//! - [`H2Hub`]: what the loop and the server know of it: `hand_over` takes a connection from
//!   the loop (the socket leaves the loop's epoll set; the bytes read so far come along),
//!   `start` runs the thread with the server's dispatch (each stream's call goes to the same
//!   pool as an HTTP/1.1 request's, through a function the server floor gives down), `stop`
//!   ends it after a graceful stop's GOAWAYs.
//! - `conn.rs`: one connection's task: the handshake, accepting streams, the idle timer, the
//!   GOAWAY at a stop.
//! - `own_answer.rs`: `--static` and `--health-path` answered on the HTTP/2 thread.
//! - `socket_io.rs`: the socket (plain or TLS) as tokio's `AsyncRead`/`AsyncWrite`.
//! - `stream.rs`: one stream seen from its app thread: the body in, the response out.
//!
//! Nothing here knows Python: a stream leaves as a [`StreamCall`], a plain value.

mod call;
mod conn;
mod own_answer;
mod socket_io;
pub mod stream;

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;

use crate::config::Config;
use crate::io::conn::Conn;
use call::ThreadShare;
pub use call::{Dispatch, LoopView, Stop, StreamCall};
pub use stream::{StreamBody, StreamCut, StreamReply};

/// The HTTP/2 preface's first line: a plain listener's connection that opens with it speaks
/// HTTP/2 (h2c with prior knowledge, RFC 9113 §3.3).
pub use sluicegate_proto::h2::starts_with_preface;

/// What the loop and the server hold of the HTTP/2 thread.
pub struct H2Hub {
    config: Arc<Config>,
    to_thread: mpsc::UnboundedSender<Box<Conn>>,
    from_loop: Mutex<Option<mpsc::UnboundedReceiver<Box<Conn>>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
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
            thread: Mutex::new(None),
            open: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// Start the HTTP/2 thread; `dispatch` runs each stream's call.
    pub fn start(
        self: &Arc<Self>,
        ctx: Arc<dyn LoopView>,
        dispatch: Dispatch,
    ) -> std::io::Result<()> {
        let Some(rx) = self.from_loop.lock().unwrap().take() else {
            return Ok(());
        };
        let share = Arc::new(ThreadShare {
            config: Arc::clone(&self.config),
            dispatch,
            open: Arc::clone(&self.open),
        });
        let handle = std::thread::Builder::new()
            .name("sluicegate-h2".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_io()
                    .enable_time()
                    .build()
                    .expect("the HTTP/2 thread's runtime");
                rt.block_on(conn::serve_all(share, ctx, rx));
            })?;
        *self.thread.lock().unwrap() = Some(handle);
        Ok(())
    }

    /// Take a connection from the event loop (its socket is out of the loop's epoll set).
    pub fn hand_over(&self, conn: Box<Conn>) {
        // Fails only once the thread has ended (a stop): the connection then closes.
        let _ = self.to_thread.send(conn);
    }

    /// Wait up to `timeout` for the HTTP/2 thread to end (it ends once a stop was asked for
    /// and every connection has closed after its GOAWAY).
    pub fn join(&self, timeout: Duration) {
        let until = std::time::Instant::now() + timeout;
        let handle = self.thread.lock().unwrap().take();
        if let Some(h) = handle {
            while !h.is_finished() && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            if h.is_finished() {
                let _ = h.join();
            }
        }
    }
}
