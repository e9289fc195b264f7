//! What a uwsgi packet says beyond the HTTP request itself ([`UwsgiFacts`]): the proxy's view
//! of the connection (the client's address and port, the server's name and port, the scheme),
//! kept as sent and read into the same [`Resolved`] overrides a trusted proxy's forwarding
//! headers give. Apart from the packet parser (`uwsgi.rs`), which fills it, because it is
//! read later, by the bridge, once the hop is known to be trusted.

use std::net::IpAddr;
use std::ops::Range;

use crate::forwarded::{Resolved, Scheme};

/// The four values' bytes kept in the facts themselves up to this many (nginx's usual
/// `127.0.0.1`, a port, a server name, a port: about 30): no allocation of their own.
const FACTS_INLINE: usize = 64;

/// What the packet says beyond the HTTP request itself: the proxy's view of the connection.
///
/// The four values are kept one after another in one buffer: `inline` when they fit, else
/// one allocation (not one each: nginx sends all four on every request).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UwsgiFacts {
    /// REMOTE_ADDR, REMOTE_PORT, SERVER_NAME and SERVER_PORT as sent, where `spans` says:
    /// in `inline` when together they fit it, else in `text`.
    inline: [u8; FACTS_INLINE],
    text: Vec<u8>,
    /// Where each of them is in the buffer, in that order (`None`: not sent).
    spans: [Option<Range<u32>>; 4],
    /// "https" if HTTPS is "on"/"1" (case-insensitive) or UWSGI_SCHEME / REQUEST_SCHEME is "https"; "http" if one of them says http; None if none is sent.
    pub scheme: Option<&'static str>,
}

/// Bytes as text, if they are UTF-8.
pub(super) fn text(v: Option<&[u8]>) -> Option<&str> {
    v.and_then(|b| std::str::from_utf8(b).ok())
}

/// A port as `str::parse::<u16>` reads it (`None`: not UTF-8, as for [`text`]); the one to
/// five plain digits nginx sends without the UTF-8 check and the generic parser.
pub(super) fn port(v: &[u8]) -> Option<Result<u16, ()>> {
    if (1..=5).contains(&v.len()) && v.iter().all(u8::is_ascii_digit) {
        let n = v.iter().fold(0u32, |n, &d| n * 10 + u32::from(d - b'0'));
        if let Ok(p) = u16::try_from(n) {
            return Some(Ok(p));
        }
    }
    text(Some(v)).map(|s| s.parse::<u16>().map_err(|_| ()))
}

/// An IPv4 address in the form nginx writes it (`127.0.0.1`: four decimal numbers up to 255,
/// no leading zero), read without the UTF-8 check and the generic address parser, which stayed
/// calls; anything else is `None` and left to `str::parse::<IpAddr>`, which reads every such
/// address the same and the rest (IPv6) too.
pub(super) fn ipv4(v: &[u8]) -> Option<std::net::Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut parts = v.split(|&b| b == b'.');
    for octet in &mut octets {
        let part = parts.next()?;
        if part.is_empty() || part.len() > 3 || (part.len() > 1 && part[0] == b'0') {
            return None;
        }
        let mut n = 0u16;
        for &d in part {
            if !d.is_ascii_digit() {
                return None;
            }
            n = n * 10 + u16::from(d - b'0');
        }
        *octet = u8::try_from(n).ok()?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some(std::net::Ipv4Addr::from(octets))
}

impl UwsgiFacts {
    /// The facts of these variables' values (`None`: not sent) and scheme.
    pub fn new(
        remote_addr: Option<&[u8]>,
        remote_port: Option<&[u8]>,
        server_name: Option<&[u8]>,
        server_port: Option<&[u8]>,
        scheme: Option<&'static str>,
    ) -> UwsgiFacts {
        let values = [remote_addr, remote_port, server_name, server_port];
        let mut total = 0;
        for v in values.iter().flatten() {
            total += v.len();
        }
        let mut facts = UwsgiFacts {
            inline: [0; FACTS_INLINE],
            text: Vec::new(),
            spans: Default::default(), // (`array::map`: a call)
            scheme,
        };
        if total > FACTS_INLINE {
            facts.text.reserve_exact(total);
        }
        let mut end = 0;
        for (i, v) in values.into_iter().enumerate() {
            if let Some(v) = v {
                let start = end;
                end += v.len();
                if total > FACTS_INLINE {
                    facts.text.extend_from_slice(v);
                } else {
                    facts.inline[start..end].copy_from_slice(v);
                }
                // A packet is under 64 KiB: its values together fit a u32.
                facts.spans[i] = Some(start as u32..end as u32);
            }
        }
        facts
    }

    fn value(&self, i: usize) -> Option<&[u8]> {
        let r = self.spans[i].as_ref()?;
        let buf = if self.text.is_empty() {
            &self.inline[..]
        } else {
            &self.text[..]
        };
        buf.get(r.start as usize..r.end as usize)
    }

    /// REMOTE_ADDR as sent (unvalidated bytes; [`UwsgiFacts::resolved`] parses it).
    pub fn remote_addr(&self) -> Option<&[u8]> {
        self.value(0)
    }

    /// REMOTE_PORT as sent.
    pub fn remote_port(&self) -> Option<&[u8]> {
        self.value(1)
    }

    /// SERVER_NAME as sent.
    pub fn server_name(&self) -> Option<&[u8]> {
        self.value(2)
    }

    /// SERVER_PORT as sent.
    pub fn server_port(&self) -> Option<&[u8]> {
        self.value(3)
    }

    /// The facts as the same overrides a trusted proxy's forwarding headers give (REMOTE_ADDR
    /// and REMOTE_PORT, the scheme, SERVER_NAME and SERVER_PORT); values that do not parse
    /// are left out and counted in `malformed`.
    pub fn resolved(&self) -> Resolved {
        let mut r = Resolved::default();
        if let Some(addr) = self.remote_addr() {
            let parsed = match ipv4(addr) {
                Some(v4) => Some(IpAddr::V4(v4)),
                None => text(Some(addr)).and_then(|s| s.parse::<IpAddr>().ok()),
            };
            match parsed {
                Some(ip) => {
                    let port = self.remote_port().and_then(port).and_then(Result::ok);
                    r.client = Some((ip, port));
                }
                None if addr.is_empty() => {}
                None => r.malformed += 1,
            }
        }
        r.scheme = match self.scheme {
            Some("https") => Some(Scheme::Https),
            Some("http") => Some(Scheme::Http),
            _ => None,
        };
        r.server_name = self
            .server_name()
            .filter(|n| !n.is_empty())
            .map(<[u8]>::to_vec);
        match self.server_port().and_then(port) {
            Some(Ok(p)) => r.port = Some(p),
            Some(Err(())) => r.malformed += 1,
            None => {}
        }
        r
    }
}
