//! What the event loop shares with the threads that take connections away from it: the
//! settings (one copy), the counters, the queues of returned connections and of streaming
//! responses to flush, shutdown requests, and a handle on the loop's epoll set; and the [`Call`]s
//! the loop hands out (an HTTP/1.1 request's [`Work`], an HTTP/2 stream's call).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use std::os::fd::RawFd;

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token, Waker};
use sluicegate_proto::forwarded::TrustList;
use sluicegate_proto::uwsgi::UwsgiFacts;
use sluicegate_proto::RequestHead;

use crate::config::Config;
use crate::io::balance::Balance;
use crate::io::conn::{AfterOutput, Conn, Wire};
use crate::io::request_limit::RequestLimit;
use crate::io::shared_out::SharedOut;
use crate::io::static_files::StaticFiles;
use crate::io::streams::StreamCall;
use crate::io::tls_writer::{self, TlsWriter, TLS_WRITER_MIN};
use crate::observe::access_log::AccessLog;

/// A request ready for the app: the connection (now owned by whoever runs the request) and its
/// parsed head. The head's bytes were consumed from the connection's buffer; the body, if any,
/// is what follows in the buffer and on the socket.
pub struct Work {
    pub conn: Box<Conn>,
    pub head: RequestHead,
    /// The whole body (if any) is already in the connection's buffer: the app can be called
    /// without ever waiting on the socket.
    pub body_buffered: bool,
    /// When the loop parsed the head (the access log's queue and total times start here).
    pub parsed_at: u64,
    /// A uwsgi request: what nginx's variables say about the client and the server.
    pub uwsgi: Option<Box<UwsgiFacts>>,
}

/// A call of the app the loop hands its driver, whatever the protocol: who runs it (inline on
/// the loop's thread or on the pool) is decided the same way for each (`server::drive`).
pub enum Call {
    /// An HTTP/1.1 (or uwsgi) request, its connection away from the loop.
    Request(Work),
    /// An HTTP/2 stream's call (its connection stays a task of the loop). Boxed: a `Call`
    /// moves several times on its way to the app, and a stream's call is twice a request's
    /// size (each move of an unboxed one cost a hello world about 150 instructions in copies).
    Stream(Box<StreamCall>),
}

impl Call {
    /// The request's head (its path names the call's route for admission and the watchdog).
    pub fn head(&self) -> &RequestHead {
        match self {
            Call::Request(w) => &w.head,
            Call::Stream(c) => &c.head,
        }
    }

    /// The request is whole: the app can be called without waiting for the client (a call
    /// that would wait for its body never runs inline). A stream is queued for the loop only
    /// when whole (`io::streams::Inline::offer`).
    pub fn whole(&self) -> bool {
        match self {
            Call::Request(w) => w.body_buffered,
            Call::Stream(_) => true,
        }
    }
}

pub use crate::observe::counters::Counters;

/// How far the server is in stopping. Only moves forward
/// (`Running < Draining < Graceful < Immediate`): a graceful stop can become immediate, never
/// the reverse. Stored in an `AtomicU8` as its
/// discriminant, so any thread (a signal handler's) can request it without a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Shutdown {
    Running = 0,
    /// A graceful stop asked for with `--drain-delay`: everything is served as before, but the
    /// health path answers 503 so that load balancers take the server out; `Graceful` after
    /// the delay.
    Draining = 1,
    /// Stop accepting; finish in-flight requests within the graceful timeout.
    Graceful = 2,
    /// Stop now: in-flight requests are cut.
    Immediate = 3,
}

impl Shutdown {
    fn from_u8(v: u8) -> Shutdown {
        match v {
            0 => Shutdown::Running,
            1 => Shutdown::Draining,
            2 => Shutdown::Graceful,
            _ => Shutdown::Immediate,
        }
    }
}

/// What the loop shares with the threads that take connections away from it.
pub struct LoopCtx {
    /// What the config says (the one copy).
    pub settings: LoopSettings,
    pub(super) waker: Arc<Waker>,
    /// The loop's epoll set (a clone: its own descriptor), for `mute_reads`.
    pub(super) registry: Registry,
    // Boxed on purpose: a connection moves between threads as one pointer, never copied.
    #[allow(clippy::vec_box)]
    pub(super) returns: Mutex<Vec<Box<Conn>>>,
    /// Streaming responses whose socket is full: the loop writes them as it becomes writable.
    pub(super) flush_requests: Mutex<Vec<(usize, Arc<SharedOut>)>>,
    pub(super) shutdown: AtomicU8,
    /// When the first shutdown request came: the graceful timeout runs from here, for the loop
    /// and for the pool alike (one deadline, not one each).
    pub(super) shutdown_at: Mutex<Option<Instant>>,
    pub counters: Counters,
    /// With worker processes: the shared connection counts (see `io::balance`).
    pub(super) balance: Option<Balance>,
    /// A worker's request limit, and whether it retired (`io::request_limit`).
    pub(super) limit: RequestLimit,
    /// Large TLS answers of inline calls are written there (`io::tls_writer`).
    pub(super) tls_writer: TlsWriter,
}

impl LoopCtx {
    /// Give a connection back to the loop after a request (keep-alive, pending output, or to be
    /// closed). Wakes the loop only when the queue was empty: one wake-up serves a batch.
    ///
    /// A *quiet* connection (keep-alive, everything written, no buffered input, in the epoll
    /// set) needs nothing from the loop until its client sends again, and then its socket's
    /// readiness wakes the loop, which takes the returned connections before it looks at them:
    /// so it is given back without a wake-up (an `eventfd` write and an `epoll_wait` return per
    /// request on the pool path when the loop is idle). The race with readiness that came while
    /// the connection was away is closed by `woke_away`: the loop sets it before taking the
    /// returns, this reads it after queueing, both under the queue's lock order.
    pub fn return_conn(&self, conn: Box<Conn>) {
        let quiet = matches!(conn.after_output, AfterOutput::KeepAlive)
            && conn.out.is_empty()
            && conn.registered
            && conn.rbuf.as_ref().is_none_or(|b| b.is_empty())
            && !self.shutting_down();
        let woke = quiet.then(|| Arc::clone(&conn.woke_away));
        let was_empty = {
            let mut q = self.returns.lock().unwrap();
            q.push(conn);
            q.len() == 1
        };
        let needs_loop = match woke {
            Some(w) => w.load(Ordering::SeqCst),
            None => true,
        };
        if was_empty && needs_loop {
            let _ = self.waker.wake();
        }
    }

    /// After an inline call (the connection still away from the loop's table): a TLS answer
    /// with at least `TLS_WRITER_MIN` bytes left goes to the writer thread, which gives the
    /// connection back once written (`io::tls_writer`); `Some(conn)`: the loop takes it back
    /// now and writes it. A plaintext answer always stays: its `writev` or `sendfile` costs the
    /// loop less than waking the writer does (see `io::tls_writer`).
    pub fn write_away(self: &Arc<Self>, conn: Box<Conn>) -> Option<Box<Conn>> {
        if conn.out.pending() < TLS_WRITER_MIN || conn.tls.is_none() || self.shutting_down() {
            return Some(conn);
        }
        self.tls_writer.hand(conn, self);
        None
    }

    /// Ask the loop to keep writing a streaming response whose socket is full (the connection
    /// stays away with its app thread). Wakes the loop only when the queue was empty.
    pub fn request_flush(&self, token: usize, out: Arc<SharedOut>) {
        let was_empty = {
            let mut q = self.flush_requests.lock().unwrap();
            q.push((token, out));
            q.len() == 1
        };
        if was_empty {
            let _ = self.waker.wake();
        }
    }

    /// Ask the loop to stop (a request for less than what was already asked changes nothing).
    /// A graceful stop drains first when `--drain-delay` is set (and goes on draining if asked
    /// again meanwhile); the graceful timeout counts from the end of the drain.
    pub fn request_shutdown(&self, how: Shutdown) {
        let mut at = self.shutdown_at.lock().unwrap();
        let how = match how {
            Shutdown::Graceful if !self.settings.config.drain_delay.is_zero() => {
                if self.shutdown_state() == Shutdown::Draining {
                    return;
                }
                Shutdown::Draining
            }
            other => other,
        };
        at.get_or_insert_with(Instant::now);
        self.shutdown.fetch_max(how as u8, Ordering::SeqCst);
        drop(at);
        // The loop tells the HTTP/2 connections (`LoopState::run_tasks`) at its next turn.
        let _ = self.waker.wake();
    }

    /// The loop's check while draining: once `--drain-delay` has passed, the graceful stop
    /// proper begins (and its timeout with it). Returns when to look again, if still draining.
    pub fn drain_step(&self, now: Instant) -> Option<Instant> {
        let mut at = self.shutdown_at.lock().unwrap();
        let until = at.unwrap_or(now) + self.settings.config.drain_delay;
        if now < until {
            return Some(until);
        }
        *at = Some(now);
        let _ = self.shutdown.compare_exchange(
            Shutdown::Draining as u8,
            Shutdown::Graceful as u8,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
        None
    }

    /// While a thread of its own drains the body of connection `token` (`io::read_ahead`),
    /// the loop need not hear of every arrival on it: edge-triggered readiness wakes the loop
    /// once per batch of segments, which cost the loop 3–5 ms of CPU per 64 MiB upload while the
    /// connection was not even its own. `muted` leaves only writability in the epoll set;
    /// unmuted, reading is asked for again and the kernel reports readiness that is already
    /// there (a pipelined request) at once, as for any registration. A connection that is not
    /// in the set gets no events anyway: the caller only calls this for one that is. Failure is
    /// harmless (the loop keeps hearing of it, as before) and ignored.
    pub fn mute_reads(&self, fd: RawFd, token: usize, muted: bool) {
        let interest = if muted {
            Interest::WRITABLE
        } else {
            Interest::READABLE | Interest::WRITABLE
        };
        let _ = self
            .registry
            .reregister(&mut SourceFd(&fd), Token(token), interest);
    }

    /// Stopping for real: no longer accepting (or about to), keep-alive ending.
    pub fn shutting_down(&self) -> bool {
        self.shutdown_state() >= Shutdown::Graceful
    }

    /// Whether keep-alive ends after the answer being made: a stop, or a worker that retired
    /// (`io::request_limit`).
    #[inline]
    pub fn keep_alive_ending(&self) -> bool {
        self.shutting_down() || self.limit.retired()
    }

    /// Whether the next request counted retires the worker (its answer then ends keep-alive).
    pub fn next_request_retires(&self) -> bool {
        self.limit
            .reached_by(self.counters.requests.load(Ordering::Relaxed) + 1)
    }

    /// Count a request (an app call, or an answer the loop makes itself); the one that reaches
    /// the worker's request limit retires it at once, before another is accepted or read.
    #[inline]
    pub fn count_request(&self) {
        let n = self.counters.requests.fetch_add(1, Ordering::Relaxed) + 1;
        if self.limit.reached_by(n) {
            self.retire();
        }
    }

    /// Retire after `requests` requests (0: never), not before `min_age` from now (uWSGI's
    /// `min-worker-lifetime`). Nothing in a single process.
    pub fn retire_after(&self, requests: u64, min_age: Duration) {
        if self.balance.is_some() {
            self.limit.set(requests, min_age);
        }
    }

    /// This worker retires (its request limit reached, `--max-stuck`; its replacement booting):
    /// it accepts no connection more, its entry in the balance counts it out, keep-alive
    /// ends after each answer (`io::request_limit`), and its HTTP/2 and HTTP/3 connections
    /// hear a GOAWAY (`h2_view`). Nothing in a single process.
    pub fn retire(&self) {
        if let Some(b) = &self.balance {
            if self.limit.retire() {
                let open = self
                    .counters
                    .by_request
                    .open_connections
                    .load(Ordering::Relaxed);
                b.retire(open as usize);
                // The loop tells the streams' connections (`LoopState::run_tasks`) at its next
                // turn: now, though the call that retired it runs on a pool thread.
                let _ = self.waker.wake();
            }
        }
    }

    /// Whether the worker retired: it accepts no connection more.
    #[inline]
    pub fn retired(&self) -> bool {
        self.limit.retired()
    }

    /// The health path fails (503) from the moment a stop is asked for, drain included.
    pub fn health_failing(&self) -> bool {
        self.shutdown_state() != Shutdown::Running
    }

    /// What is left of the graceful timeout (nothing for an immediate stop).
    pub fn graceful_left(&self) -> Duration {
        if self.shutdown_state() == Shutdown::Immediate {
            return Duration::ZERO;
        }
        let started = self
            .shutdown_at
            .lock()
            .unwrap()
            .unwrap_or_else(Instant::now);
        self.settings
            .config
            .graceful_timeout
            .saturating_sub(started.elapsed())
    }

    pub fn shutdown_state(&self) -> Shutdown {
        Shutdown::from_u8(self.shutdown.load(Ordering::Relaxed))
    }
}

impl tls_writer::Owner for LoopCtx {
    fn written(&self, conn: &mut Conn) {
        if let Some(p) = conn.pending_log.take() {
            p.finish(
                self.settings.access_log.as_deref(),
                &self.counters.by_request,
                false,
            );
        }
    }

    fn give_back(&self, conn: Box<Conn>) {
        self.return_conn(conn);
    }
}

/// Settings the loop needs, from the config; the loop's context holds the one copy.
pub struct LoopSettings {
    /// The one frozen config, shared with the bridge: every setting the loop reads (timeouts,
    /// limits, the Server header, `--health-path`, `--drain-delay`, who may send a PROXY
    /// header, `--log-level debug`) is read from it, never copied.
    pub config: Arc<Config>,
    /// `--static` mounts, served by the loop itself (opened from the config's mounts).
    pub statics: Option<StaticFiles>,
    /// The access log, shared by the loop (static answers) and the bridge (app answers).
    pub access_log: Option<Arc<AccessLog>>,
    /// What each listener speaks, by listener index.
    pub wires: Vec<Wire>,
    /// The TLS configuration of each TLS listener (`--bind https:`, or every listener with
    /// `--certfile`), by listener index; `None`: plaintext. Replaced by a certificate reload.
    pub tls: super::listener_tls::ListenerTls,
    /// HTTP/2 (`--http2` not off): where a connection that opens with the preface, or agreed
    /// on `h2` by ALPN, is handed over (`io::h2`).
    pub h2: Option<Arc<crate::io::h2::H2Hub>>,
    /// HTTP/3 (`--http3`, with a TLS listener): the UDP sockets and endpoints (`io::h3`).
    pub h3: Option<Arc<crate::io::h3::H3Hub>>,
}

impl LoopSettings {
    /// Who may send a PROXY protocol header (None: nobody): `--proxy-allow-ips`, else
    /// `--forwarded-allow-ips`.
    #[inline]
    pub fn proxy_trust(&self) -> Option<&TrustList> {
        self.config
            .proxy_trust
            .as_ref()
            .or(self.config.forwarding.as_ref().map(|(t, _)| t))
    }
}
