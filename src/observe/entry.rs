//! What one finished request tells its access log line: the fields borrowed from the request
//! ([`Entry`]), the response's headers when a format names one ([`LogExtras`]), and the
//! client address as text. Plain values shared by every format (`log_line`,
//! `gunicorn_format`).

use std::net::IpAddr;

use sluicegate_proto::RequestHead;

use super::timings::{End, Timings};

/// One request's line, its fields borrowed from the request.
pub struct Entry<'a> {
    pub head: &'a RequestHead,
    /// The client (after forwarding rules and the PROXY protocol); None: a unix-socket client.
    pub client: Option<IpAddr>,
    pub status: u16,
    pub body_bytes: u64,
    pub timings: Timings,
    pub end: End,
    /// The app ran inline on the event loop's thread (else on a pool thread, or no app).
    pub inline: Option<bool>,
    /// The response's headers, when the format names one (see `Format::names_extras`).
    pub extras: Option<&'a LogExtras>,
}

/// Environ variables kept for the log: (key lowercased, value as text, the value was a `str`).
pub type KeptEnviron = Vec<(String, String, bool)>;

/// What a format may name that the request head does not carry, kept only for a format that
/// names it: the response's headers as the app gave them (hop-by-hop ones dropped, gunicorn's
/// `{name}o`) and environ variables as the app left them (`{name}e`).
#[derive(Debug, Default)]
pub struct LogExtras {
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    /// (key lowercased, value as text, the value was a `str`): the keys the format names.
    environ: KeptEnviron,
    /// The environ was read (a request the server answered itself has none).
    environ_read: bool,
}

impl LogExtras {
    pub fn of<'h>(headers: impl Iterator<Item = (&'h [u8], &'h [u8])>) -> LogExtras {
        LogExtras {
            headers: headers.map(|(n, v)| (n.to_vec(), v.to_vec())).collect(),
            environ: Vec::new(),
            environ_read: false,
        }
    }

    /// The environ's variables a format names, read after the app's call.
    pub fn with_environ(mut self, kept: KeptEnviron) -> LogExtras {
        self.environ = kept;
        self.environ_read = true;
        self
    }

    /// Whether the environ was read for this request (else its variables are derived from the
    /// request: a request the server answered itself).
    pub fn has_environ(&self) -> bool {
        self.environ_read
    }

    /// The last value of response header `name` (gunicorn's atoms keep the last of repeated
    /// fields).
    pub fn value_of(&self, name: &[u8]) -> Option<&[u8]> {
        self.headers
            .iter()
            .rev()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    /// The response's headers as the app gave them (hop-by-hop ones dropped).
    pub fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.headers
            .iter()
            .map(|(n, v)| (n.as_slice(), v.as_slice()))
    }

    /// Environ variable `key` (any case), and whether it was a `str`.
    pub fn environ_value(&self, key: &[u8]) -> Option<(&str, bool)> {
        self.environ
            .iter()
            .rev()
            .find(|(k, _, _)| k.as_bytes().eq_ignore_ascii_case(key))
            .map(|(_, v, s)| (v.as_str(), *s))
    }
}

/// The client address as REMOTE_ADDR carries it (`unix` for a unix-socket client).
pub fn push_client(line: &mut Vec<u8>, client: Option<IpAddr>) {
    match client {
        // Four small numbers: cheaper than the formatter, which costs ~900 instructions.
        Some(IpAddr::V4(v4)) => {
            let mut text = [0u8; 15];
            let mut n = 0;
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    text[n] = b'.';
                    n += 1;
                }
                if octet >= 100 {
                    text[n] = b'0' + octet / 100;
                    n += 1;
                }
                if octet >= 10 {
                    text[n] = b'0' + octet / 10 % 10;
                    n += 1;
                }
                text[n] = b'0' + octet % 10;
                n += 1;
            }
            line.extend_from_slice(&text[..n]);
        }
        Some(ip) => {
            use std::io::Write;
            let _ = write!(line, "{ip}");
        }
        None => line.extend_from_slice(b"unix"),
    }
}
