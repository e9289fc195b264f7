//! The event loop: one epoll instance (through mio) that accepts connections, reads request
//! heads, buffers small bodies, finishes writes the app threads left behind, and enforces the
//! header, keep-alive and write timeouts.
//!
//! It never calls Python. It hands out [`Call`]s (an HTTP/1.1 request's [`Work`]: a connection
//! with a parsed request head; or an HTTP/2 stream's call, queued by its connection's task)
//! from [`LoopState::next_work`]; the caller decides whether to run the app right there
//! (inline) or on a pool thread. All of the loop's state lives in one `LoopState` value so that it can be moved
//! to another thread when the thread driving it gets stuck in an app call (see
//! `server::scheduler`).
//!
//! Sockets are registered at most once, edge-triggered, for both read and write readiness, so a request
//! costs no `epoll_ctl` calls. Registration is lazy: a new connection is read at once (the
//! request usually arrives with the handshake), and registered only when the loop is about to
//! wait while it is still open. A connection answered and closed within its first look (HTTP/1.0,
//! `Connection: close`) costs no `epoll_ctl` and no `epoll_wait` round of its own.
//!
//! The loop's state is [`LoopState`] (here, with the wait-and-dispatch round, `next_work`);
//! its other jobs are in the submodules, each an `impl LoopState` block over the same state:
//! - `accept`: accepting from the listening sockets (`io::listen`), TCP_NODELAY inheritance;
//! - `ctx`: what the loop shares with app threads ([`LoopCtx`]: settings, counters, the return
//!   and flush queues, shutdown requests) and the [`Call`]s it hands out;
//! - `driver`: one connection's turn: finishing output, reading, parsing, handing a request
//!   out, and taking the connection back after it; `before_head`: what comes before a
//!   connection's first head (a metrics scrape, a PROXY header, the HTTP/2 preface);
//!   `own_answers`: the health path and static files, answered by the loop itself;
//! - `events`: the wait for the kernel's events (a short spin first, `spin`), the events sorted
//!   by token, and the HTTP/2 and HTTP/3 tasks polled;
//! - `closing`: protocol errors, closing and lingering, timeouts (the sweep), shutdown;
//! - `metrics`: the `--metrics-bind` listener, a listener of the loop's own whose pages the
//!   server hands down ([`MetricsPages`]).
//!
//! Accepting takes one connection per round and tries again once the ready queue is empty: the
//! `accept4` that finds the backlog empty (needed with edge-triggered epoll) comes after the
//! response, not before the request is read.
//!
//! A connection with a large answer writes `FAIR_SHARE` per turn, then waits for the others
//! and for a zero-timeout look at the kernel's events (`gave_turn`): a client reading as fast
//! as the loop writes never fills the socket, and without that look a request on another
//! connection waited for the whole answer (a 64 MiB body: 11 ms at the median).
//!
//! TLS handshakes are bounded the same way: at most [`HANDSHAKES_PER_TURN`] handshake steps
//! (a ClientHello answered: a key exchange and a signature, about 0.36 ms of CPU) between two
//! looks at the kernel's events; a handshaking connection past the budget waits in
//! `handshakes_waiting` for the next turn, after what has just arrived. During a flood of new
//! connections the kept ones are served every turn instead of behind every ClientHello that
//! came at once (benchmarks/results/, the TLS handshake flood).

use std::collections::{HashMap, VecDeque};
use std::io::{self, ErrorKind};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU8};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token, Waker};
use slab::Slab;
use sluicegate_proto::{BodyFraming, Limits, ProtoError, RequestHead};

use super::balance::Balance;
use super::conn::{AfterOutput, Conn, Phase};
use super::out_queue::FAIR_SHARE;
use super::read_buf::ReadBuf;
use super::shared_out::{FlushResult, SharedOut};
use super::stream::Stream;
use crate::peer::Peer;

mod accept;
mod before_head;
mod closing;
mod ctx;
mod driver;
mod events;
mod h2_view;
mod listener_tls;
mod metrics;
mod own_answers;
mod pace;
mod pages;
mod spin;

pub use crate::io::listen::{ListenSocket, Nodelay};
pub use ctx::{Call, Counters, LoopCtx, LoopSettings, Shutdown, Work};
pub use listener_tls::ListenerTls;
pub use pages::{MetricsPages, PageJob};

/// Whether `fd` has something to read now (a zero-timeout `poll`, which consumes nothing): events
/// held by an epoll descriptor, a connection waiting in a listener's backlog.
fn readable_now(fd: std::os::fd::RawFd) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `pfd` is a valid pollfd for the duration of the call; nfds is 1; timeout 0.
    unsafe { libc::poll(&mut pfd, 1, 0) > 0 }
}

/// Token of the waker (returned connections, shutdown).
const WAKER: Token = Token(usize::MAX);
/// HTTP/2 connections' sockets are registered under this plus their task's key
/// (`io::streams::tasks`), far above the connections' slab keys and below the listeners'.
const H2_BASE: usize = 1 << 40;
/// HTTP/3's UDP sockets are registered under this plus their index (`io::h3`).
const H3_BASE: usize = 2 * H2_BASE;
/// Listener tokens count down from here (the metrics listener's is above them:
/// `pages::METRICS_LISTENER_TOKEN`); connection tokens are slab keys (far below).
const LISTENER_BASE: usize = usize::MAX - 2;

/// A request body up to this size is buffered by the loop before the app is called, so that an
/// app called inline never waits on the socket. Larger or chunked bodies go to a pool thread,
/// which streams them to the app.
pub const INLINE_BODY_MAX: u64 = 64 * 1024;

/// Read buffers kept for reuse (the rest are freed, so idle memory stays small): 1 MiB.
const BUFFER_POOL_MAX: usize = 64;

/// Most output `next_ready_call` lets a connection write while its thread holds the GIL: a
/// larger answer (a 64 MiB body is 10 ms of copying) waits for `next_work`, which writes it
/// detached, so that app threads do not wait for the copy. (An app thread's own writes
/// release the GIL from the same size: `wsgi::sender`'s `DETACH_WRITE_MIN`.)
const ATTACHED_WRITE_MAX: u64 = 64 * 1024;

/// TLS handshake steps (a read of a handshaking connection's input) per turn of the loop, at
/// most: with ECDSA P-256, about 0.36 ms of CPU for the step that answers a ClientHello, so a
/// kept connection's request waits about 1.5 ms behind handshakes at most, whatever the flood.
/// Handshakes still complete at 4 per turn: a turn is short when only handshakes wait.
const HANDSHAKES_PER_TURN: usize = 4;

/// What the loop knows about a connection's input when it looks at it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ReadHint {
    /// Nothing new: only parse what is buffered.
    None,
    /// Readable: read until a short read (which proves the socket empty: new data raises a
    /// new edge).
    Readable,
    /// The peer closed, or readiness may have been missed while the connection was away: read
    /// until EAGAIN or end of stream (a short read followed by a FIN raises no further edge).
    Drain,
}

/// What parsing the buffered bytes of a connection led to.
enum Next {
    /// A request for the app.
    Work(Work),
    /// The connection opened with the HTTP/2 preface: it leaves the loop's table for a task
    /// of the loop (`io::h2`).
    Http2,
    /// Not a whole request yet.
    NeedMore,
    /// A request the loop answered itself (static file); its answer is in the output queue.
    Answered,
}

/// A connection slot: the connection itself, or a note that an app thread has it.
enum Slot {
    Here(Box<Conn>),
    /// Taken by an app thread. `woke` records readiness seen meanwhile, so the loop reads when
    /// the connection comes back (edge-triggered epoll will not report it again).
    Away {
        /// The connection's own flag (`Conn::woke_away`), which its app thread reads too.
        woke: Arc<AtomicBool>,
        /// Whether the socket is in the epoll set (the loop may register it while away, to
        /// write a streaming response).
        registered: bool,
    },
}

/// Everything the event loop owns. Moved, whole, between threads on a takeover.
pub struct LoopState {
    /// The loop's shared context, for what a closing connection still has to account for (its
    /// access log line, its metrics).
    shared: Arc<LoopCtx>,
    poll: Poll,
    events: Events,
    listeners: Vec<Option<ListenSocket>>,
    conns: Slab<Slot>,
    /// Connections to look at: (token, how to read).
    ready: VecDeque<(usize, ReadHint)>,
    /// Connections that wrote their `FAIR_SHARE` and still have output the socket would take:
    /// looked at again after the loop has asked the kernel for new events (a zero-timeout
    /// wait), so that a request arriving on another connection is read after one turn, not
    /// after the whole of a large response.
    gave_turn: Vec<usize>,
    /// Handshake steps left in this turn of the loop ([`HANDSHAKES_PER_TURN`] after each
    /// look at the kernel's events).
    handshake_budget: usize,
    /// Handshaking TLS connections with input, past this turn's budget: looked at again,
    /// readable, after the next look at the kernel's events.
    handshakes_waiting: Vec<usize>,
    buffers: Vec<ReadBuf>,
    next_sweep: Instant,
    sweep_every: Duration,
    /// Accepting stopped because of EMFILE/ENFILE: retry at the next sweep.
    accept_paused: bool,
    /// Accept attempts refused for lack of descriptors since the episode began (`None`: no
    /// episode). An episode is logged once when it begins and once when it ends, however many
    /// sweeps retry in between.
    fd_exhausted: Option<u64>,
    /// Listeners that gave a connection in this round: accept from them again once the ready
    /// queue is empty.
    accept_again: Vec<usize>,
    /// Connections that may still need registering before the loop waits (see the module doc).
    unregistered: Vec<usize>,
    /// An empty list with room, swapped in for `accept_again` or `unregistered` while the
    /// taken one is gone through (and for the listeners an event round reports): a list taken
    /// with `mem::take` left a new one that allocated at its first push, two allocations and
    /// frees of each new connection.
    spare: Vec<usize>,
    /// Shared output queues of away connections that the loop is writing.
    flushing: HashMap<usize, Arc<SharedOut>>,
    shutdown_started: Option<Instant>,
    /// Listeners whose connection was left to other workers: look again at `deferred_until`.
    deferred: Vec<usize>,
    deferred_until: Option<Instant>,
    /// Looks so far at the connection(s) left to other workers.
    deferred_looks: u32,
    /// `--metrics-bind`: its socket and the pages it serves (`metrics.rs`); dropped, with its
    /// unix socket's file, when the stop closes the listeners.
    metrics: Option<(
        crate::io::metrics_socket::MetricsSocket,
        Arc<dyn MetricsPages>,
    )>,
    /// Metrics connections away while their page is rendered elsewhere: not requests, so a
    /// stop that ends with them away does not count them as cut.
    pages_away: Vec<usize>,
    /// HTTP/2 and HTTP/3 connections' tasks, polled by the loop (`io::streams::tasks`).
    tasks: Option<crate::io::streams::Tasks>,
    /// How long to look for events before sleeping (`spin`).
    spin: spin::Spin,
    /// Sleeps that keep the process's CPU below a CPU quota (`pace`).
    pace: pace::Pace,
}

impl LoopState {
    /// Build the loop around the listening sockets. Returns the loop state and the context to
    /// share with app threads.
    pub fn new(
        listeners: Vec<ListenSocket>,
        settings: LoopSettings,
        balance: Option<Balance>,
    ) -> io::Result<(Box<LoopState>, Arc<LoopCtx>)> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        let mut ls = Vec::with_capacity(listeners.len());
        for (i, mut l) in listeners.into_iter().enumerate() {
            let token = Token(LISTENER_BASE - i);
            match &mut l {
                ListenSocket::Tcp(t, _) => {
                    poll.registry().register(t, token, Interest::READABLE)?
                }
                ListenSocket::Unix(u) => poll.registry().register(u, token, Interest::READABLE)?,
            }
            ls.push(Some(l));
        }
        let shortest = settings
            .config
            .header_timeout
            .min(settings.config.keepalive_timeout)
            .min(settings.config.write_timeout)
            .min(settings.config.read_timeout);
        // Sweep often enough that a timeout fires within a quarter of its length (bounded to
        // [50 ms, 1 s]); a sweep over 10,000 connections costs tens of microseconds.
        let sweep_every = (shortest / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
        let spin = spin::Spin::new(settings.config.spin);
        let pace = pace::Pace::new(settings.config.pace);
        let tasks = (settings.h2.is_some() || settings.h3.is_some())
            .then(|| crate::io::streams::Tasks::new(Arc::clone(&waker)));
        let ctx = Arc::new(LoopCtx {
            settings,
            waker,
            registry: poll.registry().try_clone()?,
            returns: Mutex::new(Vec::new()),
            flush_requests: Mutex::new(Vec::new()),
            shutdown: AtomicU8::new(Shutdown::Running as u8),
            shutdown_at: Mutex::new(None),
            counters: Counters::default(),
            balance,
            limit: Default::default(),
            tls_writer: Default::default(),
        });
        let st = Box::new(LoopState {
            poll,
            events: Events::with_capacity(1024),
            listeners: ls,
            conns: Slab::with_capacity(1024),
            ready: VecDeque::with_capacity(1024),
            gave_turn: Vec::new(),
            handshake_budget: HANDSHAKES_PER_TURN,
            handshakes_waiting: Vec::new(),
            buffers: Vec::new(),
            next_sweep: Instant::now() + sweep_every,
            sweep_every,
            accept_paused: false,
            shared: Arc::clone(&ctx),
            fd_exhausted: None,
            accept_again: Vec::new(),
            unregistered: Vec::new(),
            spare: Vec::new(),
            flushing: HashMap::new(),
            shutdown_started: None,
            deferred: Vec::new(),
            deferred_until: None,
            deferred_looks: 0,
            metrics: None,
            pages_away: Vec::new(),
            tasks,
            spin,
            pace,
        });
        if let Some(b) = &ctx.balance {
            b.publish(0);
        }
        Ok((st, ctx))
    }

    /// The connections this process holds, for the workers' balance (`io::balance`): the
    /// loop's table's, and the HTTP/2 connections its tasks serve.
    fn held(&self) -> usize {
        let h2 = self.shared.settings.h2.as_ref();
        let h3 = self.shared.settings.h3.as_ref();
        let relaxed = std::sync::atomic::Ordering::Relaxed;
        self.conns.len()
            + h2.map_or(0, |hub| hub.open.load(relaxed))
            + h3.map_or(0, |hub| hub.open.load(relaxed))
    }

    /// Is other work waiting while an inline call holds this (parked) state: connections to
    /// look at, listeners to accept from again, or events the kernel has ready (new requests,
    /// connections coming back, streaming responses to flush)? Asked by the watchdog about a
    /// call that keeps computing; one `poll` of the epoll descriptor, which consumes nothing.
    pub fn has_waiting_work(&self) -> bool {
        if !self.ready.is_empty()
            || !self.accept_again.is_empty()
            || !self.gave_turn.is_empty()
            || !self.handshakes_waiting.is_empty()
        {
            return true;
        }
        readable_now(self.poll.as_raw_fd())
    }

    /// Run the loop until a call is ready for the app (a request, or a stream its
    /// connection's task queued), or until shutdown has finished (`None`). Queued streams are
    /// handed out after the tasks' poll, so that the answers of the calls run since the last
    /// poll are written first.
    pub fn next_work(&mut self, ctx: &LoopCtx) -> Option<Call> {
        loop {
            while let Some((token, hint)) = self.ready.pop_front() {
                if let Some(work) = self.drive(token, hint, ctx) {
                    return Some(Call::Request(work));
                }
            }
            self.take_returns(ctx);
            self.take_flush_requests(ctx);
            if !self.ready.is_empty() {
                continue;
            }
            let tasks_woken = self.run_tasks(ctx);
            if let Some(call) = queued_stream(ctx) {
                return Some(Call::Stream(call));
            }
            if !self.accept_again.is_empty() {
                self.accept_listed_again(ctx);
                if !self.ready.is_empty() {
                    continue;
                }
            }
            self.register_pending();
            // --drain-delay: serving on with a failing health path until it has passed.
            let drain_until = match ctx.shutdown_state() {
                Shutdown::Draining => ctx.drain_step(Instant::now()),
                _ => None,
            };
            if ctx.shutting_down() && self.shutdown_step(ctx) {
                return None;
            }
            let now = Instant::now();
            if now >= self.next_sweep {
                self.sweep(now, ctx);
                self.next_sweep = now + self.sweep_every;
                if !self.ready.is_empty() {
                    continue;
                }
            }
            if self.deferred_until.is_some_and(|t| now >= t) {
                self.look_again_at_deferred(ctx);
                if !self.ready.is_empty() {
                    continue;
                }
            }
            let task_due = self.tasks.as_ref().and_then(|t| t.next_due());
            let wake_at = [self.deferred_until, drain_until, task_due]
                .into_iter()
                .flatten()
                .fold(self.next_sweep, Instant::min);
            let busy = tasks_woken || self.tasks.as_ref().is_some_and(|t| t.before_wait());
            let timeout =
                if self.gave_turn.is_empty() && self.handshakes_waiting.is_empty() && !busy {
                    wake_at.saturating_duration_since(now)
                } else {
                    Duration::ZERO
                };
            let polled = self.wait_for_events(timeout);
            if let Some(t) = &self.tasks {
                t.after_wait();
            }
            if let Err(e) = polled {
                if e.kind() != ErrorKind::Interrupted {
                    log_io_error("epoll_wait", &e);
                }
                continue;
            }
            self.take_events(ctx);
        }
    }

    /// Accepts again on the listeners a turn left with connections waiting (`accept_again`).
    fn accept_listed_again(&mut self, ctx: &LoopCtx) {
        let again = std::mem::replace(&mut self.accept_again, std::mem::take(&mut self.spare));
        for &i in &again {
            self.accept(i, ctx);
        }
        self.give_back(again);
    }

    /// Other connections wait for a look (readiness already seen): the loop has work for now.
    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// The next call among what is ready already (the connections known to be ready, then
    /// the streams queued by the tasks' last poll), without waiting for events or doing the
    /// loop's other duties, for a thread that holds the GIL (see `server::drive_loop`). None:
    /// nothing ready now, or the next ready connection has a large answer to write (at least
    /// [`ATTACHED_WRITE_MAX`]), which `next_work` writes without the GIL.
    pub fn next_ready_call(&mut self, ctx: &LoopCtx) -> Option<Call> {
        while let Some(&(token, hint)) = self.ready.front() {
            if let Some(Slot::Here(conn)) = self.conns.get(token) {
                if conn.out.pending() >= ATTACHED_WRITE_MAX {
                    return None;
                }
            }
            self.ready.pop_front();
            if let Some(work) = self.drive(token, hint, ctx) {
                return Some(Call::Request(work));
            }
        }
        queued_stream(ctx).map(Call::Stream)
    }

    /// Streaming responses handed over because their socket is full: try at once (it may have
    /// become writable since), then on every event of their connection.
    fn take_flush_requests(&mut self, ctx: &LoopCtx) {
        let requests = std::mem::take(&mut *ctx.flush_requests.lock().unwrap());
        for (token, out) in requests {
            // The loop writes this away connection on its events: it must be in the epoll set.
            if let Some(Slot::Away {
                registered: registered @ false,
                ..
            }) = self.conns.get_mut(token)
            {
                match self.poll.registry().register(
                    &mut mio::unix::SourceFd(&out.transport.fd()),
                    Token(token),
                    Interest::READABLE | Interest::WRITABLE,
                ) {
                    Ok(()) => *registered = true,
                    Err(e) => log_io_error("epoll_ctl", &e),
                }
            }
            match out.flush() {
                FlushResult::Blocked => {
                    self.flushing.insert(token, out);
                }
                FlushResult::More => {
                    self.flushing.insert(token, out);
                    self.gave_turn.push(token);
                }
                _ => {}
            }
        }
    }

    /// Connections given back by app threads re-enter the table and are looked at once.
    fn take_returns(&mut self, ctx: &LoopCtx) {
        let returned = std::mem::take(&mut *ctx.returns.lock().unwrap());
        for conn in returned {
            // The app thread detached its shared queue (if any) and left the rest in conn.out.
            self.put_back(conn, ctx);
        }
    }

    /// Before waiting: put every connection that is still here and open into the epoll set.
    /// Registering reports readiness that is already there, so nothing that arrived before is
    /// missed. (Away connections are queued again when they come back.)
    fn register_pending(&mut self) {
        let pending = std::mem::replace(&mut self.unregistered, std::mem::take(&mut self.spare));
        for &token in &pending {
            let Some(Slot::Here(conn)) = self.conns.get_mut(token) else {
                continue;
            };
            if conn.registered {
                continue;
            }
            match self.poll.registry().register(
                conn.stream.source(),
                Token(token),
                Interest::READABLE | Interest::WRITABLE,
            ) {
                Ok(()) => conn.registered = true,
                Err(e) => {
                    log_io_error("epoll_ctl", &e);
                    self.close(token);
                }
            }
        }
        self.give_back(pending);
    }

    /// A list gone through becomes the spare again, emptied, with its room (`spare`).
    fn give_back(&mut self, mut used: Vec<usize>) {
        used.clear();
        if used.capacity() > self.spare.capacity() {
            self.spare = used;
        }
    }
}

/// Give an empty read buffer back to the pool.
impl LoopState {
    /// A connection the loop answered itself: its emptied read buffer goes back to the pool
    /// now (see `release_buffer`), and it waits for its next turn to write the answer.
    pub(super) fn requeue_answered(&mut self, token: usize, readable: bool) {
        if let Some(Slot::Here(conn)) = self.conns.get_mut(token) {
            release_buffer(&mut self.buffers, conn);
        }
        let hint = if readable {
            ReadHint::Drain
        } else {
            ReadHint::None
        };
        self.ready.push_back((token, hint));
    }
}

fn release_buffer(pool: &mut Vec<ReadBuf>, conn: &mut Conn) {
    if let Some(b) = conn.rbuf.take_if(|b| b.is_empty()) {
        if b.is_standard() && pool.len() < BUFFER_POOL_MAX {
            pool.push(b);
        }
    }
}

/// Largest read buffer: a full head plus a small body buffered for an inline call.
fn buffer_limit(limits: &Limits) -> usize {
    limits.max_header_bytes + INLINE_BODY_MAX as usize + 1
}

fn log_io_error(what: &str, e: &io::Error) {
    eprintln!("sluicegate: {what}: {e}");
}

/// The next stream a connection's task queued to run (`io::streams::Inline`), if any.
#[inline]
fn queued_stream(ctx: &LoopCtx) -> Option<Box<crate::io::streams::StreamCall>> {
    ctx.settings.h2.as_ref()?.inline.pop()
}
