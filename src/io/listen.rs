//! Listening sockets: what the Python front binds and hands over (TCP or unix), with
//! TCP_NODELAY set once on the listener (Linux copies it to every accepted connection) and
//! TCP_DEFER_ACCEPT (a connection is handed to `accept` once its first bytes are there), and on
//! a loopback listener a congestion control that does not pace (`unpaced_on_loopback`).
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
            if l.local_addr().is_ok_and(|a| a.ip().is_loopback()) {
                unpaced_on_loopback(l.as_raw_fd());
            }
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

/// The congestion controls that pace every connection with a timer of their own: BBR and its
/// later versions.
const PACING: &str = "bbr";

/// On a listener bound to a loopback address, whose clients are on this host (nginx, HAProxy or
/// a sidecar in front), a congestion control that paces (BBR, where it is the system's
/// default) is replaced by CUBIC, or by Reno where CUBIC is not in
/// `net.ipv4.tcp_allowed_congestion_control` (Reno always is); the accepted connections
/// inherit the listener's choice, so it costs no call per connection. Any other algorithm is
/// left as the system chose it, and so is every listener bound to a wildcard or an outside
/// address, whose clients may be across a network where pacing is what its owner wanted.
///
/// Why: BBR sends each connection's data at its estimate of the path's bandwidth, released by
/// a pacing timer; on loopback there is no path to spare, and a kept-alive connection's large
/// answers left in timed bursts (S3's 2.5 MB answer in 8 KiB blocks met 12.7 pacing-timer
/// expiries per answer, against 2.5 for a server that opens a connection per answer). Against
/// the build without this rule, on one kept-alive connection: S3's answer 0.76x the time at
/// 0.56x the server CPU, a 64 MiB `file_wrapper` answer 0.50x at 0.16x, a 64 MiB body from
/// memory 0.55x at 0.52x; four `wrk` connections fetching the file twice the rate; hello world
/// level (`benchmarks/results/2026-11-28-unpaced/`).
fn unpaced_on_loopback(fd: RawFd) {
    if congestion(fd).is_some_and(|name| name.starts_with(PACING)) {
        let _ = set_congestion(fd, "cubic") || set_congestion(fd, "reno");
    }
}

/// A TCP socket's congestion control algorithm (`TCP_CONGESTION`), if it can be read.
fn congestion(fd: RawFd) -> Option<String> {
    let mut name = [0u8; 16]; // TCP_CA_NAME_MAX
    let mut len = name.len() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `name`, which is valid for that many,
    // and stores the length written in `len`; both live across the call.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_mut_ptr().cast::<libc::c_void>(),
            &mut len,
        )
    };
    if r != 0 {
        return None;
    }
    let name = &name[..(len as usize).min(name.len())];
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    std::str::from_utf8(&name[..end]).ok().map(str::to_owned)
}

/// Set a TCP socket's congestion control algorithm; false if refused (unknown, or not allowed
/// to an unprivileged process).
fn set_congestion(fd: RawFd, name: &str) -> bool {
    // SAFETY: setsockopt reads `name.len()` bytes from a valid slice, for the call only.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast::<libc::c_void>(),
            name.len() as libc::socklen_t,
        )
    };
    r == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    /// A loopback listener set to BBR (skipped where BBR cannot be had) ends up on an
    /// algorithm that does not pace, and so does the connection it accepts; a listener on
    /// an algorithm that does not pace keeps it.
    #[test]
    fn loopback_listener_leaves_pacing() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let fd = l.as_raw_fd();
        let before = congestion(fd).expect("TCP_CONGESTION readable");
        if !set_congestion(fd, "bbr") {
            eprintln!("bbr not available here (system default {before}): rule not exercised");
            return;
        }
        unpaced_on_loopback(fd);
        let now = congestion(fd).unwrap();
        assert!(now == "cubic" || now == "reno", "listener still on {now}");
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        assert_eq!(
            congestion(s.as_raw_fd()).as_deref(),
            Some(now.as_str()),
            "accepted connection"
        );
        c.write_all(b"x").unwrap();
        let mut b = [0u8; 1];
        s.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"x");
        set_congestion(fd, "reno");
        unpaced_on_loopback(fd);
        assert_eq!(
            congestion(fd).as_deref(),
            Some("reno"),
            "a non-pacing choice is kept"
        );
    }
}
