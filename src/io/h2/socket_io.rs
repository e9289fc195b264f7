//! A handed-over connection as tokio's `AsyncRead`/`AsyncWrite`, for the `h2` crate: the bytes
//! the event loop had read already come first (the client preface, often the first frames
//! too), then the socket, plain or through the connection's TLS session (`io::tls_link`, the
//! same session the handshake ran in). Readiness comes from tokio's own epoll (`AsyncFd`):
//! the socket left the event loop's set before it came here.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::io::out_queue::OutQueue;
use crate::io::stream::{read_fd, writev_fd_flags};
use crate::io::tls_link::TlsLink;

/// The socket's descriptor for `AsyncFd`; the descriptor itself is owned (and closed) by the
/// connection the task holds.
pub(super) struct Fd(pub RawFd);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// One HTTP/2 connection's byte stream.
pub(super) struct SocketIo {
    fd: AsyncFd<Fd>,
    tls: Option<Arc<TlsLink>>,
    /// Read by the loop before the hand-over, served first.
    prefix: Vec<u8>,
    prefix_at: usize,
}

impl SocketIo {
    pub(super) fn new(fd: RawFd, tls: Option<Arc<TlsLink>>, prefix: Vec<u8>) -> io::Result<Self> {
        // SAFETY: `fd` is the socket of the connection that the task serving it owns; that
        // task drops this `SocketIo` (the h2 connection holding it) before the connection, so
        // the descriptor stays open, and the same socket, for the whole life of the `AsyncFd`.
        let fd = unsafe { AsyncFd::register(Fd(fd)) }.map_err(io::Error::from)?;
        Ok(SocketIo {
            fd,
            tls,
            prefix,
            prefix_at: 0,
        })
    }

    fn read_now(&self, buf: &mut [u8]) -> io::Result<usize> {
        match &self.tls {
            None => read_fd(self.fd.get_ref().0, buf),
            Some(link) => link.read_some(buf),
        }
    }

    fn write_now(&self, data: &[u8]) -> io::Result<usize> {
        match &self.tls {
            None => writev_fd_flags(self.fd.get_ref().0, &[io::IoSlice::new(data)], 0),
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
        if this.tls.as_ref().is_some_and(|t| t.has_input()) {
            match this.read_now(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        loop {
            let mut guard = ready!(this.fd.poll_read_ready(cx))?;
            match guard.try_io(|_| this.read_now(buf.initialize_unfilled())) {
                Ok(Ok(n)) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
    }
}

impl AsyncWrite for SocketIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        loop {
            let mut guard = ready!(this.fd.poll_write_ready(cx))?;
            match guard.try_io(|_| this.write_now(data)) {
                Ok(r) => return Poll::Ready(r),
                Err(_would_block) => continue,
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let Some(link) = this.tls.clone() else {
            return Poll::Ready(Ok(()));
        };
        // TLS: ciphertext the socket did not take waits in the session.
        while link.has_output() {
            let mut guard = ready!(this.fd.poll_write_ready(cx))?;
            let mut empty = OutQueue::new();
            match guard.try_io(|_| link.write_some(&mut empty)) {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.as_mut().poll_flush(cx))?;
        if let Some(link) = &self.tls {
            link.close(None);
        }
        // SAFETY: the descriptor is open (owned by the connection the task holds); shutdown
        // only changes the socket's state.
        unsafe { libc::shutdown(self.fd.get_ref().0, libc::SHUT_WR) };
        Poll::Ready(Ok(()))
    }
}
