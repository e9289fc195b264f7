//! Listening sockets: what the Python front binds and hands over (TCP or unix), with
//! TCP_NODELAY set once on the listener (Linux copies it to every accepted connection) and
//! TCP_DEFER_ACCEPT (a connection is handed to `accept` once its first bytes are there).
//! Accepting from them is the event loop's (`event_loop/accept.rs`).

use std::os::fd::{AsRawFd, FromRawFd, RawFd};

use mio::net::{TcpListener, UnixListener};

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
            set_defer_accept(l.as_raw_fd());
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
    super::stream::set_tcp_flag(fd, libc::TCP_NODELAY, true)
}

/// TCP_DEFER_ACCEPT on a listening socket: every client of ours speaks first (an HTTP request,
/// a PROXY header, a TLS ClientHello, nginx's uwsgi packet), so a connection is accepted with
/// its first bytes already readable. Without it, a connection accepted as soon as the
/// handshake ends was often read before its request came (a `recv` finding nothing, an
/// `epoll_ctl` to register it, and one more loop wake-up for the request): with `ab -c64`,
/// 0.45 of each per connection; wake-ups per connection with `ab -c1` went from 1.63 to 1.05
/// (`benchmarks/results/2026-11-25-newconn-path`). The value set, 1, is in seconds: a
/// connection that sends nothing is handed to `accept` after about a second anyway (then the
/// header timeout runs as for any connection). Refused: nothing changes.
fn set_defer_accept(fd: RawFd) {
    super::stream::set_tcp_flag(fd, libc::TCP_DEFER_ACCEPT, true);
}
