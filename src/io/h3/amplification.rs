//! RFC 9000 §8.1's limit on what a server sends to an address it has not validated: at most
//! three times the bytes it received from that address. quinn-proto keeps the count per
//! connection but lets a whole datagram go whenever any of the budget is left, so a first
//! flight and two full-size probes came to 3.4 times a client's 1,200-byte Initial. This holds
//! the limit datagram by datagram on the way to the socket ([`Budgets::may_send`], called by
//! `LoopUdp::try_send`): a datagram past it is dropped as a lost one, which quinn sends again
//! once more bytes came in (the client's own retransmission raises the budget).
//!
//! An address is tracked from a datagram that opens with an Initial packet carrying no token
//! (a token is quinn's to check: a Retry's, or one of a previous connection) until one of its
//! datagrams carries a Handshake or a 1-RTT packet, which validates it (§8.1). At most
//! `TRACKED_MOST` addresses at once, each forgotten `FORGET_AFTER` after its first datagram:
//! past that many handshakes under way, `--http3-retry-above` sends every new client a Retry
//! first, which is small and validates the address before any flight.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Addresses tracked at once (a flood beyond it meets the Retry of `--http3-retry-above`).
const TRACKED_MOST: usize = 4096;
/// An address's entry is dropped this long after its first datagram (past any handshake's
/// timeout, `--header-timeout` at most a minute by default).
const FORGET_AFTER: Duration = Duration::from_secs(60);
/// RFC 9000 §8.1: "an endpoint MUST limit the amount of data it sends to the unvalidated
/// address to three times the amount of data received from that address".
const FACTOR: u64 = 3;

/// What one received datagram says of its sender's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Seen {
    /// A Handshake or 1-RTT packet, or an Initial with a token: validated (or quinn's to judge).
    Validates,
    /// An Initial without a token first, and nothing that validates.
    NewInitial,
    /// Anything else (0-RTT alone, a packet of a version this does not read).
    Other,
}

#[derive(Debug)]
struct Budget {
    received: u64,
    sent: u64,
    since: Instant,
}

/// The unvalidated addresses of one UDP socket and what went each way.
#[derive(Debug, Default)]
pub(super) struct Budgets {
    map: Mutex<HashMap<SocketAddr, Budget>>,
    /// Entries in `map`: while none, neither direction takes the lock.
    tracked: AtomicUsize,
}

impl Budgets {
    /// A datagram `data` came from `from`.
    pub(super) fn received(&self, from: SocketAddr, data: &[u8]) {
        let seen = classify(data);
        if seen != Seen::NewInitial && self.tracked.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut map = self.map.lock().unwrap();
        match seen {
            Seen::Validates => {
                map.remove(&from);
            }
            Seen::NewInitial | Seen::Other => {
                if let Some(b) = map.get_mut(&from) {
                    b.received += data.len() as u64;
                } else if seen == Seen::NewInitial {
                    let now = Instant::now();
                    if map.len() >= TRACKED_MOST {
                        map.retain(|_, b| now.duration_since(b.since) < FORGET_AFTER);
                    }
                    if map.len() < TRACKED_MOST {
                        map.insert(
                            from,
                            Budget {
                                received: data.len() as u64,
                                sent: 0,
                                since: now,
                            },
                        );
                    }
                }
            }
        }
        self.tracked.store(map.len(), Ordering::Relaxed);
    }

    /// May `len` bytes go to `to` now? Counted when they may.
    pub(super) fn may_send(&self, to: SocketAddr, len: usize) -> bool {
        if self.tracked.load(Ordering::Relaxed) == 0 {
            return true;
        }
        let mut map = self.map.lock().unwrap();
        let Some(b) = map.get_mut(&to) else {
            return true;
        };
        if b.since.elapsed() >= FORGET_AFTER {
            map.remove(&to);
            self.tracked.store(map.len(), Ordering::Relaxed);
            return true;
        }
        if b.sent + len as u64 > FACTOR * b.received {
            return false;
        }
        b.sent += len as u64;
        true
    }
}

/// Walk the QUIC packets coalesced in one datagram (RFC 9000 §12.2, the long header of §17.2;
/// versions 1 and its drafts, whose packet types share one numbering).
pub(super) fn classify(data: &[u8]) -> Seen {
    let mut rest = data;
    let mut new_initial = false;
    while let Some(&first) = rest.first() {
        if first & 0x80 == 0 {
            if rest.len() == data.len() {
                return Seen::Validates; // a short header: 1-RTT keys, the handshake went through
            }
            break; // after long-header packets: padding, or a 1-RTT packet they decide for
        }
        let Some(version) = rest.get(1..5) else { break };
        let version = u32::from_be_bytes([version[0], version[1], version[2], version[3]]);
        if version != 1 && version >> 8 != 0x00ff_0000 {
            break; // version negotiation, or a version quinn does not speak
        }
        let kind = (first >> 4) & 0x3;
        let Some(after_ids) = skip_ids(rest) else {
            break;
        };
        let mut i = after_ids;
        match kind {
            0 => {
                let Some((token, n)) = varint(&rest[i..]) else {
                    break;
                };
                if token > 0 {
                    return Seen::Validates;
                }
                new_initial = true;
                i += n;
            }
            2 => return Seen::Validates,
            3 => break, // Retry: a server's, never a client's
            _ => {}
        }
        let Some((len, n)) = rest.get(i..).and_then(varint) else {
            break;
        };
        let end = i + n + len as usize;
        rest = rest.get(end..).unwrap_or(&[]);
    }
    if new_initial {
        Seen::NewInitial
    } else {
        Seen::Other
    }
}

/// The offset after a long header's first byte, version and both connection IDs.
fn skip_ids(p: &[u8]) -> Option<usize> {
    let dcid = *p.get(5)? as usize;
    let scid_at = 6 + dcid;
    let scid = *p.get(scid_at)? as usize;
    let end = scid_at + 1 + scid;
    (end <= p.len()).then_some(end)
}

/// A QUIC variable-length integer (RFC 9000 §16): its value and length.
fn varint(p: &[u8]) -> Option<(u64, usize)> {
    let first = *p.first()?;
    let len = 1usize << (first >> 6);
    let bytes = p.get(..len)?;
    let mut v = u64::from(first & 0x3f);
    for &b in &bytes[1..] {
        v = (v << 8) | u64::from(b);
    }
    Some((v, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A v1 long-header packet of `kind` with a `token` (Initial only) and `payload` bytes.
    fn long(kind: u8, token: &[u8], payload: usize) -> Vec<u8> {
        let mut p = vec![0xc0 | (kind << 4), 0, 0, 0, 1, 8];
        p.extend_from_slice(&[7; 8]);
        p.push(0);
        if kind == 0 {
            p.push(token.len() as u8);
            p.extend_from_slice(token);
        }
        p.extend_from_slice(&[0x40 | (payload >> 8) as u8, payload as u8]);
        p.extend(std::iter::repeat_n(0u8, payload));
        p
    }

    #[test]
    fn datagrams_are_told_apart_by_their_packets() {
        let initial = long(0, &[], 1182);
        assert_eq!(classify(&initial), Seen::NewInitial);
        assert_eq!(classify(&long(0, b"token", 100)), Seen::Validates);
        let mut coalesced = long(0, &[], 40);
        coalesced.extend(long(2, &[], 60));
        assert_eq!(classify(&coalesced), Seen::Validates, "Initial + Handshake");
        assert_eq!(
            classify(&[0x41, 1, 2, 3]),
            Seen::Validates,
            "a short header"
        );
        let mut padded = long(0, &[], 1000);
        padded.extend([0u8; 182]);
        assert_eq!(
            classify(&padded),
            Seen::NewInitial,
            "zeros after an Initial are padding"
        );
        assert_eq!(classify(&long(1, &[], 30)), Seen::Other, "0-RTT alone");
        assert_eq!(
            classify(&[0xc0, 0, 0, 0, 0, 0]),
            Seen::Other,
            "version negotiation"
        );
        assert_eq!(classify(&[0xc0, 0, 0, 0]), Seen::Other, "cut short");
    }

    #[test]
    fn an_unvalidated_address_gets_three_times_what_it_sent_datagram_by_datagram() {
        let b = Budgets::default();
        let client: SocketAddr = "192.0.2.7:4433".parse().unwrap();
        let other: SocketAddr = "192.0.2.8:4433".parse().unwrap();
        assert!(b.may_send(client, 1200), "not tracked: no limit");
        b.received(client, &long(0, &[], 1182)); // 1,200 bytes
        let initial = long(0, &[], 1182).len();
        assert_eq!(initial, 1200);
        assert!(b.may_send(client, 1200) && b.may_send(client, 472));
        assert!(b.may_send(client, 1200));
        assert!(!b.may_send(client, 1200), "4,072 > 3,600: dropped");
        assert!(b.may_send(client, 728), "what is left still goes");
        assert!(b.may_send(other, 1200), "another address is not limited");
        b.received(client, &long(0, &[], 1182)); // the client's retransmission
        assert!(b.may_send(client, 1200));
        let mut finished = long(0, &[], 40);
        finished.extend(long(2, &[], 60));
        b.received(client, &finished);
        assert!(b.may_send(client, 60_000), "validated: no limit");
        assert_eq!(b.tracked.load(Ordering::Relaxed), 0);
    }
}
