//! A handed-over connection as tokio's `AsyncRead`/`AsyncWrite`, for the `h2` crate: the bytes
//! the event loop had read already come first (the client preface, often the first frames
//! too), then the socket, plain or through the connection's TLS session (`io::tls_link`, the
//! same session the handshake ran in). Readiness is the event loop's: the socket stays in
//! its epoll set (edge-triggered, read and write) under the connection's task's token, so a
//! read or write that finds the socket empty or full returns `Pending`, and the next edge
//! wakes the task (`tasks.rs`).

use std::io;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::io::out_queue::OutQueue;
use crate::io::stream::{read_fd_uninit, writev_fd_flags};
use crate::io::streams::tasks::{Readiness, READ, WRITE};
use crate::io::tls_link::TlsLink;

/// One HTTP/2 connection's byte stream.
pub(super) struct SocketIo {
    /// Owned (and closed) by the connection the task holds, which outlives this.
    fd: RawFd,
    tls: Option<Arc<TlsLink>>,
    /// Read by the loop before the hand-over, served first.
    prefix: Vec<u8>,
    prefix_at: usize,
    /// What the loop's epoll said of the socket since the last `WouldBlock`.
    ready: Arc<Readiness>,
}

impl SocketIo {
    pub(super) fn new(
        fd: RawFd,
        tls: Option<Arc<TlsLink>>,
        prefix: Vec<u8>,
        ready: Arc<Readiness>,
    ) -> io::Result<Self> {
        Ok(SocketIo {
            ready,
            fd,
            tls,
            prefix,
            prefix_at: 0,
        })
    }

    /// One read into `buf`: plain, straight into its unfilled room (no zeroing first); TLS,
    /// through the session. `WouldBlock` clears the socket's readability until its next edge.
    fn read_into(&self, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if !self.ready.has(READ) {
            return Poll::Pending;
        }
        let r = match &self.tls {
            None => {
                // SAFETY: only the kernel writes the unfilled room (read(2), at most its
                // length); exactly the `n` bytes it wrote are marked initialized below.
                let room = unsafe { buf.unfilled_mut() };
                read_fd_uninit(self.fd, room).map(|n| {
                    // SAFETY: read(2) initialized the first `n` bytes of the unfilled room.
                    unsafe { buf.assume_init(n) };
                    buf.advance(n);
                })
            }
            Some(link) => link
                .read_some(buf.initialize_unfilled())
                .map(|n| buf.advance(n)),
        };
        self.blocked_on(READ, r)
    }

    /// `r` as a poll: `WouldBlock` clears `bit` (the loop sets it again at the next edge).
    fn blocked_on<T>(&self, bit: u8, r: io::Result<T>) -> Poll<io::Result<T>> {
        match r {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.ready.clear(bit);
                Poll::Pending
            }
            r => Poll::Ready(r),
        }
    }

    fn write_now(&self, data: &[u8]) -> io::Result<usize> {
        match &self.tls {
            None => writev_fd_flags(self.fd, &[io::IoSlice::new(data)], 0),
            Some(link) => {
                let mut q = OutQueue::new();
                q.push_copy(data);
                link.write_some(&mut q)
            }
        }
    }
}

impl AsyncRead for SocketIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.prefix_at < this.prefix.len() {
            let rest = &this.prefix[this.prefix_at..];
            let n = rest.len().min(buf.remaining());
            buf.put_slice(&rest[..n]);
            this.prefix_at += n;
            if this.prefix_at == this.prefix.len() {
                this.prefix = Vec::new();
                this.prefix_at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        // Decrypted bytes may wait in the TLS session with no edge to come.
        if let Some(link) = this.tls.as_ref().filter(|t| t.has_input()) {
            match link.read_some(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        let _ = cx;
        this.read_into(buf)
    }
}

impl AsyncWrite for SocketIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let _ = cx;
        if !self.ready.has(WRITE) {
            return Poll::Pending;
        }
        self.blocked_on(WRITE, self.write_now(data))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let Some(link) = this.tls.clone() else {
            return Poll::Ready(Ok(()));
        };
        // TLS: ciphertext the socket did not take waits in the session.
        let _ = cx;
        while link.has_output() {
            if !this.ready.has(WRITE) {
                return Poll::Pending;
            }
            let mut empty = OutQueue::new();
            if let Err(e) = link.write_some(&mut empty) {
                return this.blocked_on(WRITE, Err(e));
            }
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.as_mut().poll_flush(cx))?;
        if let Some(link) = &self.tls {
            link.close(None);
        }
        // SAFETY: the descriptor is open (owned by the connection the task holds); shutdown
        // only changes the socket's state.
        unsafe { libc::shutdown(self.fd, libc::SHUT_WR) };
        Poll::Ready(Ok(()))
    }
}
