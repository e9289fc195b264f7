//! Listening sockets: what the Python front binds and hands over (TCP or unix), TCP_NODELAY set
//! once on the listener (Linux copies it to every accepted connection), and accepting, one
//! connection per round (see the parent module on why).

use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::sync::atomic::Ordering;

use mio::net::{TcpListener, UnixListener};

use crate::io::balance::{DEFER, DEFER_LIMIT};

use super::*;

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
    crate::io::stream::set_tcp_flag(fd, libc::TCP_NODELAY, true)
}

impl LoopState {
    /// The deferral is over: if a connection still waits on a listener the others did not
    /// take it, so look again (and take it after `DEFER_LIMIT` looks); if none waits, forget
    /// it (a new connection wakes the loop as usual).
    pub(super) fn look_again_at_deferred(&mut self, ctx: &LoopCtx) {
        self.deferred_until = None;
        let listeners = std::mem::take(&mut self.deferred);
        let mut waiting = false;
        for index in listeners {
            if self.listener_has_waiting(index) {
                waiting = true;
                self.deferred_looks += 1;
                self.accept(index, ctx);
            }
        }
        if !waiting || self.deferred.is_empty() {
            self.deferred_looks = 0;
        }
    }

    /// Whether a connection waits in this listener's backlog.
    fn listener_has_waiting(&self, index: usize) -> bool {
        match &self.listeners[index] {
            Some(ListenSocket::Tcp(l, _)) => readable_now(l.as_raw_fd()),
            Some(ListenSocket::Unix(l)) => readable_now(l.as_raw_fd()),
            None => false,
        }
    }

    /// Accept one connection from a listener and look at it at once (its request is usually
    /// there already); if one came, the listener is tried again once the ready queue is empty.
    pub(super) fn accept(&mut self, index: usize, ctx: &LoopCtx) {
        if let Some(b) = &self.balance {
            if self.deferred_looks < DEFER_LIMIT && !b.may_accept(self.conns.len()) {
                // Leave it to a less loaded worker; look again shortly (module doc of
                // `io::balance`).
                if !self.deferred.contains(&index) {
                    self.deferred.push(index);
                }
                self.deferred_until
                    .get_or_insert_with(|| Instant::now() + DEFER);
                return;
            }
        }
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
                    if let Some(refused) = self.fd_exhausted.take() {
                        eprintln!(
                            "sluicegate: accepting again after {refused} attempt(s) refused for lack of file descriptors"
                        );
                    }
                    let entry = self.conns.vacant_entry();
                    let token = entry.key();
                    let mut conn = Box::new(Conn::new(stream, token, index, peer));
                    conn.wire = ctx.settings.wires[index];
                    conn.deadline = Some(Instant::now() + ctx.settings.header_timeout);
                    entry.insert(Slot::Here(conn));
                    if let Some(b) = &self.balance {
                        b.publish(self.conns.len());
                    }
                    ctx.counters.accepted.fetch_add(1, Ordering::Relaxed);
                    ctx.counters
                        .by_request
                        .open_connections
                        .fetch_add(1, Ordering::Relaxed);
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
                        ctx.counters.fd_exhausted.fetch_add(1, Ordering::Relaxed);
                        match &mut self.fd_exhausted {
                            Some(n) => *n += 1,
                            None => {
                                self.fd_exhausted = Some(1);
                                log_io_error(
                                    "accept (out of file descriptors; paused, retried at each sweep, logged once until accepting works again)",
                                    &e,
                                );
                            }
                        }
                        return;
                    }
                    // ECONNABORTED and friends concern one client only.
                    continue;
                }
            }
        }
    }
}
