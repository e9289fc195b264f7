//! Who a connection is from: plain data, on the bottom floor, read by the loop (which learns
//! it at accept or from a PROXY header), by the bridge (REMOTE_ADDR) and by the access log.

use std::net::SocketAddr;

/// Where a client connected from, for REMOTE_ADDR / REMOTE_PORT and the access log.
#[derive(Debug, Clone)]
pub enum Peer {
    Ip(SocketAddr),
    /// A unix-socket client has no address; REMOTE_ADDR is empty.
    Unix,
}
