//! The PROXY protocol: the header that a proxy such as HAProxy sends once, before the first
//! request on a connection, to say which client it is relaying for. Owns the parsing of both
//! versions of HAProxy's `doc/proxy-protocol.txt`: v1 (one line of text) and v2 (binary).
//!
//! Strict, as the spec asks: a header that does not match it exactly is an error, never
//! guessed at, and the caller closes the connection. The spec also forbids guessing whether a
//! header is there at all, so bytes that match neither signature are [`ProxyError::Missing`]
//! (an error too), not a request to pass through: a listener either expects the header on
//! every connection or on none.
//!
//! Sans-I/O like the rest of the crate: [`parse`] is given the bytes received so far and says
//! "need more", "done after n bytes" or "refused", and the answer never depends on how the
//! bytes were split across reads.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

/// What the header says about the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProxiedAddr {
    /// The real client (source) and the address it connected to (destination).
    Proxied {
        source: SocketAddr,
        destination: SocketAddr,
    },
    /// v1 `UNKNOWN`, v2 `LOCAL` command, or v2 AF_UNSPEC / AF_UNIX: keep the connection's own
    /// peer address.
    Unknown,
}

/// Why a connection's first bytes are not an acceptable PROXY header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyError {
    /// Not a PROXY header at all (the first bytes match neither signature).
    Missing,
    /// A PROXY header that breaks the spec; the str says what, for a debug log.
    Malformed(&'static str),
}

/// The longest header accepted, so the I/O layer can size its buffer: once `MAX_HEADER` bytes
/// are buffered, [`parse`] never asks for more. A v1 line is at most [`V1_MAX_LINE`] (107)
/// bytes; a v2 header is its 16 fixed bytes plus a 16-bit length, so at most 16 + 65535. All
/// of that range is accepted, since TLVs (e.g. a client certificate) may legitimately be large.
pub const MAX_HEADER: usize = V2_FIXED_LEN + u16::MAX as usize;

/// v1 starts with "PROXY" and exactly one space.
const V1_PREFIX: &[u8] = b"PROXY ";
/// The longest v1 line, CRLF included: the spec's worst case,
/// `PROXY UNKNOWN <39-char IPv6> <39-char IPv6> 65535 65535\r\n`.
const V1_MAX_LINE: usize = 107;
/// A port is at most "65535".
const V1_MAX_PORT_DIGITS: usize = 5;

/// The v2 signature; it holds a NUL and CRLFs so that no text protocol can start with it.
const V2_SIGNATURE: [u8; 12] = *b"\r\n\r\n\0\r\nQUIT\n";
/// Signature, version/command byte, family/transport byte, 2-byte length.
const V2_FIXED_LEN: usize = 16;
/// Offset of the version (high nibble) and command (low nibble) byte.
const V2_VER_CMD_AT: usize = 12;
/// Offset of the address family (high nibble) and transport (low nibble) byte.
const V2_FAMILY_AT: usize = 13;
/// Offset of the big-endian length of everything after the fixed 16 bytes.
const V2_LEN_AT: usize = 14;
/// The only version the spec lets a receiver accept.
const V2_VERSION: u8 = 0x2;
/// The proxy's own connection (a health check): the addresses are to be ignored.
const V2_CMD_LOCAL: u8 = 0x0;
/// A relayed connection: the addresses are the original client's.
const V2_CMD_PROXY: u8 = 0x1;

/// Family/transport bytes (section 2.2, "In practice, the following protocol bytes are
/// expected"); every other value is invalid.
const V2_UNSPEC: u8 = 0x00;
const V2_TCP4: u8 = 0x11;
const V2_UDP4: u8 = 0x12;
const V2_TCP6: u8 = 0x21;
const V2_UDP6: u8 = 0x22;
const V2_UNIX_STREAM: u8 = 0x31;
const V2_UNIX_DGRAM: u8 = 0x32;

/// Address block sizes: two addresses, then two ports for TCP.
const V2_ADDR_LEN_TCP4: usize = 2 * 4 + 2 * 2;
const V2_ADDR_LEN_TCP6: usize = 2 * 16 + 2 * 2;
const V2_ADDR_LEN_UNIX: usize = 2 * 108;

/// A TLV's type byte and 2-byte big-endian value length.
const V2_TLV_HEADER_LEN: usize = 3;

/// Parse a PROXY header at the start of `buf`.
///
/// `Ok(None)`: more bytes are needed (`buf` is a valid prefix so far).
/// `Ok(Some((addr, n)))`: a complete header of `n` bytes; the request starts at `buf[n..]`.
/// `Err`: not a PROXY header, or a malformed one; close the connection.
///
/// Errors are reported as soon as the bytes seen prove them, so the answer for a buffer never
/// changes when more bytes arrive, and is never `Ok(None)` once [`MAX_HEADER`] bytes are in.
pub fn parse(buf: &[u8]) -> Result<Option<(ProxiedAddr, usize)>, ProxyError> {
    if buf.starts_with(&V2_SIGNATURE) {
        parse_v2(buf)
    } else if buf.starts_with(V1_PREFIX) {
        parse_v1(buf)
    } else if V2_SIGNATURE.starts_with(buf) || V1_PREFIX.starts_with(buf) {
        // Too short to tell yet (this includes an empty buffer).
        Ok(None)
    } else {
        Err(ProxyError::Missing)
    }
}

/// v1: `buf` starts with "PROXY ". Nothing is decoded before the CRLF is in (as the spec asks),
/// but a bare CR or LF, or 107 bytes without a CRLF, is refused at once.
fn parse_v1(buf: &[u8]) -> Result<Option<(ProxiedAddr, usize)>, ProxyError> {
    let window = buf.get(..V1_MAX_LINE).unwrap_or(buf);
    let Some(eol) = memchr::memchr2(b'\r', b'\n', window) else {
        return if buf.len() >= V1_MAX_LINE {
            Err(malformed("v1 line has no CRLF in its first 107 bytes"))
        } else {
            Ok(None)
        };
    };
    // The line, CRLF included, is eol + 2 bytes.
    let len = eol + 2;
    if window.get(eol) == Some(&b'\n') {
        return Err(malformed("v1 line ends in a bare LF"));
    }
    if len > V1_MAX_LINE {
        return Err(malformed("v1 line has no CRLF in its first 107 bytes"));
    }
    match buf.get(eol + 1) {
        None => Ok(None),
        Some(b'\n') => {
            let line = buf.get(V1_PREFIX.len()..eol).unwrap_or_default();
            Ok(Some((parse_v1_line(line)?, len)))
        }
        Some(_) => Err(malformed("v1 line has a CR not followed by LF")),
    }
}

/// The v1 line between "PROXY " and the CRLF: fields separated by exactly one space each.
fn parse_v1_line(line: &[u8]) -> Result<ProxiedAddr, ProxyError> {
    let mut fields = line.split(|&b| b == b' ');
    let v6 = match fields.next() {
        Some(b"TCP4") => false,
        Some(b"TCP6") => true,
        // Whatever follows "UNKNOWN " is to be ignored, says the spec; but "UNKNOWNX" is not
        // the UNKNOWN keyword.
        Some(b"UNKNOWN") => return Ok(ProxiedAddr::Unknown),
        _ => return Err(malformed("v1 protocol is not TCP4, TCP6 or UNKNOWN")),
    };
    let mut next = |what| fields.next().ok_or(malformed(what));
    let src = next("v1 line has no source address")?;
    let dst = next("v1 line has no destination address")?;
    let src_port = next("v1 line has no source port")?;
    let dst_port = next("v1 line has no destination port")?;
    if fields.next().is_some() {
        // Also catches a trailing space before the CRLF.
        return Err(malformed("v1 line has more than six fields"));
    }
    let src_port = parse_v1_port(src_port).ok_or(malformed("v1 source port is invalid"))?;
    let dst_port = parse_v1_port(dst_port).ok_or(malformed("v1 destination port is invalid"))?;
    let (source, destination) = if v6 {
        let bad = malformed("v1 TCP6 address is not an IPv6 address");
        let src = parse_text::<Ipv6Addr>(src).ok_or(bad)?;
        let dst = parse_text::<Ipv6Addr>(dst).ok_or(bad)?;
        (
            SocketAddr::V6(SocketAddrV6::new(src, src_port, 0, 0)),
            SocketAddr::V6(SocketAddrV6::new(dst, dst_port, 0, 0)),
        )
    } else {
        let bad = malformed("v1 TCP4 address is not an IPv4 address");
        let src = parse_text::<Ipv4Addr>(src).ok_or(bad)?;
        let dst = parse_text::<Ipv4Addr>(dst).ok_or(bad)?;
        (
            SocketAddr::V4(SocketAddrV4::new(src, src_port)),
            SocketAddr::V4(SocketAddrV4::new(dst, dst_port)),
        )
    };
    Ok(ProxiedAddr::Proxied {
        source,
        destination,
    })
}

/// An address with std's parser. For IPv4 it is as strict as the spec (exactly four decimal
/// octets, no leading zeros). For IPv6 it also accepts an embedded dotted quad
/// (`::ffff:192.0.2.1`), which the spec's wording does not list but which HAProxy itself
/// sends (it formats with `inet_ntop`) when one side of a relayed connection is IPv4 and the
/// other IPv6; zone ids (`%eth0`) and brackets are refused.
fn parse_text<T: std::str::FromStr>(field: &[u8]) -> Option<T> {
    std::str::from_utf8(field).ok()?.parse().ok()
}

/// A v1 port: 1 to 5 ASCII digits, at most 65535, with no sign. Leading zeros ("080") are
/// refused, as the spec says, to avoid any confusion with octal; "0" itself is a valid port.
fn parse_v1_port(field: &[u8]) -> Option<u16> {
    if field.is_empty()
        || field.len() > V1_MAX_PORT_DIGITS
        || (field.len() > 1 && field.first() == Some(&b'0'))
    {
        return None;
    }
    let mut port: u32 = 0;
    for &b in field {
        if !b.is_ascii_digit() {
            return None;
        }
        port = port * 10 + u32::from(b - b'0');
    }
    u16::try_from(port).ok()
}

/// v2: `buf` starts with the 12-byte signature. Each fixed byte is checked as soon as it is in,
/// so that garbage is refused without waiting for a length's worth of bytes.
fn parse_v2(buf: &[u8]) -> Result<Option<(ProxiedAddr, usize)>, ProxyError> {
    let Some(&ver_cmd) = buf.get(V2_VER_CMD_AT) else {
        return Ok(None);
    };
    if ver_cmd >> 4 != V2_VERSION {
        return Err(malformed("v2 version is not 2"));
    }
    let command = ver_cmd & 0x0f;
    if command != V2_CMD_LOCAL && command != V2_CMD_PROXY {
        return Err(malformed("v2 command is neither LOCAL nor PROXY"));
    }
    let Some(&family) = buf.get(V2_FAMILY_AT) else {
        return Ok(None);
    };
    // The address block's size, or None when the payload is skipped unread. LOCAL: the spec
    // says to ignore the whole block, family included, so even an invalid family byte is fine
    // and TLVs cannot be located. AF_UNSPEC: there are no addresses to read, and as the block
    // has no defined size the TLVs cannot be located either.
    let addr_len = if command == V2_CMD_LOCAL {
        None
    } else {
        match family {
            V2_UNSPEC => None,
            V2_TCP4 => Some(V2_ADDR_LEN_TCP4),
            V2_TCP6 => Some(V2_ADDR_LEN_TCP6),
            // AF_UNIX has a defined block (two 108-byte paths); it is required in full, like
            // the inet ones, so that the TLVs after it can be checked, but it is not returned:
            // a unix socket path is no client address.
            V2_UNIX_STREAM => Some(V2_ADDR_LEN_UNIX),
            // A stream server cannot be relaying datagrams: the sender is misconfigured.
            V2_UDP4 | V2_UDP6 | V2_UNIX_DGRAM => return Err(malformed("datagram transport")),
            _ => return Err(malformed("v2 address family or transport is invalid")),
        }
    };
    let (Some(&len_hi), Some(&len_lo)) = (buf.get(V2_LEN_AT), buf.get(V2_LEN_AT + 1)) else {
        return Ok(None);
    };
    let len = usize::from(u16::from_be_bytes([len_hi, len_lo]));
    if addr_len.is_some_and(|addr_len| len < addr_len) {
        return Err(malformed("v2 length is shorter than its address block"));
    }
    let total = V2_FIXED_LEN + len;
    let Some(payload) = buf.get(V2_FIXED_LEN..total) else {
        return Ok(None);
    };
    let addr = match (addr_len, family) {
        (Some(_), V2_TCP4) => v2_tcp4(payload)?,
        (Some(_), V2_TCP6) => v2_tcp6(payload)?,
        _ => ProxiedAddr::Unknown,
    };
    if let Some(addr_len) = addr_len {
        skip_tlvs(payload.get(addr_len..).unwrap_or_default())?;
    }
    Ok(Some((addr, total)))
}

/// Source IPv4, destination IPv4, source port, destination port, all big-endian.
fn v2_tcp4(block: &[u8]) -> Result<ProxiedAddr, ProxyError> {
    let short = malformed("v2 length is shorter than its address block");
    let src = Ipv4Addr::from(bytes::<4>(block, 0).ok_or(short)?);
    let dst = Ipv4Addr::from(bytes::<4>(block, 4).ok_or(short)?);
    let src_port = u16::from_be_bytes(bytes(block, 8).ok_or(short)?);
    let dst_port = u16::from_be_bytes(bytes(block, 10).ok_or(short)?);
    Ok(ProxiedAddr::Proxied {
        source: SocketAddr::V4(SocketAddrV4::new(src, src_port)),
        destination: SocketAddr::V4(SocketAddrV4::new(dst, dst_port)),
    })
}

/// Source IPv6, destination IPv6, source port, destination port, all big-endian.
fn v2_tcp6(block: &[u8]) -> Result<ProxiedAddr, ProxyError> {
    let short = malformed("v2 length is shorter than its address block");
    let src = Ipv6Addr::from(bytes::<16>(block, 0).ok_or(short)?);
    let dst = Ipv6Addr::from(bytes::<16>(block, 16).ok_or(short)?);
    let src_port = u16::from_be_bytes(bytes(block, 32).ok_or(short)?);
    let dst_port = u16::from_be_bytes(bytes(block, 34).ok_or(short)?);
    Ok(ProxiedAddr::Proxied {
        source: SocketAddr::V6(SocketAddrV6::new(src, src_port, 0, 0)),
        destination: SocketAddr::V6(SocketAddrV6::new(dst, dst_port, 0, 0)),
    })
}

/// Walk the TLVs after the address block, which must tile it exactly. Their values are not
/// used: the spec lets a receiver ignore any TLV, and the CRC32C one is only to be verified by
/// receivers that support it (this one does not).
fn skip_tlvs(mut rest: &[u8]) -> Result<(), ProxyError> {
    while !rest.is_empty() {
        let [_tlv_type, len_hi, len_lo] =
            bytes(rest, 0).ok_or(malformed("v2 TLV header runs past the end"))?;
        let tlv_len = V2_TLV_HEADER_LEN + usize::from(u16::from_be_bytes([len_hi, len_lo]));
        rest = rest
            .get(tlv_len..)
            .ok_or(malformed("v2 TLV value runs past the end"))?;
    }
    Ok(())
}

/// The `N` bytes of `buf` at `at`, or None if they are not all there.
fn bytes<const N: usize>(buf: &[u8], at: usize) -> Option<[u8; N]> {
    buf.get(at..at.checked_add(N)?)?.try_into().ok()
}

fn malformed(what: &'static str) -> ProxyError {
    ProxyError::Malformed(what)
}

#[cfg(test)]
mod tests;
