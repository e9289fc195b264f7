//! The event loop: one epoll instance (through mio) that accepts connections, reads request
//! heads, buffers small bodies, finishes writes the app threads left behind, and enforces the
//! header, keep-alive and write timeouts.
//!
//! It never calls Python. It hands out [`Work`] (a connection with a parsed request head) from
//! [`LoopState::next_work`]; the caller decides whether to run the app right there (inline) or on
//! a pool thread. All of the loop's state lives in one `LoopState` value so that it can be moved
//! to another thread when the thread driving it gets stuck in an app call (see
//! `server::scheduler`).
//!
//! Sockets are registered at most once, edge-triggered, for both read and write readiness, so a request
//! costs no `epoll_ctl` calls. Registration is lazy: a new connection is read at once (the
//! request usually arrives with the handshake), and registered only when the loop is about to
//! wait while it is still open. A connection answered and closed within its first look (HTTP/1.0,
//! `Connection: close`) costs no `epoll_ctl` and no `epoll_wait` round of its own.
//!
//! Accepting takes one connection per round and tries again once the ready queue is empty: the
//! `accept4` that finds the backlog empty (needed with edge-triggered epoll) comes after the
//! response, not before the request is read.

use std::collections::{HashMap, VecDeque};
use std::io::{self, ErrorKind};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mio::net::{TcpListener, UnixListener};
use mio::{Events, Interest, Poll, Token, Waker};
use slab::Slab;
use sluicegate_proto::{BodyFraming, Limits, ProtoError, RequestHead};

use super::conn::{AfterOutput, Conn, Phase};
use super::error_answer::{error_answer, protocol_error_answer, REQUEST_TIMEOUT};
use super::out_queue::FAIR_SHARE;
use super::read_buf::ReadBuf;
use super::shared_out::{FlushResult, SharedOut};
use super::stream::{Peer, Stream};
use crate::access_log::AccessLog;
use crate::static_files::{StaticFiles, StaticOutcome};

/// Token of the waker (returned connections, shutdown).
const WAKER: Token = Token(usize::MAX);
/// Listener tokens count down from here; connection tokens are slab keys (far below).
const LISTENER_BASE: usize = usize::MAX - 1;

/// A request body up to this size is buffered by the loop before the app is called, so that an
/// app called inline never waits on the socket. Larger or chunked bodies go to a pool thread,
/// which streams them to the app.
pub const INLINE_BODY_MAX: u64 = 64 * 1024;

/// How long an error answer waits for the client to close before the socket is closed anyway.
const LINGER: Duration = Duration::from_secs(2);

/// Read buffers kept for reuse (the rest are freed, so idle memory stays small): 1 MiB.
const BUFFER_POOL_MAX: usize = 64;

/// A kind of listening socket handed over by the Python front.
pub enum ListenSocket {
    Tcp(TcpListener, Nodelay),
    Unix(UnixListener),
}

/// Where an accepted TCP connection gets TCP_NODELAY from. Linux copies the option from the
/// listener to every connection it accepts, which saves a `setsockopt` per connection (one
/// syscall of the six a closed connection costs). The first connection is checked once, and
/// should the option not be there, every connection sets it itself.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Nodelay {
    /// Set on the listener; not yet seen on an accepted connection.
    Unchecked,
    /// Accepted connections have it from the listener.
    Inherited,
    /// Each accepted connection sets it.
    PerConnection,
}

impl ListenSocket {
    /// Take ownership of a bound, listening, non-blocking socket.
    pub fn from_fd(fd: RawFd, unix: bool) -> ListenSocket {
        if unix {
            // SAFETY: the Python front detached this fd from its socket object and gives us
            // sole ownership of an open, listening AF_UNIX socket.
            let l = unsafe { std::os::unix::net::UnixListener::from_raw_fd(fd) };
            let _ = l.set_nonblocking(true);
            ListenSocket::Unix(UnixListener::from_std(l))
        } else {
            // SAFETY: as above, for an open, listening TCP socket.
            let l = unsafe { std::net::TcpListener::from_raw_fd(fd) };
            let _ = l.set_nonblocking(true);
            let nodelay = if set_listener_nodelay(l.as_raw_fd()) {
                Nodelay::Unchecked
            } else {
                Nodelay::PerConnection
            };
            ListenSocket::Tcp(TcpListener::from_std(l), nodelay)
        }
    }
}

/// TCP_NODELAY on a listening socket, for its connections to inherit; false if refused.
fn set_listener_nodelay(fd: RawFd) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: setsockopt on a descriptor we own, reading one c_int that lives for the call.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            &on as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

/// A request ready for the app: the connection (now owned by whoever runs the request) and its
/// parsed head. The head's bytes were consumed from the connection's buffer; the body, if any,
/// is what follows in the buffer and on the socket.
pub struct Work {
    pub conn: Box<Conn>,
    pub head: RequestHead,
    /// The whole body (if any) is already in the connection's buffer: the app can be called
    /// without ever waiting on the socket.
    pub body_buffered: bool,
}

/// Counters shared by the loop and the app threads (diagnostics and tests).
#[derive(Default)]
pub struct Counters {
    pub accepted: AtomicU64,
    pub requests: AtomicU64,
    pub protocol_errors: AtomicU64,
    pub timeouts: AtomicU64,
}

/// How far the server is in stopping. Only moves forward (`Running < Graceful < Immediate`):
/// a graceful stop can become immediate, never the reverse. Stored in an `AtomicU8` as its
/// discriminant, so any thread (a signal handler's) can request it without a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Shutdown {
    Running = 0,
    /// Stop accepting; finish in-flight requests within the graceful timeout.
    Graceful = 1,
    /// Stop now: in-flight requests are cut.
    Immediate = 2,
}

impl Shutdown {
    fn from_u8(v: u8) -> Shutdown {
        match v {
            0 => Shutdown::Running,
            1 => Shutdown::Graceful,
            _ => Shutdown::Immediate,
        }
    }
}

/// What the loop shares with the threads that take connections away from it.
pub struct LoopCtx {
    /// What the config says (the one copy).
    pub settings: LoopSettings,
    waker: Waker,
    // Boxed on purpose: a connection moves between threads as one pointer, never copied.
    #[allow(clippy::vec_box)]
    returns: Mutex<Vec<Box<Conn>>>,
    /// Streaming responses whose socket is full: the loop writes them as it becomes writable.
    flush_requests: Mutex<Vec<(usize, Arc<SharedOut>)>>,
    shutdown: AtomicU8,
    pub counters: Counters,
}

impl LoopCtx {
    /// Give a connection back to the loop after a request (keep-alive, pending output, or to be
    /// closed). Wakes the loop only when the queue was empty: one wake-up serves a batch.
    pub fn return_conn(&self, conn: Box<Conn>) {
        let was_empty = {
            let mut q = self.returns.lock().unwrap();
            q.push(conn);
            q.len() == 1
        };
        if was_empty {
            let _ = self.waker.wake();
        }
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
    pub fn request_shutdown(&self, how: Shutdown) {
        self.shutdown.fetch_max(how as u8, Ordering::SeqCst);
        let _ = self.waker.wake();
    }

    pub fn shutting_down(&self) -> bool {
        self.shutdown_state() != Shutdown::Running
    }

    pub fn shutdown_state(&self) -> Shutdown {
        Shutdown::from_u8(self.shutdown.load(Ordering::Relaxed))
    }
}

/// Settings the loop needs, from the config; the loop's context holds the one copy.
pub struct LoopSettings {
    /// `--static` mounts, served by the loop itself.
    pub statics: Option<StaticFiles>,
    /// The access log, shared by the loop (static answers) and the bridge (app answers).
    pub access_log: Option<AccessLog>,
    pub limits: Limits,
    pub header_timeout: Duration,
    pub keepalive_timeout: Duration,
    pub read_timeout: Duration,
    pub write_timeout: Duration,
    pub graceful_timeout: Duration,
    pub server_header: Vec<u8>,
}

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
        woke: bool,
        /// Whether the socket is in the epoll set (the loop may register it while away, to
        /// write a streaming response).
        registered: bool,
    },
}

/// Everything the event loop owns. Moved, whole, between threads on a takeover.
pub struct LoopState {
    poll: Poll,
    events: Events,
    listeners: Vec<Option<ListenSocket>>,
    conns: Slab<Slot>,
    /// Connections to look at: (token, how to read).
    ready: VecDeque<(usize, ReadHint)>,
    buffers: Vec<ReadBuf>,
    next_sweep: Instant,
    sweep_every: Duration,
    /// Accepting stopped because of EMFILE/ENFILE: retry at the next sweep.
    accept_paused: bool,
    /// Listeners that gave a connection in this round: accept from them again once the ready
    /// queue is empty.
    accept_again: Vec<usize>,
    /// Connections that may still need registering before the loop waits (see the module doc).
    unregistered: Vec<usize>,
    /// Shared output queues of away connections that the loop is writing.
    flushing: HashMap<usize, Arc<SharedOut>>,
    shutdown_started: Option<Instant>,
}

impl LoopState {
    /// Build the loop around the listening sockets. Returns the loop state and the context to
    /// share with app threads.
    pub fn new(
        listeners: Vec<ListenSocket>,
        settings: LoopSettings,
    ) -> io::Result<(Box<LoopState>, Arc<LoopCtx>)> {
        let poll = Poll::new()?;
        let waker = Waker::new(poll.registry(), WAKER)?;
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
            .header_timeout
            .min(settings.keepalive_timeout)
            .min(settings.write_timeout)
            .min(settings.read_timeout);
        // Sweep often enough that a timeout fires within a quarter of its length (bounded to
        // [50 ms, 1 s]); a sweep over 10,000 connections costs tens of microseconds.
        let sweep_every = (shortest / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
        let ctx = Arc::new(LoopCtx {
            settings,
            waker,
            returns: Mutex::new(Vec::new()),
            flush_requests: Mutex::new(Vec::new()),
            shutdown: AtomicU8::new(Shutdown::Running as u8),
            counters: Counters::default(),
        });
        let st = Box::new(LoopState {
            poll,
            events: Events::with_capacity(1024),
            listeners: ls,
            conns: Slab::with_capacity(1024),
            ready: VecDeque::with_capacity(1024),
            buffers: Vec::new(),
            next_sweep: Instant::now() + sweep_every,
            sweep_every,
            accept_paused: false,
            accept_again: Vec::new(),
            unregistered: Vec::new(),
            flushing: HashMap::new(),
            shutdown_started: None,
        });
        Ok((st, ctx))
    }

    /// Run the loop until a request is ready for the app, or until shutdown has finished
    /// (`None`).
    pub fn next_work(&mut self, ctx: &LoopCtx) -> Option<Work> {
        loop {
            while let Some((token, hint)) = self.ready.pop_front() {
                if let Some(work) = self.drive(token, hint, ctx) {
                    return Some(work);
                }
            }
            self.take_returns(ctx);
            self.take_flush_requests(ctx);
            if !self.ready.is_empty() {
                continue;
            }
            if !self.accept_again.is_empty() {
                for i in std::mem::take(&mut self.accept_again) {
                    self.accept(i, ctx);
                }
                if !self.ready.is_empty() {
                    continue;
                }
            }
            self.register_pending();
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
            let timeout = self.next_sweep.saturating_duration_since(Instant::now());
            if let Err(e) = self.poll.poll(&mut self.events, Some(timeout)) {
                if e.kind() != ErrorKind::Interrupted {
                    log_io_error("epoll_wait", &e);
                }
                continue;
            }
            let mut accept_from = Vec::new();
            for ev in self.events.iter() {
                let t = ev.token();
                if t == WAKER {
                    continue;
                }
                if t.0 > LISTENER_BASE - self.listeners.len() && t.0 <= LISTENER_BASE {
                    accept_from.push(LISTENER_BASE - t.0);
                    continue;
                }
                let hint = if ev.is_read_closed() || ev.is_error() {
                    ReadHint::Drain
                } else if ev.is_readable() {
                    ReadHint::Readable
                } else {
                    ReadHint::None
                };
                self.ready.push_back((t.0, hint));
            }
            for i in accept_from {
                self.accept(i, ctx);
            }
        }
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
                    &mut mio::unix::SourceFd(&out.fd),
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
                    self.ready.push_back((token, ReadHint::None));
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

    /// A connection is back from the app (returned, or after an inline call): decide its next
    /// phase and queue it for a look.
    pub fn after_request(&mut self, token: usize, readable: bool, ctx: &LoopCtx) {
        let Some(Slot::Here(conn)) = self.conns.get_mut(token) else {
            return;
        };
        if ctx.shutting_down() && conn.out.is_empty() {
            // No new requests during shutdown: the bridge already answered with Connection:
            // close; a connection still marked keep-alive closes here.
            conn.after_output.close();
        }
        conn.phase = Phase::Idle;
        conn.deadline = Some(Instant::now() + ctx.settings.keepalive_timeout);
        if !conn.registered {
            self.unregistered.push(token);
        }
        // An empty buffer goes back to the pool now, not when the connection's turn in the ready
        // queue comes: in a burst, 1,024 connections each holding 16 KiB until then cost 16 MiB
        // (measured with 10,000 connections opening at once).
        release_buffer(&mut self.buffers, conn);
        let hint = if readable {
            ReadHint::Drain
        } else {
            ReadHint::None
        };
        self.ready.push_back((token, hint));
    }

    /// Put back a connection that came back to the loop (inline, or through the return queue):
    /// it takes over what the loop noted while it was away.
    pub fn put_back(&mut self, mut conn: Box<Conn>, ctx: &LoopCtx) {
        let token = conn.token;
        let (woke, registered) = match self.conns.get(token) {
            Some(Slot::Away { woke, registered }) => (*woke, *registered),
            _ => (false, conn.registered),
        };
        conn.registered = registered;
        self.flushing.remove(&token);
        self.conns[token] = Slot::Here(conn);
        self.after_request(token, woke, ctx);
    }

    /// Accept one connection from a listener and look at it at once (its request is usually
    /// there already); if one came, the listener is tried again once the ready queue is empty.
    fn accept(&mut self, index: usize, ctx: &LoopCtx) {
        loop {
            if ctx.shutting_down() {
                return;
            }
            let res = match &mut self.listeners[index] {
                Some(ListenSocket::Tcp(l, nodelay)) => l.accept().map(|(s, a)| {
                    match *nodelay {
                        Nodelay::Inherited => {}
                        Nodelay::Unchecked => {
                            *nodelay = if s.nodelay().unwrap_or(false) {
                                Nodelay::Inherited
                            } else {
                                let _ = s.set_nodelay(true);
                                Nodelay::PerConnection
                            };
                        }
                        Nodelay::PerConnection => {
                            let _ = s.set_nodelay(true);
                        }
                    }
                    (Stream::Tcp(s), Peer::Ip(a))
                }),
                Some(ListenSocket::Unix(l)) => {
                    l.accept().map(|(s, _)| (Stream::Unix(s), Peer::Unix))
                }
                None => return,
            };
            match res {
                Ok((stream, peer)) => {
                    let entry = self.conns.vacant_entry();
                    let token = entry.key();
                    let mut conn = Box::new(Conn::new(stream, token, index, peer));
                    conn.deadline = Some(Instant::now() + ctx.settings.header_timeout);
                    entry.insert(Slot::Here(conn));
                    ctx.counters.accepted.fetch_add(1, Ordering::Relaxed);
                    self.unregistered.push(token);
                    self.ready.push_back((token, ReadHint::Readable));
                    self.accept_again.push(index);
                    return;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    if matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) {
                        // Out of descriptors: stop accepting until the next sweep instead of
                        // spinning; queued clients wait in the backlog.
                        self.accept_paused = true;
                        log_io_error("accept (out of file descriptors)", &e);
                        return;
                    }
                    // ECONNABORTED and friends concern one client only.
                    continue;
                }
            }
        }
    }

    /// Before waiting: put every connection that is still here and open into the epoll set.
    /// Registering reports readiness that is already there, so nothing that arrived before is
    /// missed. (Away connections are queued again when they come back.)
    fn register_pending(&mut self) {
        for token in std::mem::take(&mut self.unregistered) {
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
    }

    /// Look at one connection: finish pending output, then read and parse. Returns work when a
    /// request is ready.
    fn drive(&mut self, token: usize, hint: ReadHint, ctx: &LoopCtx) -> Option<Work> {
        let mut readable = hint != ReadHint::None;
        let drain = hint == ReadHint::Drain;
        let conn = match self.conns.get_mut(token) {
            Some(Slot::Here(c)) => c,
            Some(Slot::Away { woke, .. }) => {
                *woke |= readable;
                // Its app thread may be streaming to a full socket: write what it queued.
                if let Some(out) = self.flushing.get(&token) {
                    match out.flush() {
                        FlushResult::Blocked => {}
                        FlushResult::More => self.ready.push_back((token, ReadHint::None)),
                        _ => {
                            self.flushing.remove(&token);
                        }
                    }
                }
                return None;
            }
            None => return None,
        };

        // 1. Output first: a connection with unwritten output reads nothing new.
        if !conn.out.is_empty() {
            let mut written = 0;
            loop {
                match conn.out.write_to(&conn.stream) {
                    Ok(_) if conn.out.is_empty() => break,
                    Ok(n) => {
                        conn.deadline = Some(Instant::now() + ctx.settings.write_timeout);
                        written += n as u64;
                        if written >= FAIR_SHARE {
                            // The socket still takes more, but other connections get their
                            // turn first (no edge will come: queue this one again).
                            self.ready.push_back((token, ReadHint::None));
                            return None;
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        if !matches!(conn.phase, Phase::Writing) {
                            conn.phase = Phase::Writing;
                            conn.deadline = Some(Instant::now() + ctx.settings.write_timeout);
                        }
                        return None;
                    }
                    Err(_) => {
                        self.close(token);
                        return None;
                    }
                }
            }
            // All written: idle until the next request (partial writes on the way had set the
            // write timeout, which must not outlive them).
            conn.phase = Phase::Idle;
            conn.deadline = Some(Instant::now() + ctx.settings.keepalive_timeout);
        }
        if conn.after_output.closes() && !matches!(conn.phase, Phase::Lingering) {
            self.finish_close(token);
            return None;
        }
        if matches!(conn.phase, Phase::Lingering) {
            self.discard_input(token);
            return None;
        }

        // 2. Parse what is buffered (pipelined requests), reading more while the socket has it.
        loop {
            let conn = match self.conns.get_mut(token) {
                Some(Slot::Here(c)) => c,
                _ => return None,
            };
            if conn.rbuf.as_ref().is_some_and(|b| !b.is_empty()) {
                match self.try_request(token, ctx) {
                    Ok(Next::Work(work)) => return Some(work),
                    Ok(Next::NeedMore) => {}
                    Ok(Next::Answered) => {
                        // Answered here (a static file): write it before parsing what follows,
                        // so pipelined answers keep their order.
                        let hint = if readable {
                            ReadHint::Drain
                        } else {
                            ReadHint::None
                        };
                        self.ready.push_back((token, hint));
                        return None;
                    }
                    Err(e) => {
                        self.protocol_error(token, e, ctx);
                        return None;
                    }
                }
            }
            if !readable {
                break;
            }
            let conn = match self.conns.get_mut(token) {
                Some(Slot::Here(c)) => c,
                _ => return None,
            };
            if conn.rbuf.is_none() {
                conn.rbuf = Some(self.buffers.pop().unwrap_or_default());
            }
            let limit = buffer_limit(&ctx.settings.limits);
            let buf = conn.rbuf.as_mut().unwrap();
            let spare = buf.spare(limit);
            if spare.is_empty() {
                // Full at the limit: the head parser reported no error, so this is a body
                // being buffered that cannot be (cannot happen: bounded by INLINE_BODY_MAX).
                self.protocol_error(token, ProtoError::HeadersTooLarge, ctx);
                return None;
            }
            let want = spare.len();
            match conn.stream.read(spare) {
                Ok(0) => {
                    if matches!(conn.phase, Phase::ReadingBody(_)) {
                        // The client stopped sending mid-body. The app still gets the request
                        // and its wsgi.input raises ClientDisconnected at the cut, so a
                        // truncated body can never pass for a complete one.
                        let Phase::ReadingBody(head) =
                            std::mem::replace(&mut conn.phase, Phase::Idle)
                        else {
                            unreachable!()
                        };
                        return Some(self.take_work(token, *head, false));
                    }
                    // Client closed. Whatever was pending is dropped with the connection.
                    self.close(token);
                    return None;
                }
                Ok(n) => {
                    buf.commit(n);
                    // A short read emptied the socket: edge-triggered epoll reports new data.
                    readable = n == want || drain;
                    match conn.phase {
                        Phase::Idle => {
                            conn.phase = Phase::ReadingHead;
                            conn.deadline = Some(Instant::now() + ctx.settings.header_timeout);
                        }
                        // Body progress renews the read timeout.
                        Phase::ReadingBody(_) => {
                            conn.deadline = Some(Instant::now() + ctx.settings.read_timeout);
                        }
                        _ => {}
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => readable = false,
                Err(_) => {
                    self.close(token);
                    return None;
                }
            }
        }
        // Nothing pending: the buffer goes back to the pool (idle connections hold none).
        if let Some(Slot::Here(conn)) = self.conns.get_mut(token) {
            release_buffer(&mut self.buffers, conn);
        }
        None
    }

    /// Parse a head from the buffer, or check that a body being buffered is complete.
    fn try_request(&mut self, token: usize, ctx: &LoopCtx) -> Result<Next, ProtoError> {
        let Some(Slot::Here(conn)) = self.conns.get_mut(token) else {
            return Ok(Next::NeedMore);
        };
        if let Phase::ReadingBody(head) = &conn.phase {
            let need = match head.body {
                BodyFraming::Length(n) => n as usize,
                _ => 0,
            };
            if conn.buffered().len() < need {
                return Ok(Next::NeedMore);
            }
            let Phase::ReadingBody(head) = std::mem::replace(&mut conn.phase, Phase::Idle) else {
                unreachable!()
            };
            return Ok(Next::Work(self.take_work(token, *head, true)));
        }
        let buf = conn.rbuf.as_ref().unwrap();
        let Some((head, used)) = conn.parser.parse(buf.filled(), &ctx.settings.limits)? else {
            if matches!(conn.phase, Phase::Idle) {
                conn.phase = Phase::ReadingHead;
                conn.deadline = Some(Instant::now() + ctx.settings.header_timeout);
            }
            return Ok(Next::NeedMore);
        };
        conn.rbuf.as_mut().unwrap().consume(used);
        conn.parser.reset();
        if let Some(statics) = &ctx.settings.statics {
            if let StaticOutcome::Served {
                status,
                keep_alive,
                body_bytes,
            } = statics.serve(&head, &mut conn.out, &ctx.settings.server_header)
            {
                conn.requests += 1;
                ctx.counters.requests.fetch_add(1, Ordering::Relaxed);
                if let Some(log) = &ctx.settings.access_log {
                    log.write(&head, &conn.peer, status, body_bytes);
                }
                // The static path reads no request body: a request with one cannot be followed
                // by another on this connection (the plan said Connection: close).
                if !keep_alive || ctx.shutting_down() {
                    conn.after_output = if head.body == BodyFraming::None {
                        AfterOutput::Close
                    } else {
                        AfterOutput::CloseLingering
                    };
                }
                // Idle once the answer is written (if the socket is full, writing it switches
                // to the write timeout).
                conn.phase = Phase::Idle;
                conn.deadline = Some(Instant::now() + ctx.settings.keepalive_timeout);
                return Ok(Next::Answered);
            }
        }
        let buffered = conn.buffered().len() as u64;
        let body_buffered = match head.body {
            BodyFraming::None => true,
            BodyFraming::Length(n) if n <= buffered => true,
            BodyFraming::Length(n) if n <= INLINE_BODY_MAX && !head.expect_continue => {
                // Wait in the loop for the rest of a small body, as long as it keeps coming
                // (the read timeout, as when the app reads a body itself).
                conn.phase = Phase::ReadingBody(Box::new(head));
                conn.deadline = Some(Instant::now() + ctx.settings.read_timeout);
                return Ok(Next::NeedMore);
            }
            _ => false,
        };
        Ok(Next::Work(self.take_work(token, head, body_buffered)))
    }

    /// Mark the connection away and hand it out with its request.
    fn take_work(&mut self, token: usize, head: RequestHead, body_buffered: bool) -> Work {
        let registered = match &self.conns[token] {
            Slot::Here(c) => c.registered,
            Slot::Away { .. } => unreachable!("take_work on an away connection"),
        };
        let Slot::Here(mut conn) = std::mem::replace(
            &mut self.conns[token],
            Slot::Away {
                woke: false,
                registered,
            },
        ) else {
            unreachable!()
        };
        conn.deadline = None;
        conn.phase = Phase::Idle;
        Work {
            conn,
            head,
            body_buffered,
        }
    }

    /// Answer a protocol error (the one place that writes them) and close after it.
    fn protocol_error(&mut self, token: usize, e: ProtoError, ctx: &LoopCtx) {
        ctx.counters.protocol_errors.fetch_add(1, Ordering::Relaxed);
        if let Some(Slot::Here(conn)) = self.conns.get_mut(token) {
            conn.out
                .push_owned(protocol_error_answer(&e, &ctx.settings.server_header));
            // Input after a framing error is meaningless: drop it, and linger after the answer
            // so the client reads it before any reset.
            conn.after_output = AfterOutput::CloseLingering;
            if let Some(b) = conn.rbuf.as_mut() {
                let n = b.len();
                b.consume(n);
            }
            conn.phase = Phase::Idle;
            self.ready.push_back((token, ReadHint::None));
        }
    }

    /// Output is written and the connection must close: close now if nothing more can come
    /// from the client, else half-close and linger.
    fn finish_close(&mut self, token: usize) {
        let Some(Slot::Here(conn)) = self.conns.get_mut(token) else {
            return;
        };
        if conn.after_output == AfterOutput::CloseLingering || !conn.buffered().is_empty() {
            conn.stream.shutdown_write();
            conn.phase = Phase::Lingering;
            conn.deadline = Some(Instant::now() + LINGER);
            self.discard_input(token);
        } else {
            if conn.out.closing {
                // Sends the answer's held-back last segment with the FIN (see
                // `OutQueue::closing`) before `close` could turn into a reset.
                conn.stream.shutdown_write();
            }
            self.close(token);
        }
    }

    /// Read and drop input until the client closes (then close) or the socket is empty.
    fn discard_input(&mut self, token: usize) {
        let Some(Slot::Here(conn)) = self.conns.get_mut(token) else {
            return;
        };
        let mut scratch = [0u8; 4096];
        loop {
            match conn.stream.read(&mut scratch) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(_) => break,
            }
        }
        self.close(token);
    }

    /// Close and forget a connection that is here.
    fn close(&mut self, token: usize) {
        if let Some(Slot::Here(_)) = self.conns.get(token) {
            if let Slot::Here(mut conn) = self.conns.remove(token) {
                release_buffer(&mut self.buffers, &mut conn);
                // Dropping the stream closes the socket, which also removes it from the epoll
                // set (no descriptor is ever duplicated), so no EPOLL_CTL_DEL: one syscall less
                // per connection.
            }
        }
    }

    /// Expire deadlines.
    fn sweep(&mut self, now: Instant, ctx: &LoopCtx) {
        // Streaming responses to clients that stopped reading.
        self.flushing
            .retain(|_, out| !out.expire(ctx.settings.write_timeout));
        if self.accept_paused {
            self.accept_paused = false;
            for i in 0..self.listeners.len() {
                self.accept(i, ctx);
            }
        }
        let expired: Vec<usize> = self
            .conns
            .iter()
            .filter_map(|(t, s)| match s {
                Slot::Here(c) if c.deadline.is_some_and(|d| d <= now) => Some(t),
                _ => None,
            })
            .collect();
        for token in expired {
            let Some(Slot::Here(conn)) = self.conns.get_mut(token) else {
                continue;
            };
            ctx.counters.timeouts.fetch_add(1, Ordering::Relaxed);
            match conn.phase {
                Phase::ReadingHead | Phase::ReadingBody(_) => {
                    // 408, then close: the client was too slow sending its request.
                    conn.out.clear();
                    conn.out
                        .push_owned(error_answer(REQUEST_TIMEOUT, &ctx.settings.server_header));
                    conn.phase = Phase::Idle;
                    let _ = conn.out.write_to(&conn.stream);
                    self.close(token);
                }
                _ => self.close(token),
            }
        }
    }

    /// One step of shutdown. Returns true when the loop may stop.
    fn shutdown_step(&mut self, ctx: &LoopCtx) -> bool {
        let now = Instant::now();
        if self.shutdown_started.is_none() {
            self.shutdown_started = Some(now);
            // Stop accepting: closing the listening sockets makes new connects fail at once.
            for l in self.listeners.iter_mut() {
                if let Some(mut s) = l.take() {
                    let _ = match &mut s {
                        ListenSocket::Tcp(t, _) => self.poll.registry().deregister(t),
                        ListenSocket::Unix(u) => self.poll.registry().deregister(u),
                    };
                }
            }
            // Settle the sweep cadence so the graceful deadline is noticed.
            self.sweep_every = self.sweep_every.min(Duration::from_millis(100));
            self.next_sweep = self.next_sweep.min(now + self.sweep_every);
        }
        // Idle connections and half-received requests close now.
        let idle: Vec<usize> = self
            .conns
            .iter()
            .filter_map(|(t, s)| match s {
                Slot::Here(c) if c.out.is_empty() && !matches!(c.phase, Phase::Lingering) => {
                    Some(t)
                }
                _ => None,
            })
            .collect();
        for t in idle {
            self.close(t);
        }
        let deadline_passed = now >= self.shutdown_started.unwrap() + ctx.settings.graceful_timeout;
        if ctx.shutdown_state() == Shutdown::Immediate || deadline_passed {
            let all: Vec<usize> = self
                .conns
                .iter()
                .filter(|(_, s)| matches!(s, Slot::Here(_)))
                .map(|(t, _)| t)
                .collect();
            for t in all {
                self.close(t);
            }
            return true;
        }
        self.conns.is_empty()
    }
}

/// Give an empty read buffer back to the pool.
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
