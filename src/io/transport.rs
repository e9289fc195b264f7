//! A request's connection as the WSGI bridge sees it: the one interface through which code
//! outside `io/` reads request-body bytes from a client, writes response bytes to it, or ends
//! it. The bridge (`wsgi/`) holds a [`Transport`] for the request it runs and never a socket:
//! every system call on a client socket is made in `io/`.
//!
//! What it offers is what the bridge needs and no more:
//! - [`Transport::read_some`] into the caller's buffer (so `wsgi.input`'s `read(n)` reads straight
//!   into the `bytes` it returns), [`Transport::wait_readable`] (with the GIL released by the
//!   caller), and [`Transport::send_all`] for `100 Continue`;
//! - [`Transport::write_some`]: one write of an output queue, the same zero-copy paths as the
//!   loop's (a `writev` from the app's buffers, `sendfile` of a file range);
//! - [`Transport::answer_and_close`]: the `--timeout` watcher's 504 and the end of the
//!   connection, from a thread that does not own it ([`Cut`]: a connection's, or an HTTP/2
//!   stream's, which ends the stream alone).
//!
//! The variants:
//! - `Plain`: a plaintext TCP or unix socket, where each call is the system call itself
//!   (inlined: the bridge pays nothing for the indirection);
//! - `Tls` (`io::tls_link`): the rustls session and the socket behind one lock; `read_some`
//!   decrypts from the session's plaintext buffer (reading and decrypting records from the
//!   socket when it is empty), `write_some` encrypts the queue's segments into the session and
//!   writes its records (no `sendfile`: a file range is read into a buffer and encrypted),
//!   `answer_and_close` sends a close_notify after the answer.
//!
//! An HTTP/2 stream is no `Transport`: its body and response are frames on a connection the
//! loop drives (`io::h2::stream`, `io::h3::stream`), and the `--timeout` watcher ends it through
//! [`Cut::Stream`].
//!
//! A `Transport` is `Clone`, not `Copy`, so that a variant holding a shared session can be
//! added without touching its users.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use std::sync::Arc;

use super::out_queue::OutQueue;
use super::stream::{read_fd, readv_fd, send_all_fd, set_receive_buffer, wait_fd};
use super::streams::cut::StreamCut;
use super::tls_link::{TlsFacts, TlsLink};

/// A request's connection, lent to the thread that runs the app (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A plaintext socket (TCP or unix), non-blocking.
    Plain(RawFd),
    /// A TLS connection (its socket inside the link).
    Tls(Arc<TlsLink>),
}

/// What the `--timeout` watcher ends a call through, from a thread that does not own it.
pub enum Cut {
    /// The request's connection (HTTP/1.1, uwsgi): answered, then shut down.
    Conn(Transport),
    /// An HTTP/2 or HTTP/3 stream: answered 504 (or reset); the connection and its other
    /// streams go on.
    Stream(StreamCut),
}

impl From<Transport> for Cut {
    fn from(t: Transport) -> Cut {
        Cut::Conn(t)
    }
}

impl Cut {
    /// With `answer` (the 504), answer the call's client, then end the connection or the
    /// stream (see [`Transport::answer_and_close`]).
    pub fn answer_and_close(&self, answer: Option<&[u8]>) {
        match self {
            Cut::Conn(t) => t.answer_and_close(answer),
            Cut::Stream(stream) => stream.cut(answer.is_some()),
        }
    }
}

impl Transport {
    /// The environ's TLS facts (`SSL_PROTOCOL`, ...), once its handshake is done; `None` on
    /// a plaintext connection.
    pub fn tls_facts(&self) -> Option<Arc<TlsFacts>> {
        match self {
            Transport::Plain(_) => None,
            Transport::Tls(link) => link.facts(),
        }
    }

    /// The socket underneath, for the I/O layer's own bookkeeping (the epoll set, the shared
    /// output queue); never given to the bridge.
    #[inline]
    pub(in crate::io) fn fd(&self) -> RawFd {
        match self {
            Transport::Plain(fd) => *fd,
            Transport::Tls(link) => link.fd(),
        }
    }

    /// One non-blocking read of request bytes into `buf` (`WouldBlock` when none are there).
    /// `Ok(0)` is the end of the stream.
    #[inline]
    pub fn read_some(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(fd) => read_fd(*fd, buf),
            Transport::Tls(link) => link.read_some(buf),
        }
    }

    /// One non-blocking read into `bufs` in order (`readv`; a TLS link fills the first only),
    /// as [`Transport::read_some`].
    pub fn read_vectored(&self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
        match self {
            Transport::Plain(fd) => readv_fd(*fd, bufs),
            Transport::Tls(link) => match bufs.iter_mut().find(|b| !b.is_empty()) {
                Some(first) => link.read_some(first),
                None => Ok(0),
            },
        }
    }

    /// Wait up to `timeout` for bytes to read (or the peer's close or an error, which the next
    /// `read_some` reports); false when the time ran out. Blocks the thread: callers holding the GIL
    /// release it first.
    #[inline]
    pub fn wait_readable(&self, timeout: Duration) -> io::Result<bool> {
        match self {
            Transport::Plain(fd) => wait_fd(*fd, false, timeout),
            Transport::Tls(link) => link.wait_readable(timeout),
        }
    }

    /// Write all of `data` (a small interim answer: `100 Continue`), waiting up to `timeout`
    /// per stall.
    pub fn send_all(&self, data: &[u8], timeout: Duration) -> io::Result<()> {
        match self {
            Transport::Plain(fd) => send_all_fd(*fd, data, timeout),
            Transport::Tls(link) => link.send_all(data, timeout),
        }
    }

    /// One write of `out`'s front: a `writev` of its memory segments up to the first file
    /// range, or a `sendfile` of the file range at its front (`OutQueue::write_fd`). Returns
    /// the bytes written.
    #[inline]
    pub fn write_some(&self, out: &mut OutQueue) -> io::Result<usize> {
        match self {
            Transport::Plain(fd) => out.write_fd(*fd),
            Transport::Tls(link) => link.write_some(out),
        }
    }

    /// A large upload: let the kernel buffer up to `bytes` of it (`SO_RCVBUF`) so the client
    /// keeps sending while the app works on what it read. False if refused.
    pub fn raise_receive_buffer(&self, bytes: usize) -> bool {
        set_receive_buffer(self.fd(), bytes)
    }

    /// End the connection from a thread that does not own it (the `--timeout` watcher): with
    /// `answer`, one non-blocking write of it first (it fits the send buffer of a connection
    /// that was sent nothing yet; not waited for if not), then shut the socket down both ways,
    /// which wakes whoever waits on it. The descriptor stays open for its owner to close.
    pub fn answer_and_close(&self, answer: Option<&[u8]>) {
        match self {
            Transport::Tls(link) => {
                link.close(answer);
                // SAFETY: as below.
                unsafe { libc::shutdown(link.fd(), libc::SHUT_RDWR) };
            }
            Transport::Plain(fd) => {
                if let Some(bytes) = answer {
                    // SAFETY: the caller guarantees `fd` is open (see `wsgi::deadline`); the
                    // buffer is valid for its length.
                    unsafe {
                        libc::send(
                            *fd,
                            bytes.as_ptr() as *const libc::c_void,
                            bytes.len(),
                            libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
                        )
                    };
                }
                // SAFETY: as above; shutdown only changes the socket's state.
                unsafe { libc::shutdown(*fd, libc::SHUT_RDWR) };
            }
        }
    }
}
