//! Trusted forwarding: who the client really is, and which scheme and host it used, when a
//! proxy stands between it and the server. Owns the trust lists (`--forwarded-allow-ips`,
//! whose peers' scheme alone is believed, as gunicorn's setting means, and
//! `--forwarded-for-ips`, whose peers are believed whole: the caller, `wsgi::call_setup`,
//! picks the list and keeps what it allows) and the reading of
//! `X-Forwarded-For`/`-Proto`/`-Ssl`/`-Host`/`-Port` and of RFC 7239 `Forwarded`.
//!
//! Only one family of headers is read (`--forwarded-headers`): a proxy that sets one family
//! usually passes the other through from the client untouched, so reading both would let a
//! client spoof through a trusted proxy whatever the precedence.
//!
//! The client is found from the right: each proxy appends the address it received the request
//! from, so the right-most address that is not itself a trusted proxy is the client, and
//! everything left of it was written by that client (and may be invented). Values that do not
//! parse are never fatal: the header is ignored, and counted (`Resolved::malformed`).
//!
//! The trust decision is made here once, for every caller: whether a connection's sender may
//! send a PROXY header (the I/O layer asks before reading one), and whether a request's
//! forwarding headers are believed (the WSGI bridge asks, through [`forwarded`]). Both start
//! from the same [`Hop`]: after a PROXY header the hop is the client it named, or
//! [`Hop::Unnamed`] when it named none, whose headers are never believed (the PROXY header's
//! sender was the trusted proxy, not whoever wrote the request).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::RequestHead;

/// The addresses whose forwarding headers are believed (`--forwarded-allow-ips`,
/// `--forwarded-for-ips`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustList {
    /// `*`: every peer.
    any: bool,
    /// `unix`: peers on a unix socket.
    unix: bool,
    /// Networks: an address and a prefix length.
    nets: Vec<(IpAddr, u8)>,
}

impl TrustList {
    /// Parse a comma-separated list of addresses, CIDR networks, `unix` and `*`.
    pub fn parse(list: &str) -> Result<TrustList, String> {
        let mut t = TrustList::default();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match item {
                "*" => t.any = true,
                "unix" => t.unix = true,
                _ => {
                    let (addr, bits) = match item.split_once('/') {
                        Some((a, b)) => (a, Some(b)),
                        None => (item, None),
                    };
                    let ip: IpAddr = addr
                        .parse()
                        .map_err(|_| format!("{item:?} is not an address or network"))?;
                    let max = if ip.is_ipv4() { 32 } else { 128 };
                    let bits = match bits {
                        None => max,
                        Some(b) => b
                            .parse::<u8>()
                            .ok()
                            .filter(|&b| b <= max)
                            .ok_or_else(|| format!("{item:?}: bad prefix length"))?,
                    };
                    t.nets.push((ip, bits));
                }
            }
        }
        Ok(t)
    }

    /// No peer is trusted: forwarding headers are never read.
    pub fn is_empty(&self) -> bool {
        !self.any && !self.unix && self.nets.is_empty()
    }

    pub fn trusts_unix(&self) -> bool {
        self.any || self.unix
    }

    pub fn trusts(&self, ip: IpAddr) -> bool {
        if self.any {
            return true;
        }
        let ip = canonical(ip);
        self.nets
            .iter()
            .any(|&(net, bits)| in_network(ip, canonical(net), bits))
    }
}

/// Who handed the server a request, for the trust decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hop {
    /// An address: the socket's peer, or the client a PROXY header named.
    Ip(IpAddr),
    /// A peer on a unix socket.
    Unix,
    /// A PROXY header named no client (v1 `UNKNOWN`; v2 `LOCAL`, `AF_UNSPEC` or `AF_UNIX`):
    /// the proxy that sent it was trusted, but who wrote the requests is not known, so nothing
    /// they say about themselves is believed.
    Unnamed,
}

impl Hop {
    /// The hop of a connection whose peer is `ip` (None: a unix socket), as its PROXY header
    /// (if any) left it.
    pub fn of(ip: Option<IpAddr>, origin: PeerOrigin) -> Hop {
        match (origin, ip) {
            (PeerOrigin::ProxyUnnamed, _) => Hop::Unnamed,
            (_, Some(ip)) => Hop::Ip(ip),
            (_, None) => Hop::Unix,
        }
    }
}

/// How a connection's peer address was learned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PeerOrigin {
    /// From the socket (no PROXY header).
    #[default]
    Socket,
    /// From a PROXY header that named the client.
    ProxyNamed,
    /// A PROXY header named no client: the peer is still the proxy's address, but the proxy
    /// vouches for nothing the requests say ([`Hop::Unnamed`]).
    ProxyUnnamed,
}

/// THE trust decision: may `hop` speak for the client (send a PROXY header, forwarding
/// headers, uwsgi variables)? Only a hop in `--forwarded-allow-ips` may, and never an
/// [`Hop::Unnamed`] one. `trust` None: the option is off, nobody may.
pub fn trusted(trust: Option<&TrustList>, hop: Hop) -> bool {
    let Some(trust) = trust else { return false };
    match hop {
        Hop::Ip(ip) => trust.trusts(ip),
        Hop::Unix => trust.trusts_unix(),
        Hop::Unnamed => false,
    }
}

/// Whether a header of this name is a forwarding header (`Forwarded`, `X-Forwarded-*`): the
/// parser notes any in [`RequestHead::forwarding`], and [`forwarded`] reads only these.
#[inline]
pub fn is_forwarding_header(name: &[u8]) -> bool {
    match name.first() {
        Some(b'f' | b'F') => name.eq_ignore_ascii_case(b"forwarded"),
        Some(b'x' | b'X') => name.len() > 12 && name[..12].eq_ignore_ascii_case(b"x-forwarded-"),
        _ => false,
    }
}

/// What one request's forwarding headers establish, when `hop` is [`trusted`] and the head
/// carries any (None otherwise, or when they said nothing valid; `Resolved::malformed` counts
/// the ones ignored).
pub fn forwarded(
    head: &RequestHead,
    hop: Hop,
    trust: Option<&TrustList>,
    family: Family,
) -> Option<Resolved> {
    // Most requests carry none (the parser noted it): nothing to do.
    if !head.forwarding || !trusted(trust, hop) {
        return None;
    }
    let relevant: Vec<(&[u8], &[u8])> = head
        .headers()
        .filter(|(n, _)| is_forwarding_header(n))
        .collect();
    let r = resolve(relevant.iter().copied(), family, trust?);
    (r != Resolved::default()).then_some(r)
}

/// An IPv4-mapped IPv6 address (`::ffff:1.2.3.4`) is its IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => ip,
        },
        v4 => v4,
    }
}

fn in_network(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// Which family of forwarding headers a trusted peer's requests are read for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `X-Forwarded-For`, `X-Forwarded-Proto`, `X-Forwarded-Ssl`, `X-Forwarded-Host`,
    /// `X-Forwarded-Port` (what nginx and HAProxy configurations usually set).
    XForwarded,
    /// RFC 7239 `Forwarded`.
    Forwarded,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub fn as_str(&self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
    pub fn default_port(&self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

/// What the headers of one request from a trusted peer establish. `None` fields: nothing
/// (valid) was said, keep the connection's own value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    /// The client's address, and its port when the header gave one.
    pub client: Option<(IpAddr, Option<u16>)>,
    pub scheme: Option<Scheme>,
    /// The host the client asked for, `name[:port]` as sent.
    pub host: Option<Vec<u8>>,
    /// The port the client connected to (`X-Forwarded-Port`; uwsgi's SERVER_PORT).
    pub port: Option<u16>,
    /// The server's name as the proxy knows it (uwsgi's SERVER_NAME): SERVER_NAME only.
    pub server_name: Option<Vec<u8>>,
    /// Headers ignored because their value did not parse or contradicted itself.
    pub malformed: u32,
}

/// Most list entries looked at in one header (a longer list is cut from the left, where only
/// what the client itself wrote is).
const MAX_HOPS: usize = 64;

/// Read the forwarding headers of one request whose peer is trusted.
pub fn resolve<'a>(
    headers: impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone,
    family: Family,
    trust: &TrustList,
) -> Resolved {
    match family {
        Family::XForwarded => resolve_x_forwarded(headers, trust),
        Family::Forwarded => resolve_forwarded(headers, trust),
    }
}

/// The comma-separated items of every `name` header, in order (several headers are one list,
/// RFC 9110 §5.3), trimmed, empty items dropped.
fn list_items<'a>(
    headers: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    name: &'a [u8],
) -> Vec<&'a [u8]> {
    headers
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .flat_map(|(_, v)| v.split(|&b| b == b','))
        .map(trim)
        .filter(|s| !s.is_empty())
        .collect()
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &s[start..end]
}

fn resolve_x_forwarded<'a>(
    headers: impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone,
    trust: &TrustList,
) -> Resolved {
    let mut r = Resolved::default();
    let hops = list_items(headers.clone(), b"x-forwarded-for");
    if !hops.is_empty() {
        match client_from_right(hops.iter().map(|h| parse_node(h)), trust) {
            Some(c) => r.client = c,
            None => r.malformed += 1,
        }
    }
    // Scheme: X-Forwarded-Proto, else X-Forwarded-Ssl; all they say must agree.
    let mut schemes = Vec::new();
    for v in list_items(headers.clone(), b"x-forwarded-proto") {
        schemes.push(match v {
            v if v.eq_ignore_ascii_case(b"https") => Some(Scheme::Https),
            v if v.eq_ignore_ascii_case(b"http") => Some(Scheme::Http),
            _ => None,
        });
    }
    for v in list_items(headers.clone(), b"x-forwarded-ssl") {
        schemes.push(match v {
            v if v.eq_ignore_ascii_case(b"on") => Some(Scheme::Https),
            v if v.eq_ignore_ascii_case(b"off") => Some(Scheme::Http),
            _ => None,
        });
    }
    if let Some(&first) = schemes.first() {
        match first {
            Some(s) if schemes.iter().all(|&x| x == Some(s)) => r.scheme = Some(s),
            _ => r.malformed += 1,
        }
    }
    let hosts = list_items(headers.clone(), b"x-forwarded-host");
    if let Some(&first) = hosts.first() {
        if valid_host(first) && hosts.iter().all(|&h| h == first) {
            r.host = Some(first.to_vec());
        } else {
            r.malformed += 1;
        }
    }
    let ports = list_items(headers, b"x-forwarded-port");
    if let Some(&first) = ports.first() {
        match parse_port(first) {
            Some(p) if ports.iter().all(|&x| x == first) => r.port = Some(p),
            _ => r.malformed += 1,
        }
    }
    r
}

/// Walk hops from the right: the first one that is not a trusted proxy is the client. Returns
/// None if a hop it had to read does not parse; Some(None) if the client's address is
/// unknown (RFC 7239 `unknown` or an obfuscated name). If every hop is trusted, the left-most
/// is the client.
fn client_from_right(
    hops: impl DoubleEndedIterator<Item = Option<Node>> + ExactSizeIterator,
    trust: &TrustList,
) -> Option<Option<(IpAddr, Option<u16>)>> {
    let mut last = None;
    for hop in hops.rev().take(MAX_HOPS) {
        match hop? {
            Node::Ip(ip, port) => {
                last = Some((ip, port));
                if !trust.trusts(ip) {
                    return Some(last);
                }
            }
            Node::Hidden => return Some(None),
        }
    }
    Some(last)
}

/// One node of a forwarding list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    Ip(IpAddr, Option<u16>),
    /// RFC 7239 `unknown` or an obfuscated identifier (`_hidden`).
    Hidden,
}

/// `1.2.3.4`, `1.2.3.4:80`, `2001:db8::1`, `[2001:db8::1]`, `[2001:db8::1]:80`, `unknown`,
/// `_obfuscated` (RFC 7239 §6).
fn parse_node(s: &[u8]) -> Option<Node> {
    if s.eq_ignore_ascii_case(b"unknown") || s.first() == Some(&b'_') {
        return Some(Node::Hidden);
    }
    let s = std::str::from_utf8(s).ok()?;
    if let Some(rest) = s.strip_prefix('[') {
        let (ip, after) = rest.split_once(']')?;
        let ip: Ipv6Addr = ip.parse().ok()?;
        let port = match after {
            "" => None,
            p => Some(parse_port(p.strip_prefix(':')?.as_bytes())?),
        };
        return Some(Node::Ip(IpAddr::V6(ip), port));
    }
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(Node::Ip(ip, None));
    }
    let (ip, port) = s.split_once(':')?;
    let ip: Ipv4Addr = ip.parse().ok()?;
    Some(Node::Ip(IpAddr::V4(ip), Some(parse_port(port.as_bytes())?)))
}

fn parse_port(s: &[u8]) -> Option<u16> {
    if s.is_empty() || s.len() > 5 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok().filter(|&p| p > 0)
}

/// `name[:port]` where name is a DNS name, IPv4 address or bracketed IPv6 literal.
fn valid_host(h: &[u8]) -> bool {
    if h.is_empty() || h.len() > 255 {
        return false;
    }
    let (name, port) = crate::head::split_host_port(h);
    if let Some(p) = port {
        if parse_port(p).is_none() {
            return false;
        }
    }
    if let Some(inner) = name.strip_prefix(b"[").and_then(|n| n.strip_suffix(b"]")) {
        return std::str::from_utf8(inner)
            .ok()
            .and_then(|s| s.parse::<Ipv6Addr>().ok())
            .is_some();
    }
    !name.is_empty()
        && name
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_')
}

/// RFC 7239: elements separated by ',', each `pair *( ";" pair )`, `pair = token "=" value`,
/// value a token or a quoted-string.
fn resolve_forwarded<'a>(
    headers: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    trust: &TrustList,
) -> Resolved {
    let mut r = Resolved::default();
    let raw: Vec<&[u8]> = headers
        .filter(|(n, _)| n.eq_ignore_ascii_case(b"forwarded"))
        .map(|(_, v)| v)
        .collect();
    if raw.is_empty() {
        return r;
    }
    let mut elements = Vec::new();
    for v in raw {
        match parse_elements(v) {
            Some(mut e) => elements.append(&mut e),
            None => {
                r.malformed += 1;
                return r;
            }
        }
    }
    // The element of the hop from the client: the right-most whose `for` is not trusted (an
    // element without `for` is taken as not trusted: its proxy did not say).
    let mut chosen = None;
    for (i, el) in elements.iter().enumerate().rev().take(MAX_HOPS) {
        chosen = Some(i);
        match el.node {
            Some(Node::Ip(ip, _)) if trust.trusts(ip) => continue,
            _ => break,
        }
    }
    let Some(el) = chosen.map(|i| &elements[i]) else {
        return r;
    };
    if let Some(Node::Ip(ip, port)) = el.node {
        r.client = Some((ip, port));
    }
    r.scheme = el.scheme;
    r.host = el.host.clone();
    r.malformed += el.malformed;
    r
}

/// One `Forwarded` element, its parameters parsed.
#[derive(Debug, Default)]
struct Element {
    node: Option<Node>,
    scheme: Option<Scheme>,
    host: Option<Vec<u8>>,
    /// Parameters ignored in this element (bad values, repeated names).
    malformed: u32,
}

/// The elements of one header value; None if its syntax is broken.
fn parse_elements(v: &[u8]) -> Option<Vec<Element>> {
    let mut out = Vec::new();
    let mut el = Element::default();
    let mut seen: Vec<Vec<u8>> = Vec::new();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < v.len() && (v[*i] == b' ' || v[*i] == b'\t') {
            *i += 1;
        }
    };
    loop {
        skip_ws(&mut i);
        let start = i;
        while i < v.len() && crate::token::is_tchar(v[i]) {
            i += 1;
        }
        let name = v[start..i].to_ascii_lowercase();
        if name.is_empty() || v.get(i) != Some(&b'=') {
            return None;
        }
        i += 1;
        let value: Vec<u8> = if v.get(i) == Some(&b'"') {
            i += 1;
            let mut val = Vec::new();
            loop {
                match v.get(i)? {
                    b'"' => {
                        i += 1;
                        break;
                    }
                    b'\\' => {
                        val.push(*v.get(i + 1)?);
                        i += 2;
                    }
                    &b => {
                        val.push(b);
                        i += 1;
                    }
                }
            }
            val
        } else {
            let s = i;
            while i < v.len() && crate::token::is_tchar(v[i]) {
                i += 1;
            }
            v[s..i].to_vec()
        };
        if seen.contains(&name) {
            // RFC 7239 §4: a parameter must not occur more than once per element.
            el.malformed += 1;
        } else {
            apply(&mut el, &name, &value);
            seen.push(name);
        }
        skip_ws(&mut i);
        match v.get(i) {
            None => {
                out.push(el);
                return Some(out);
            }
            Some(b';') => i += 1,
            Some(b',') => {
                out.push(std::mem::take(&mut el));
                seen.clear();
                i += 1;
            }
            Some(_) => return None,
        }
    }
}

fn apply(el: &mut Element, name: &[u8], value: &[u8]) {
    match name {
        b"for" => match parse_node(value) {
            Some(n) => el.node = Some(n),
            None => el.malformed += 1,
        },
        b"proto" => {
            if value.eq_ignore_ascii_case(b"https") {
                el.scheme = Some(Scheme::Https);
            } else if value.eq_ignore_ascii_case(b"http") {
                el.scheme = Some(Scheme::Http);
            } else {
                el.malformed += 1;
            }
        }
        b"host" => {
            if valid_host(value) {
                el.host = Some(value.to_vec());
            } else {
                el.malformed += 1;
            }
        }
        _ => {} // `by` and extensions: not used
    }
}

#[cfg(test)]
mod tests;
