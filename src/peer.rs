//! Who a connection is from: plain data, on the bottom floor, read by the loop (which learns
//! it at accept or from a PROXY header), by the bridge (REMOTE_ADDR) and by the access log.

use std::net::{IpAddr, SocketAddr};

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
