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
use crate::io::stream::{read_fd, writev_fd_flags};
use crate::io::tls_link::TlsLink;

/// One HTTP/2 connection's byte stream.
pub(super) struct SocketIo {
    /// Owned (and closed) by the connection the task holds, which outlives this.
    fd: RawFd,
    tls: Option<Arc<TlsLink>>,
    /// Read by the loop before the hand-over, served first.
    prefix: Vec<u8>,
    prefix_at: usize,
}

impl SocketIo {
    pub(super) fn new(fd: RawFd, tls: Option<Arc<TlsLink>>, prefix: Vec<u8>) -> io::Result<Self> {
        Ok(SocketIo {
            fd,
            tls,
            prefix,
            prefix_at: 0,
        })
    }

    fn read_now(&self, buf: &mut [u8]) -> io::Result<usize> {
        match &self.tls {
            None => read_fd(self.fd, buf),
            Some(link) => link.read_some(buf),
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
        let _ = cx;
        pending_on_block(this.read_now(buf.initialize_unfilled()).map(|n| buf.advance(n)))
    }
}

impl AsyncWrite for SocketIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let _ = cx;
        pending_on_block(self.write_now(data))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let Some(link) = this.tls.clone() else {
            return Poll::Ready(Ok(()));
        };
        // TLS: ciphertext the socket did not take waits in the session.
        let _ = cx;
        while link.has_output() {
            let mut empty = OutQueue::new();
            if let Err(e) = link.write_some(&mut empty) {
                return pending_on_block(Err(e));
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

/// A system call's result as a poll: `WouldBlock` waits for the socket's next edge.
fn pending_on_block<T>(r: io::Result<T>) -> Poll<io::Result<T>> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Poll::Pending,
        r => Poll::Ready(r),
    }
}
