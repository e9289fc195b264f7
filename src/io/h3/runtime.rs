//! quinn's `Runtime` over the event loop: QUIC brings no runtime and no thread. quinn asks its
//! runtime for three things, each the loop's own here:
//! - tasks ([`LoopRuntime::spawn`]): the endpoint's driver, each connection's driver, and the
//!   HTTP/3 connection tasks all go into the loop's task set (`io::streams::tasks`), polled on the
//!   loop's thread when woken;
//! - timers ([`LoopRuntime::new_timer`]): entries of the task set's one timer heap
//!   (`io::streams::timer`), which the loop's wait ends at;
//! - a UDP socket ([`LoopUdp`]): non-blocking, registered with the loop's epoll under a token of
//!   its own; an event sets its readiness and wakes the task that waited for it
//!   ([`LoopUdp::event`], called by the loop). Sending and receiving go through quinn-udp's
//!   `UdpSocketState`, which uses GSO and GRO where the kernel has them (many datagrams per
//!   system call) and the packet-info control messages QUIC needs. Beside it, the endpoint's
//!   inbox of datagrams other workers route to it, and the datagrams it routes to them
//!   (`route.rs`), under the same token.

use std::fmt;
use std::future::Future;
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use quinn::udp::{RecvMeta, Transmit, UdpSocketState};
use quinn::{AsyncTimer, AsyncUdpSocket, Runtime, UdpPoller};

use super::amplification::Budgets;
use crate::io::streams::tasks::TaskShared;
use crate::io::streams::timer::{self, Sleep};

/// The loop as quinn's runtime.
pub struct LoopRuntime(pub Arc<TaskShared>);

impl fmt::Debug for LoopRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LoopRuntime")
    }
}

/// A timer of the loop's heap.
struct LoopTimer(Sleep);

impl fmt::Debug for LoopTimer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LoopTimer")
    }
}

impl AsyncTimer for LoopTimer {
    fn reset(self: Pin<&mut Self>, i: Instant) {
        self.get_mut().0.reset_at(i);
    }
    fn poll(self: Pin<&mut Self>, cx: &mut Context) -> Poll<()> {
        self.get_mut().0.poll_due(cx)
    }
}

impl Runtime for LoopRuntime {
    fn new_timer(&self, i: Instant) -> Pin<Box<dyn AsyncTimer>> {
        Box::pin(LoopTimer(timer::sleep_until(
            Arc::clone(self.0.timers()),
            i,
        )))
    }

    fn spawn(&self, future: Pin<Box<dyn Future<Output = ()> + Send>>) {
        self.0.spawn(future);
    }

    /// Sockets are made by [`LoopUdp::new`], registered with the loop: quinn asks for one
    /// only to rebind an endpoint, which the server never does.
    fn wrap_udp_socket(&self, _t: std::net::UdpSocket) -> io::Result<Arc<dyn AsyncUdpSocket>> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "the event loop's QUIC endpoints are not rebound",
        ))
    }
}

const READ: u8 = 1;
const WRITE: u8 = 2;
/// The inbox of routed datagrams may be readable (set with `READ` by a readable event).
const INBOX: u8 = 4;

/// A UDP socket of the loop's epoll (edge-triggered): a readiness bit is set by an event and
/// cleared by the call that finds the socket empty or full, and the task waiting for it is
/// woken by the event.
pub struct LoopUdp {
    io: mio::net::UdpSocket,
    state: UdpSocketState,
    /// What may go to addresses not validated yet (RFC 9000 §8.1, `amplification.rs`).
    budgets: Budgets,
    route: Option<super::route::Route>,
    ready: AtomicU8,
    read_waker: Mutex<Option<Waker>>,
    write_waker: Mutex<Option<Waker>>,
}

impl fmt::Debug for LoopUdp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopUdp")
            .field("addr", &self.io.local_addr().ok())
            .finish_non_exhaustive()
    }
}

impl LoopUdp {
    /// Wrap a bound socket (made non-blocking here) and register it with the loop under
    /// `token`, with `route`'s inbox beside it.
    pub fn new(
        socket: std::net::UdpSocket,
        mut route: Option<super::route::Route>,
        registry: &mio::Registry,
        token: mio::Token,
    ) -> io::Result<Arc<LoopUdp>> {
        socket.set_nonblocking(true)?;
        let state = UdpSocketState::new((&socket).into())?;
        let mut io = mio::net::UdpSocket::from_std(socket);
        registry.register(
            &mut io,
            token,
            mio::Interest::READABLE | mio::Interest::WRITABLE,
        )?;
        if let Some(r) = route.as_mut() {
            registry.register(&mut r.inbox, token, mio::Interest::READABLE)?;
        }
        Ok(Arc::new(LoopUdp {
            io,
            state,
            budgets: Budgets::default(),
            route,
            ready: AtomicU8::new(READ | WRITE | INBOX),
            read_waker: Mutex::new(None),
            write_waker: Mutex::new(None),
        }))
    }

    /// An epoll event for the socket (on the loop's thread).
    pub fn event(&self, readable: bool, writable: bool) {
        let bits = (u8::from(readable) * (READ | INBOX)) | (u8::from(writable) * WRITE);
        self.ready.fetch_or(bits, Ordering::AcqRel);
        if readable {
            if let Some(w) = self.read_waker.lock().unwrap().take() {
                w.wake();
            }
        }
        if writable {
            if let Some(w) = self.write_waker.lock().unwrap().take() {
                w.wake();
            }
        }
    }

    /// Ready for `bit`, or the waker kept for the event that sets it.
    fn poll_ready(&self, bit: u8, slot: &Mutex<Option<Waker>>, cx: &Context) -> bool {
        if self.ready.load(Ordering::Acquire) & bit != 0 {
            return true;
        }
        *slot.lock().unwrap() = Some(cx.waker().clone());
        // An event between the look and the waker's storing: look again.
        self.ready.load(Ordering::Acquire) & bit != 0
    }

    /// Unregister the socket (the endpoint is gone).
    pub fn deregister(&self, registry: &mio::Registry) {
        let mut fd = mio::unix::SourceFd(&std::os::fd::AsRawFd::as_raw_fd(&self.io));
        let _ = registry.deregister(&mut fd);
        if let Some(r) = &self.route {
            let mut fd = mio::unix::SourceFd(&std::os::fd::AsRawFd::as_raw_fd(&r.inbox));
            let _ = registry.deregister(&mut fd);
        }
    }

    /// A graceful stop began: new connections' datagrams go to another worker (`route.rs`).
    pub fn drain(&self) {
        if let Some(r) = &self.route {
            r.drain();
        }
    }

    /// One datagram from the inbox into `buf`, if one is there.
    /// The datagrams of one receive (several of `stride` bytes each under GRO), for the
    /// budgets of addresses not validated yet.
    fn count_received(&self, m: &RecvMeta, buf: &[u8]) {
        if m.len == 0 {
            return;
        }
        for datagram in buf[..m.len].chunks(m.stride.max(1)) {
            self.budgets.received(m.addr, datagram);
        }
    }

    fn read_inbox(&self, buf: &mut [u8], meta: &mut RecvMeta) -> Option<io::Result<usize>> {
        let route = self.route.as_ref()?;
        match route.receive(buf) {
            Ok(Some(m)) => {
                *meta = m;
                self.count_received(meta, buf);
                Some(Ok(1))
            }
            // One that did not fit, dropped: look again.
            Ok(None) => None,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => None,
            Err(_) => {
                self.ready.fetch_and(!INBOX, Ordering::AcqRel);
                None
            }
        }
    }
}

/// quinn's wait for a writable socket.
struct Writable(Arc<LoopUdp>);

impl fmt::Debug for Writable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Writable")
    }
}

impl UdpPoller for Writable {
    fn poll_writable(self: Pin<&mut Self>, cx: &mut Context) -> Poll<io::Result<()>> {
        let udp = &self.0;
        if udp.poll_ready(WRITE, &udp.write_waker, cx) {
            Poll::Ready(Ok(()))
        } else {
            Poll::Pending
        }
    }
}

impl AsyncUdpSocket for LoopUdp {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        Box::pin(Writable(self))
    }

    fn try_send(&self, transmit: &Transmit) -> io::Result<()> {
        if !self
            .budgets
            .may_send(transmit.destination, transmit.contents.len())
        {
            return Ok(()); // past the unvalidated address's budget: lost, sent again later
        }

        let sent = self.state.send((&self.io).into(), transmit);
        if sent
            .as_ref()
            .is_err_and(|e| e.kind() == io::ErrorKind::WouldBlock)
        {
            self.ready.fetch_and(!WRITE, Ordering::AcqRel);
        }
        sent
    }

    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        let wanted = if self.route.is_some() {
            READ | INBOX
        } else {
            READ
        };
        loop {
            if !self.poll_ready(wanted, &self.read_waker, cx) {
                return Poll::Pending;
            }
            let ready = self.ready.load(Ordering::Acquire);
            if ready & INBOX != 0 && self.route.is_some() {
                if let Some(got) = self.read_inbox(&mut bufs[0], &mut meta[0]) {
                    return Poll::Ready(got);
                }
                continue;
            }
            if ready & READ == 0 {
                continue;
            }
            match self.state.recv((&self.io).into(), bufs, meta) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.ready.fetch_and(!READ, Ordering::AcqRel);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Ok(n) => {
                    // Another worker's connections' datagrams go to it; a datagram sent
                    // there is left empty here (quinn skips it).
                    if let Some(route) = &self.route {
                        for (m, buf) in meta.iter_mut().zip(bufs.iter()).take(n) {
                            if route.steer(m, &buf[..m.len]) {
                                m.len = 0;
                            }
                        }
                    }
                    for (m, buf) in meta.iter().zip(bufs.iter()).take(n) {
                        self.count_received(m, buf);
                    }
                    return Poll::Ready(Ok(n));
                }
                other => return Poll::Ready(other),
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.local_addr()
    }

    fn may_fragment(&self) -> bool {
        self.state.may_fragment()
    }

    fn max_transmit_segments(&self) -> usize {
        self.state.max_gso_segments()
    }

    fn max_receive_segments(&self) -> usize {
        self.state.gro_segments()
    }
}
