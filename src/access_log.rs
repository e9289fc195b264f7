//! The access log: one line per request in gunicorn's default format
//! `%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s"`, written with one write(2) to
//! the descriptor the Python front opened (a file, or stdout for `--access-log -`). Times are
//! UTC.

use std::os::fd::RawFd;

use sluicegate_proto::RequestHead;

use crate::http_date::http_date;
use crate::io::stream::Peer;

#[derive(Clone, Copy)]
pub struct AccessLog {
    fd: RawFd,
}

impl AccessLog {
    /// `None` when the log is off (fd < 0).
    pub fn new(fd: i32) -> Option<AccessLog> {
        (fd >= 0).then_some(AccessLog { fd })
    }

    pub fn write(&self, head: &RequestHead, peer: &Peer, status: u16, body_bytes: u64) {
        let mut line = Vec::with_capacity(256);
        match peer {
            Peer::Ip(a) => line.extend_from_slice(a.ip().to_string().as_bytes()),
            Peer::Unix => line.extend_from_slice(b"unix"),
        }
        line.extend_from_slice(b" - - [");
        // IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT" rearranged to "06/Nov/1994:08:49:37 +0000".
        let d = http_date();
        line.extend_from_slice(&d[5..7]);
        line.push(b'/');
        line.extend_from_slice(&d[8..11]);
        line.push(b'/');
        line.extend_from_slice(&d[12..16]);
        line.push(b':');
        line.extend_from_slice(&d[17..25]);
        line.extend_from_slice(b" +0000] \"");
        // Every field the client controls goes through one escaper (method, target, Referer,
        // User-Agent): a '"' or a control byte in any of them cannot forge a field or a line.
        push_escaped(&mut line, head.method());
        line.push(b' ');
        push_escaped(&mut line, head.target());
        line.push(b' ');
        line.extend_from_slice(head.version.as_str().as_bytes());
        line.extend_from_slice(b"\" ");
        line.extend_from_slice(status.to_string().as_bytes());
        line.push(b' ');
        if body_bytes == 0 {
            line.push(b'-');
        } else {
            line.extend_from_slice(body_bytes.to_string().as_bytes());
        }
        for name in [&b"referer"[..], b"user-agent"] {
            line.extend_from_slice(b" \"");
            push_escaped(&mut line, head.header(name).unwrap_or(b"-"));
            line.push(b'"');
        }
        line.push(b'\n');
        let mut rest = &line[..];
        while !rest.is_empty() {
            // SAFETY: `rest` is a valid readable slice; fd is the log descriptor owned by the
            // Python front for the server's lifetime.
            let n =
                unsafe { libc::write(self.fd, rest.as_ptr() as *const libc::c_void, rest.len()) };
            if n <= 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return;
            }
            rest = &rest[n as usize..];
        }
    }
}

/// Append `v` with `"` and `\\` backslash-escaped and every byte outside printable ASCII as
/// `\\xHH` (as nginx escapes its log fields), so a log line is always one line of printable
/// ASCII whose quoted fields cannot be closed early.
fn push_escaped(line: &mut Vec<u8>, v: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &b in v {
        match b {
            b'"' | b'\\' => line.extend_from_slice(&[b'\\', b]),
            0x20..=0x7e => line.push(b),
            _ => line.extend_from_slice(&[
                b'\\',
                b'x',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 15)],
            ]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::push_escaped;

    #[test]
    fn every_byte_is_escaped_or_printable() {
        let all: Vec<u8> = (0..=255u8).collect();
        let mut out = Vec::new();
        push_escaped(&mut out, &all);
        assert!(out.iter().all(|b| (0x20..=0x7e).contains(b)));
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("\\x00") && text.contains("\\x0a") && text.contains("\\xff"));
        assert!(text.contains("\\\"") && !text.replace("\\\"", "").contains('"'));
    }
}
