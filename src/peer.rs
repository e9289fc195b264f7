//! Who a connection is from: plain data, on the bottom floor, read by the loop (which learns
//! it at accept or from a PROXY header), by the bridge (REMOTE_ADDR) and by the access log;
//! and the Python strings the bridge makes of it once per connection ([`PeerStrings`], kept
//! on the connection by the loop, which only holds them).

use std::net::{IpAddr, SocketAddr};

use pyo3::types::PyString;
use pyo3::Py;

/// Where a client connected from, for REMOTE_ADDR / REMOTE_PORT and the access log.
#[derive(Debug, Clone)]
pub enum Peer {
    Ip(SocketAddr),
    /// A unix-socket client has no address; REMOTE_ADDR is empty.
    Unix,
}

impl Peer {
    /// The address, for the layers that know no sockets (None: a unix-socket client).
    pub fn ip(&self) -> Option<IpAddr> {
        match self {
            Peer::Ip(a) => Some(a.ip()),
            Peer::Unix => None,
        }
    }
}

/// REMOTE_ADDR / REMOTE_PORT of one connection, and its TLS facts (`SSL_*`), as Python
/// strings: made by the bridge at the connection's first request (`wsgi::environ`), set by
/// every one (making the five `SSL_*` keys and values per request was 3.5 % of a TLS hello
/// world's loop thread, `perf`). The loop keeps them on the connection (`Conn::upper`; an HTTP/2 connection's
/// streams share them) and drops them when the connection goes or its peer changes.
pub struct PeerStrings {
    pub addr: Py<PyString>,
    pub port: Option<Py<PyString>>,
    /// `None` until a request carries the connection's facts (always its first on TLS).
    pub tls: Option<Vec<(Py<PyString>, Py<PyString>)>>,
}

/// How the loop holds a connection's [`PeerStrings`]: boxed behind this trait, whose one
/// implementation is the bridge's, so that the I/O layer's code never drops a Python object
/// itself (the drop is the bridge's code, reached through the box; `io`'s unit tests link no
/// Python).
pub trait PeerCache: Send {
    fn strings(&mut self) -> &mut PeerStrings;
}
