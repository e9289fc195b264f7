//! Accepting: one connection per round (see the parent module on why), TCP_NODELAY checked on
//! the first connection of a listener (`io::listen`), and the deferral that leaves connections
//! to less loaded workers (`io::balance`).

use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;

use crate::io::balance::{DEFER, DEFER_LIMIT};
use crate::io::conn::Wire;
use crate::io::listen::{ListenSocket, Nodelay};
use crate::io::tls_link::TlsLink;

use super::*;

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
        // A retired worker leaves every connection to the others (`io::request_limit`).
        if ctx.retired() || self.defers(index, ctx) {
            return;
        }
        loop {
            if ctx.shutting_down() {
                return;
            }
            let res = match &mut self.listeners[index] {
                Some(ListenSocket::Tcp(l, nodelay)) => l.accept().map(|(s, a)| {
                    set_nodelay(&s, nodelay);
                    (Stream::Tcp(s), Peer::Ip(a))
                }),
                Some(ListenSocket::Unix(l)) => {
                    l.accept().map(|(s, _)| (Stream::Unix(s), Peer::Unix))
                }
                None => return,
            };
            match res {
                Ok((stream, peer)) => {
                    if self.take_in(index, stream, peer, ctx) {
                        return;
                    }
                    // Its TLS session could not be set up: dropped (closed), the next one.
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    if self.accept_failed(&e, ctx) {
                        return;
                    }
                    // ECONNABORTED and friends concern one client only.
                }
            }
        }
    }

    /// With a balance between workers, whether this connection is left to a less loaded one
    /// for now (module doc of `io::balance`): the listener is looked at again after `DEFER`.
    #[inline(always)]
    fn defers(&mut self, index: usize, ctx: &LoopCtx) -> bool {
        let Some(b) = &ctx.balance else {
            return false;
        };
        if self.deferred_looks >= DEFER_LIMIT || b.may_accept(self.held()) {
            return false;
        }
        if !self.deferred.contains(&index) {
            self.deferred.push(index);
        }
        self.deferred_until
            .get_or_insert_with(|| Instant::now() + DEFER);
        true
    }

    /// A connection accepted from listener `index`: its state made (a TLS session on a TLS
    /// listener), counted, and queued for a look at once. False when its TLS session could not
    /// be made (the connection is dropped, which closes it).
    #[inline(always)]
    fn take_in(&mut self, index: usize, stream: Stream, peer: Peer, ctx: &LoopCtx) -> bool {
        if let Some(refused) = self.fd_exhausted.take() {
            eprintln!(
                "sluicegate: accepting again after {refused} attempt(s) refused for lack of file descriptors"
            );
        }
        let entry = self.conns.vacant_entry();
        let token = entry.key();
        let mut conn = Box::new(Conn::new(stream, token, index, peer));
        conn.wire = ctx.settings.wires[index];
        if let Some(tls) = ctx.settings.tls.get(index) {
            let proxy_first = conn.wire == Wire::ProxyThenHttp;
            match TlsLink::new(conn.stream.fd(), tls, proxy_first) {
                Ok(link) => conn.tls = Some(Arc::new(link)),
                Err(e) => {
                    log_io_error("TLS session", &e);
                    return false;
                }
            }
        }
        conn.deadline = Some(Instant::now() + ctx.settings.config.header_timeout);
        entry.insert(Slot::Here(conn));
        if let Some(b) = &ctx.balance {
            b.publish(self.held());
        }
        ctx.counters.accepted.fetch_add(1, Ordering::Relaxed);
        ctx.counters
            .by_request
            .open_connections
            .fetch_add(1, Ordering::Relaxed);
        self.unregistered.push(token);
        self.ready.push_back((token, ReadHint::Readable));
        self.accept_again.push(index);
        true
    }

    /// An `accept` that failed for another reason than an empty backlog. True when accepting
    /// stops here: out of descriptors, accepting pauses until the next sweep instead of
    /// spinning (queued clients wait in the backlog); false for an error of one client only.
    #[cold]
    fn accept_failed(&mut self, e: &std::io::Error, ctx: &LoopCtx) -> bool {
        if !matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) {
            return false;
        }
        self.accept_paused = true;
        ctx.counters.fd_exhausted.fetch_add(1, Ordering::Relaxed);
        match &mut self.fd_exhausted {
            Some(n) => *n += 1,
            None => {
                self.fd_exhausted = Some(1);
                log_io_error(
                    "accept (out of file descriptors; paused, retried at each sweep, logged once until accepting works again)",
                    e,
                );
            }
        }
        true
    }
}

/// TCP_NODELAY on an accepted connection: checked on a listener's first connection (inherited
/// from the listening socket on Linux, `io::listen`), set on each only where it was not.
#[inline]
fn set_nodelay(s: &mio::net::TcpStream, nodelay: &mut Nodelay) {
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
}
