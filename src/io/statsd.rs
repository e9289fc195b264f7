//! The statsd datagram socket (`--statsd-host`): a UDP socket (IPv4 or IPv6) or a unix
//! datagram socket, connected at start as gunicorn's does, and the sender the access log's
//! writer thread hands each batch of metric lines (`observe::statsd`) to. A batch goes out in
//! datagrams of at most [`DATAGRAM_MAX`] bytes, each cut at a line's end.
//!
//! Nothing here stops a start: as in gunicorn, a host name that does not resolve or a unix
//! path where nothing listens yet leaves the metrics dropped (the Python front says so once,
//! `statsd.py`), and the writer thread connects again, off the requests' way, at most every
//! [`RETRY`]. A send that fails (no receiver: ECONNREFUSED) loses its metrics, as gunicorn's
//! does, and is told once on stderr until a send succeeds again; a unix socket is then
//! connected anew (a receiver that restarted binds a new socket at the same path).

use std::net::{ToSocketAddrs, UdpSocket};
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::observe::access_log::LineSink;

/// The most one datagram carries: what fits one Ethernet frame's payload (statsd's own
/// advice for a fast network), so no datagram is fragmented.
pub const DATAGRAM_MAX: usize = 1432;

/// How long after a failed connection (or a failed send on a unix socket) the metrics are
/// dropped before the next batch connects again: a name is resolved anew then (a DNS query,
/// on the statsd writer thread), which is not worth doing for every batch.
pub const RETRY: Duration = Duration::from_secs(5);

enum Socket {
    Udp(UdpSocket),
    Unix(UnixDatagram),
}

impl Socket {
    fn send(&self, bytes: &[u8]) -> std::io::Result<usize> {
        match self {
            Socket::Udp(s) => s.send(bytes),
            Socket::Unix(s) => s.send(bytes),
        }
    }
}

/// The socket, or when the next connection is tried.
enum Link {
    Up(Socket),
    Down { retry_at: Instant },
}

impl Link {
    fn connect(address: &str) -> Link {
        match connect(address) {
            Ok(s) => Link::Up(s),
            Err(_) => Link::Down {
                retry_at: Instant::now() + RETRY,
            },
        }
    }
}

/// The sender for `address` (`HOST:PORT`, `[V6]:PORT` or `unix:PATH`, as the Python front
/// checked it), connected now if it can be.
pub fn sender(address: &str) -> LineSink {
    let address = address.to_owned();
    let link = Mutex::new(Link::connect(&address));
    let failing = AtomicBool::new(false);
    Box::new(move |batch: &[u8]| {
        let mut link = link.lock().unwrap_or_else(PoisonError::into_inner);
        if let Link::Down { retry_at } = *link {
            if Instant::now() < retry_at {
                return Ok(()); // dropped, as gunicorn drops what it cannot send
            }
            *link = Link::connect(&address);
        }
        let Link::Up(socket) = &*link else {
            return Ok(());
        };
        let mut reconnect = false;
        for datagram in datagrams(batch, DATAGRAM_MAX) {
            match socket.send(datagram) {
                Ok(_) => failing.store(false, Ordering::Relaxed),
                Err(e) => {
                    if !failing.swap(true, Ordering::Relaxed) {
                        eprintln!("sluicegate: statsd metrics cannot be sent ({e}): they are lost until a send succeeds");
                    }
                    reconnect = matches!(socket, Socket::Unix(_));
                    break;
                }
            }
        }
        if reconnect {
            *link = Link::Down {
                retry_at: Instant::now() + RETRY,
            };
        }
        Ok(())
    })
}

fn connect(address: &str) -> std::io::Result<Socket> {
    if let Some(path) = address.strip_prefix("unix:") {
        let s = UnixDatagram::unbound()?;
        s.connect(path.trim_start_matches("//"))?;
        return Ok(Socket::Unix(s));
    }
    let target = address
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other("the name has no address"))?;
    let local = if target.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    };
    let s = UdpSocket::bind(local)?;
    s.connect(target)?;
    Ok(Socket::Udp(s))
}

/// `batch` (whole lines) in pieces of at most `max` bytes cut at line ends, without the last
/// newline of each (statsd separates metrics with newlines); a longer line goes alone.
fn datagrams(batch: &[u8], max: usize) -> impl Iterator<Item = &[u8]> {
    let mut rest = batch;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let window = &rest[..rest.len().min(max + 1)];
        let take = match window.iter().rposition(|&b| b == b'\n') {
            Some(i) => i + 1,
            None => rest
                .iter()
                .position(|&b| b == b'\n')
                .map_or(rest.len(), |i| i + 1),
        };
        let (piece, after) = rest.split_at(take);
        rest = after;
        Some(piece.strip_suffix(b"\n").unwrap_or(piece))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_end_at_lines_and_fit() {
        let batch = b"a:1|c\nbb:2|c\nccc:3|c\n";
        let got: Vec<&[u8]> = datagrams(batch, 13).collect();
        assert_eq!(got, vec![&b"a:1|c\nbb:2|c"[..], &b"ccc:3|c"[..]]);
        let one: Vec<&[u8]> = datagrams(b"long-line:1|c\n", 4).collect();
        assert_eq!(one, vec![&b"long-line:1|c"[..]]);
    }
}
