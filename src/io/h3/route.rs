//! QUIC datagrams routed by connection ID between the worker processes that share a UDP port.
//!
//! Each worker binds its own UDP socket on the port with `SO_REUSEPORT`, and the kernel picks a
//! socket by a hash of the datagram's address pair scaled to the group's size: when a worker
//! comes or goes (a recycle, a HUP), most open connections' datagrams start reaching another
//! worker, which does not know them. Those connections hung until their idle timeout and
//! their requests were lost. So:
//!
//! - every connection ID this process issues starts with its tag (its pid, 4 bytes:
//!   [`TaggedCids`]; the rest is quinn's own generator's);
//! - each endpoint has an inbox, a unix datagram socket in a directory only this user can
//!   enter (`$TMPDIR/sluicegate-h3-UID/PORT-PID`: [`Route::bind`]);
//! - a datagram whose destination connection ID carries another live worker's tag is sent to
//!   that worker's inbox with its addresses ([`Route::steer`]), where that worker's endpoint
//!   receives it as if from the wire (`runtime.rs`) and answers from its own socket on the same
//!   port;
//! - a worker that stops gracefully marks itself (`PORT-PID.drain`) and hands the first
//!   datagrams of new connections (long-header packets with an ID it did not issue) to a
//!   worker that is not stopping, chosen by the client's address so a client's Initials all
//!   go to one; with none, its endpoint refuses them (`conn.rs`).
//!
//! A tag in the clear makes a connection's IDs linkable to each other across a migration (RFC
//! 9000 §9.5 asks for unlinkable ones); routing needs it, as QUIC load balancers' server IDs
//! do. Without the directory (no writable temporary directory, or one owned by another user)
//! nothing is routed and each worker serves what the kernel gives it.

use std::fs;
use std::hash::{Hash, Hasher};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use quinn::udp::RecvMeta;
use quinn_proto::{ConnectionId, ConnectionIdGenerator, HashedConnectionIdGenerator, InvalidCid};

/// The tag's length: the first bytes of every connection ID this process issues.
const TAG_LEN: usize = 4;
/// The connection IDs' length: the tag and quinn's 8-byte hashed ID.
pub const CID_LEN: usize = TAG_LEN + 8;
/// A routed datagram's header: flags, stride, source port, source and destination address.
const HEADER: usize = 38;
/// The most a routed datagram carries (a GRO batch).
const MOST: usize = 64 * 1024 + HEADER;

fn own_tag() -> [u8; TAG_LEN] {
    std::process::id().to_be_bytes()
}

/// Connection IDs that start with this process's tag.
pub struct TaggedCids(HashedConnectionIdGenerator);

impl TaggedCids {
    pub fn new() -> TaggedCids {
        TaggedCids(HashedConnectionIdGenerator::new())
    }
}

impl ConnectionIdGenerator for TaggedCids {
    fn generate_cid(&mut self) -> ConnectionId {
        let inner = self.0.generate_cid();
        let mut bytes = [0u8; CID_LEN];
        bytes[..TAG_LEN].copy_from_slice(&own_tag());
        bytes[TAG_LEN..].copy_from_slice(&inner);
        ConnectionId::new(&bytes)
    }

    fn validate(&self, cid: &ConnectionId) -> Result<(), InvalidCid> {
        if cid.len() != CID_LEN {
            return Err(InvalidCid);
        }
        self.0.validate(&ConnectionId::new(&cid[TAG_LEN..]))
    }

    fn cid_len(&self) -> usize {
        CID_LEN
    }

    fn cid_lifetime(&self) -> Option<std::time::Duration> {
        None
    }
}

/// An endpoint's inbox and where the other workers' are.
pub struct Route {
    dir: PathBuf,
    port: u16,
    pub inbox: mio::net::UnixDatagram,
    draining: AtomicBool,
    /// The receive scratch (a routed datagram and its header).
    scratch: Mutex<Vec<u8>>,
}

impl Route {
    /// The inbox of the endpoint on `port`; `None` when there is no private directory for it.
    pub fn bind(port: u16) -> Option<Route> {
        let dir = private_dir()?;
        let path = dir.join(format!("{port}-{}", std::process::id()));
        let _ = fs::remove_file(&path);
        let _ = fs::remove_file(path.with_extension("drain"));
        let inbox = mio::net::UnixDatagram::bind(&path).ok()?;
        Some(Route {
            dir,
            port,
            inbox,
            draining: AtomicBool::new(false),
            scratch: Mutex::new(vec![0; MOST]),
        })
    }

    fn inbox_of(&self, pid: u32) -> PathBuf {
        self.dir.join(format!("{}-{pid}", self.port))
    }

    /// A graceful stop began: new connections go to the other workers from now on.
    pub fn drain(&self) {
        if !self.draining.swap(true, Ordering::AcqRel) {
            let marker = self.inbox_of(std::process::id()).with_extension("drain");
            let _ = fs::write(marker, b"");
        }
    }

    /// Whether a worker not stopping is there to take new connections.
    pub fn successor_exists(&self) -> bool {
        !self.successors().is_empty()
    }

    /// The workers on this port that are not stopping (pids, sorted), this one aside.
    fn successors(&self) -> Vec<u32> {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let prefix = format!("{}-", self.port);
        let (mut live, mut drain) = (Vec::new(), Vec::new());
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
                continue;
            };
            match rest.split_once('.') {
                None => live.extend(rest.parse::<u32>().ok()),
                Some((pid, "drain")) => drain.extend(pid.parse::<u32>().ok()),
                _ => {}
            }
        }
        let own = std::process::id();
        live.retain(|p| *p != own && !drain.contains(p));
        live.sort_unstable();
        live
    }

    /// Where datagram `data` (from `meta`) belongs, if not here: a connection another worker
    /// issued the ID of, or, while draining, a new connection's. Sent there: `true`.
    pub fn steer(&self, meta: &RecvMeta, data: &[u8]) -> bool {
        let target = match destination_tag(data) {
            Some(tag) if tag == own_tag() => return false,
            Some(tag) => u32::from_be_bytes(tag),
            None if self.draining.load(Ordering::Acquire) && is_long_header(data) => {
                let next = self.successors();
                if next.is_empty() {
                    return false;
                }
                let mut h = std::collections::hash_map::DefaultHasher::new();
                meta.addr.hash(&mut h);
                next[(h.finish() % next.len() as u64) as usize]
            }
            None => return false,
        };
        let mut out = Vec::with_capacity(HEADER + data.len());
        out.extend_from_slice(&header(meta));
        out.extend_from_slice(data);
        match self.inbox.send_to(&out, self.inbox_of(target)) {
            Ok(_) => true,
            Err(e) => {
                if e.kind() == io::ErrorKind::ConnectionRefused {
                    // A worker gone: its inbox is left behind.
                    let _ = fs::remove_file(self.inbox_of(target));
                    let _ = fs::remove_file(self.inbox_of(target).with_extension("drain"));
                }
                false
            }
        }
    }

    /// One datagram routed here by another worker, into `buf`: its meta, `None` when the inbox
    /// is empty (`WouldBlock`) or the datagram does not fit.
    pub fn receive(&self, buf: &mut [u8]) -> io::Result<Option<RecvMeta>> {
        let mut scratch = self.scratch.lock().unwrap();
        let n = self.inbox.recv(&mut scratch)?;
        if n < HEADER || n - HEADER > buf.len() {
            return Ok(None);
        }
        let len = n - HEADER;
        buf[..len].copy_from_slice(&scratch[HEADER..n]);
        Ok(Some(parse_header(&scratch[..HEADER], len)))
    }
}

impl Drop for Route {
    fn drop(&mut self) {
        let path = self.inbox_of(std::process::id());
        let _ = fs::remove_file(path.with_extension("drain"));
        let _ = fs::remove_file(path);
    }
}

/// `$TMPDIR/sluicegate-h3-UID`, made if missing: only if this user owns it and no one else may
/// enter it (another user's inboxes there could feed this endpoint datagrams from any address).
fn private_dir() -> Option<PathBuf> {
    // SAFETY: geteuid has no preconditions, touches no memory of ours and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let dir = std::env::temp_dir().join(format!("sluicegate-h3-{uid}"));
    let _ = fs::DirBuilder::new().mode(0o700).create(&dir);
    let meta = fs::symlink_metadata(&dir).ok()?;
    let private = meta.is_dir() && meta.uid() == uid && meta.permissions().mode() & 0o077 == 0;
    private.then_some(dir)
}

fn is_long_header(data: &[u8]) -> bool {
    data.first().is_some_and(|b| b & 0x80 != 0)
}

/// The tag of a datagram's destination connection ID, if it has one of this scheme's length.
fn destination_tag(data: &[u8]) -> Option<[u8; TAG_LEN]> {
    let first = *data.first()?;
    let cid = if first & 0x80 == 0 {
        data.get(1..1 + CID_LEN)?
    } else {
        // Long header: version (4 bytes), then the ID's length and the ID.
        if usize::from(*data.get(5)?) != CID_LEN {
            return None;
        }
        data.get(6..6 + CID_LEN)?
    };
    cid[..TAG_LEN].try_into().ok()
}

fn put_ip(out: &mut [u8], ip: IpAddr) -> u8 {
    match ip {
        IpAddr::V4(v4) => {
            out[..4].copy_from_slice(&v4.octets());
            0
        }
        IpAddr::V6(v6) => {
            out.copy_from_slice(&v6.octets());
            1
        }
    }
}

fn header(meta: &RecvMeta) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    let mut flags = put_ip(&mut h[6..22], meta.addr.ip());
    if let Some(dst) = meta.dst_ip {
        flags |= 2 | (put_ip(&mut h[22..38], dst) << 2);
    }
    h[0] = flags;
    let stride = u16::try_from(meta.stride).unwrap_or(u16::MAX);
    h[2..4].copy_from_slice(&stride.to_be_bytes());
    h[4..6].copy_from_slice(&meta.addr.port().to_be_bytes());
    h
}

fn get_ip(b: &[u8], v6: bool) -> IpAddr {
    if v6 {
        let octets: [u8; 16] = b.try_into().expect("16 bytes");
        IpAddr::V6(Ipv6Addr::from(octets))
    } else {
        IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]))
    }
}

fn parse_header(h: &[u8], len: usize) -> RecvMeta {
    let flags = h[0];
    let stride = usize::from(u16::from_be_bytes([h[2], h[3]]));
    let port = u16::from_be_bytes([h[4], h[5]]);
    RecvMeta {
        addr: SocketAddr::new(get_ip(&h[6..22], flags & 1 != 0), port),
        len,
        stride: if stride == 0 { len } else { stride },
        ecn: None,
        dst_ip: (flags & 2 != 0).then(|| get_ip(&h[22..38], flags & 4 != 0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_carries_the_addresses_and_the_stride() {
        let meta = RecvMeta {
            addr: "[2001:db8::7]:4433".parse().unwrap(),
            len: 2400,
            stride: 1200,
            ecn: None,
            dst_ip: Some("127.0.0.1".parse().unwrap()),
        };
        let back = parse_header(&header(&meta), 2400);
        assert_eq!(
            (back.addr, back.dst_ip, back.stride),
            (meta.addr, meta.dst_ip, 1200)
        );
    }

    #[test]
    fn the_tag_is_read_from_short_and_long_headers() {
        let mut cids = TaggedCids::new();
        let cid = cids.generate_cid();
        assert!(cids.validate(&cid).is_ok());
        let mut short = vec![0x40];
        short.extend_from_slice(&cid);
        short.extend_from_slice(&[0; 20]);
        assert_eq!(destination_tag(&short), Some(own_tag()));
        let mut long = vec![0xc0, 0, 0, 0, 1, CID_LEN as u8];
        long.extend_from_slice(&cid);
        assert_eq!(destination_tag(&long), Some(own_tag()));
        long[5] = 8;
        assert_eq!(destination_tag(&long), None);
    }
}
