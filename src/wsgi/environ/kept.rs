//! What the environ builder keeps between requests (`Kept`, under its one lock): header names
//! mapped once to their CGI keys (`HeaderKey`, `cgi_key`; interned for the names in
//! `REPEATING` and `INTERNED`), the short values that repeat from request to request
//! (`RepeatedValues`), and a connection's address and port strings (`PeerStrings::new`).

use pyo3::prelude::*;
use pyo3::types::PyString;

use super::latin1;
use crate::peer::{Peer, PeerCache, PeerStrings};
use crate::wsgi::short_table::{ShortTable, SHORT_MAX};

impl PeerCache for PeerStrings {
    fn strings(&mut self) -> &mut PeerStrings {
        self
    }
}

impl PeerStrings {
    /// A connection's strings. The address comes from the repeated values (behind a proxy
    /// every connection has the same one) and is written without `fmt`, as is the port: made
    /// with `to_string()` and a new string each, the two were about 1,700 instructions of each
    /// new connection's 17,500 (callgrind, `ab` without keep-alive). With many distinct
    /// clients, each new address takes a slot of the table that a repeated header value may
    /// have held: one string made again later, no more than before this table was used.
    pub(super) fn new(
        py: Python<'_>,
        peer: &Peer,
        empty: &Bound<'_, PyString>,
        values: &mut RepeatedValues,
    ) -> PeerStrings {
        match peer {
            Peer::Ip(a) => PeerStrings {
                addr: match a.ip() {
                    std::net::IpAddr::V4(v4) => {
                        let mut text = [0u8; 15];
                        let n = ipv4_text(v4.octets(), &mut text);
                        values.get(py, &text[..n])
                    }
                    ip => values.get(py, ip.to_string().as_bytes()),
                }
                .cast_into::<PyString>()
                .expect("latin-1 makes a str")
                .unbind(),
                port: Some(PyString::new(py, itoa::Buffer::new().format(a.port())).unbind()),
                tls: None,
            },
            // A unix-socket client has no address (PEP 3333 only requires the key).
            Peer::Unix => PeerStrings {
                addr: empty.clone().unbind(),
                port: None,
                tls: None,
            },
        }
    }
}

/// An IPv4 address in dotted decimal into `out` (at most 15 bytes); returns its length.
pub(super) fn ipv4_text(octets: [u8; 4], out: &mut [u8; 15]) -> usize {
    let mut n = 0;
    for (i, o) in octets.into_iter().enumerate() {
        if i > 0 {
            out[n] = b'.';
            n += 1;
        }
        let digits = match o {
            100.. => 3,
            10.. => 2,
            _ => 1,
        };
        let mut v = o;
        for k in (0..digits).rev() {
            out[n + k] = b'0' + v % 10;
            v /= 10;
        }
        n += digits;
    }
    n
}

/// A header name's place in the environ.
pub(super) enum HeaderKey {
    /// Dropped: the name contains '_' (it could spoof a '-' header once mapped to CGI form).
    Drop,
    /// The CGI key, whether the header's values are kept (`REPEATING`), and whether the key
    /// is interned (one key, one object: see `cgi_key`).
    Key(Py<PyString>, bool, bool),
}

impl HeaderKey {
    pub(super) fn clone_ref(&self, py: Python<'_>) -> HeaderKey {
        match self {
            HeaderKey::Drop => HeaderKey::Drop,
            HeaderKey::Key(k, r, i) => HeaderKey::Key(k.clone_ref(py), *r, *i),
        }
    }
}

/// Headers whose values a client sends the same on every request (a browser's Host,
/// User-Agent, Accept...; a balancer's X-Forwarded-Proto): their short values are kept as
/// strings instead of decoded and freed per request. Never a credential (Authorization,
/// Cookie): a kept value outlives its request.
const REPEATING: [&[u8]; 20] = [
    b"host",
    b"user-agent",
    b"accept",
    b"accept-encoding",
    b"accept-language",
    b"connection",
    b"content-type",
    b"cache-control",
    b"pragma",
    b"origin",
    b"upgrade-insecure-requests",
    b"sec-fetch-site",
    b"sec-fetch-mode",
    b"sec-fetch-dest",
    b"sec-fetch-user",
    b"sec-ch-ua-mobile",
    b"sec-ch-ua-platform",
    b"x-forwarded-proto",
    b"x-forwarded-host",
    b"x-requested-with",
];

/// Header names, besides [`REPEATING`], whose environ keys are interned (see `cgi_key`): the
/// ones apps commonly look up.
const INTERNED: [&[u8]; 9] = [
    b"content-length",
    b"authorization",
    b"cookie",
    b"referer",
    b"if-none-match",
    b"if-modified-since",
    b"range",
    b"x-forwarded-for",
    b"x-real-ip",
];

/// Slots of the table of repeated values, and of the table of header names (powers of two).
const VALUE_SLOTS: usize = 64;
pub(super) const NAME_SLOTS: usize = 128;

/// Strings for values that repeat from request to request: a value found is one reference
/// more to its string (about 20 instructions) instead of a new string decoded and later freed
/// (about 200). A `str` cannot change, so an app cannot tell a kept one from a fresh one.
pub(super) struct RepeatedValues {
    table: ShortTable<Py<PyString>>,
}

impl RepeatedValues {
    pub(super) fn new() -> RepeatedValues {
        RepeatedValues {
            table: ShortTable::new(VALUE_SLOTS),
        }
    }

    /// The string for `b` (latin-1), kept if short.
    pub(super) fn get<'py>(&mut self, py: Python<'py>, b: &[u8]) -> Bound<'py, PyAny> {
        if let Some(s) = self.table.find(b) {
            return s.bind(py).clone().into_any();
        }
        let s = latin1(py, b);
        if b.len() <= SHORT_MAX {
            let kept = s
                .clone()
                .cast_into::<PyString>()
                .expect("latin-1 makes a str");
            self.table.insert(b, kept.unbind());
        }
        s
    }
}

/// What the builder keeps between requests, under one lock.
pub(super) struct Kept {
    /// Header names and their place in the environ (a name longer than [`SHORT_MAX`] is
    /// mapped anew each time).
    pub(super) header_keys: ShortTable<HeaderKey>,
    pub(super) values: RepeatedValues,
    /// Per template (listener × variant), the copy last made for a proxy's server name and
    /// port ([`Proxied`]).
    pub(super) proxied: Vec<Option<Proxied>>,
}

/// A template with SERVER_PORT, and SERVER_NAME when named, set to what a proxy said (nginx's
/// uwsgi variables, the same on every request of its server block), so that each request's
/// copy carries them instead of having the entries set again (a lookup in the repeated values
/// and a dict store each, a request). One per template: another name or port makes a new one
/// in its place (a copy more than setting the two, for the request that changes it).
pub(super) struct Proxied {
    /// The server's name (None: not named; the template's SERVER_NAME stays).
    pub(super) name: Option<Vec<u8>>,
    pub(super) port: u16,
    pub(super) template: Py<pyo3::types::PyDict>,
}

/// `Content-Type` → CONTENT_TYPE, `Content-Length` → CONTENT_LENGTH, `X-Foo` → HTTP_X_FOO;
/// a name with '_' is dropped.
pub(super) fn cgi_key(py: Python<'_>, name: &[u8]) -> HeaderKey {
    if name.contains(&b'_') {
        return HeaderKey::Drop;
    }
    let mut key = String::with_capacity(name.len() + 5);
    if name.eq_ignore_ascii_case(b"content-type") {
        key.push_str("CONTENT_TYPE");
    } else if name.eq_ignore_ascii_case(b"content-length") {
        key.push_str("CONTENT_LENGTH");
    } else {
        key.push_str("HTTP_");
        for &b in name {
            key.push(if b == b'-' {
                '_'
            } else {
                b.to_ascii_uppercase() as char
            });
        }
    }
    let repeats = REPEATING.iter().any(|r| name.eq_ignore_ascii_case(r));
    // Only names from fixed lists are interned: an interned str is immortal on CPython 3.12,
    // so interning every name a client makes up would keep each one for the process's life
    // (300,000 new names: 31 MB). Other keys are plain strings, freed when the name table
    // lets them go.
    let interned = repeats || INTERNED.iter().any(|r| name.eq_ignore_ascii_case(r));
    let key = if interned {
        PyString::intern(py, &key)
    } else {
        PyString::new(py, &key)
    };
    HeaderKey::Key(key.unbind(), repeats, interned)
}

#[cfg(test)]
mod tests {
    use super::ipv4_text;

    #[test]
    fn ipv4_text_matches_display() {
        for octets in [
            [127, 0, 0, 1],
            [0, 0, 0, 0],
            [255, 255, 255, 255],
            [10, 99, 100, 9],
        ] {
            let mut out = [0u8; 15];
            let n = ipv4_text(octets, &mut out);
            assert_eq!(
                &out[..n],
                std::net::Ipv4Addr::from(octets).to_string().as_bytes()
            );
        }
    }
}
