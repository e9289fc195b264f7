//! The WSGI environ (PEP 3333) built from a wire-neutral [`RequestHead`].
//!
//! Cost matters here (it is most of a hello-world request), so: every key is an interned
//! Python string created once; the constant part of the environ (wsgi.*, SERVER_NAME, ...) is a
//! per-listener template dict copied with one `dict.copy()`; header names are turned into CGI
//! keys once and cached; header values are decoded as latin-1 straight from the request bytes,
//! except the short values of headers that repeat from request to request (Host, User-Agent,
//! Accept...) and a short path, which are kept in a small table of strings ([`RepeatedValues`]).
//!
//! The template also holds every key each request sets (REQUEST_METHOD, PATH_INFO, ...,
//! wsgi.input), with placeholder values, and is made with room for about 20 more ([`TEMPLATE_GROWN_AT`]): a
//! copy of a dict keeps its table's size, so a request's environ replaces values in place and
//! adds its headers without the dict growing (a resize rebuilt the table once or twice per
//! request: about 1,000 instructions of a hello world's 23,700).

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyDict, PyString, PyTuple};
use pyo3::{ffi, intern};
use sluicegate_proto::forwarded::{Resolved, Scheme};
use sluicegate_proto::head::split_host_port;
use sluicegate_proto::path::percent_decode;
use sluicegate_proto::{RequestHead, Version};

use super::input::Input;
use super::short_table::{ShortTable, SHORT_MAX};
use crate::io::tls_link::TlsFacts;
use crate::peer::{Peer, PeerCache, PeerStrings};

mod kept;
use kept::{cgi_key, HeaderKey, Kept, Proxied, RepeatedValues, NAME_SLOTS};

/// `wsgi.early_hints` with `--early-hints false`, the templates' value: takes the hints and sends
/// nothing. A request's own (`StartResponse::early_hints`) replaces it when the option is on.
#[pyfunction]
fn early_hints_off(_headers: &Bound<'_, PyAny>) {}

/// The keys every request sets, present in the template with a placeholder value. (REMOTE_PORT
/// is removed for a unix-socket client, which has none.)
/// (`wsgi.early_hints` is set by the driver, as it is the request's `StartResponse` method.)
const PER_REQUEST_KEYS: [&str; 10] = [
    "REQUEST_METHOD",
    "PATH_INFO",
    "QUERY_STRING",
    "REQUEST_URI",
    "RAW_URI",
    "SERVER_PROTOCOL",
    "REMOTE_ADDR",
    "REMOTE_PORT",
    "wsgi.input",
    "wsgi.early_hints",
];

/// SERVER_SOFTWARE of every environ: this server's name and version.
pub const SERVER_SOFTWARE: &str = concat!("sluicegate/", env!("CARGO_PKG_VERSION"));

/// Templates per listener: REQUEST_METHOD (GET, POST, or set per request) times
/// SERVER_PROTOCOL (HTTP/1.0, HTTP/1.1), each with the empty wsgi.input: a GET or POST without
/// a body and without a query sets none of those four entries.
const TEMPLATE_VARIANTS: usize = 6;

/// Which template a request's environ starts from, and whether it holds the method already.
fn template_variant(method: &[u8], version: Version) -> (usize, bool) {
    let (m, known) = match method {
        b"GET" => (0, true),
        b"POST" => (1, true),
        _ => (2, false),
    };
    (m * 2 + usize::from(version == Version::Http11), known)
}

/// The entries a template is grown to before the extra ones are deleted. CPython grows a table
/// when it is 2/3 full, to the power of two above three times its entries; so a template that
/// once held 22 entries has a 64-slot table (42 usable), and keeps it when the entries that got
/// it there are deleted, as long as the copy stays on CPython's clean path (entries in use ≥
/// 2/3 of entries ever made: 20 of 22). A request then adds about 20 headers before its copy
/// grows. Tuned for CPython 3.9–3.13; on another version a request only pays a resize again.
const TEMPLATE_GROWN_AT: usize = 22;

/// The interned keys and constant values used for every request.
pub struct EnvironBuilder {
    /// Per listener, the templates by `template_variant`.
    templates: Vec<Vec<Py<PyDict>>>,
    /// Per listener, the scheme its templates' wsgi.url_scheme says (None: another word).
    schemes: Vec<Option<Scheme>>,
    /// wsgi.input of every request without a body (already in the templates).
    pub empty_input: Py<Input>,
    root_path: Vec<u8>,
    kept: Mutex<Kept>,
    empty: Py<PyString>,
}

/// What the template for one listener needs.
pub struct ListenerInfo {
    pub server_name: String,
    pub server_port: String,
    /// A TLS listener: wsgi.url_scheme `https` and `HTTPS=on` in its template.
    pub tls: bool,
}

/// Decode bytes as latin-1 into a new str (PEP 3333 tunnels raw bytes this way).
pub fn latin1<'py>(py: Python<'py>, b: &[u8]) -> Bound<'py, PyAny> {
    // SAFETY: ptr/len describe a live byte slice; PyUnicode_DecodeLatin1 copies it and cannot
    // fail for any input except memory exhaustion (then returns NULL with an exception set,
    // which from_owned_ptr_or_err turns into a PyErr; we panic on that as on any OOM).
    unsafe {
        let p = ffi::PyUnicode_DecodeLatin1(
            b.as_ptr() as *const std::os::raw::c_char,
            b.len() as ffi::Py_ssize_t,
            std::ptr::null(),
        );
        Bound::from_owned_ptr_or_err(py, p).expect("out of memory decoding latin-1")
    }
}

impl EnvironBuilder {
    /// `constants` holds the wsgi.* entries shared by all listeners (wsgi.errors,
    /// wsgi.file_wrapper, ...); each listener gets SERVER_NAME/SERVER_PORT on top.
    pub fn new(
        py: Python<'_>,
        listeners: &[ListenerInfo],
        root_path: &str,
        url_scheme: &str,
        errors: &Bound<'_, PyAny>,
        file_wrapper: &Bound<'_, PyAny>,
    ) -> PyResult<EnvironBuilder> {
        let empty_input = Py::new(py, Input::new(None))?;
        // PEP 3333's CGI variables include it (gunicorn sets `gunicorn/VERSION`): made once, in
        // every template, so every protocol's environ has it.
        let software = PyString::new(py, SERVER_SOFTWARE);
        let mut templates = Vec::new();
        let mut schemes = Vec::new();
        for l in listeners {
            schemes.push(match if l.tls { "https" } else { url_scheme } {
                "http" => Some(Scheme::Http),
                "https" => Some(Scheme::Https),
                _ => None,
            });
            let mut variants = Vec::with_capacity(TEMPLATE_VARIANTS);
            for variant in 0..TEMPLATE_VARIANTS {
                let d = PyDict::new(py);
                d.set_item("wsgi.version", PyTuple::new(py, [1, 0])?)?;
                d.set_item("wsgi.url_scheme", if l.tls { "https" } else { url_scheme })?;
                if l.tls {
                    d.set_item("HTTPS", "on")?;
                }
                d.set_item("wsgi.errors", errors)?;
                d.set_item("wsgi.multithread", true)?;
                d.set_item("wsgi.multiprocess", false)?;
                d.set_item("wsgi.run_once", false)?;
                d.set_item("wsgi.input_terminated", true)?;
                d.set_item("wsgi.file_wrapper", file_wrapper)?;
                d.set_item("SERVER_NAME", &l.server_name)?;
                d.set_item("SERVER_PORT", &l.server_port)?;
                d.set_item("SCRIPT_NAME", root_path)?;
                d.set_item("SERVER_SOFTWARE", &software)?;
                for key in PER_REQUEST_KEYS {
                    d.set_item(PyString::intern(py, key), "")?;
                }
                d.set_item("wsgi.early_hints", wrap_pyfunction!(early_hints_off, py)?)?;
                // What most requests would set anyway (see `template_variant`).
                let (method, version) = (variant / 2, variant % 2);
                if method < 2 {
                    d.set_item(
                        intern!(py, "REQUEST_METHOD"),
                        PyString::intern(py, ["GET", "POST"][method]),
                    )?;
                }
                d.set_item(
                    intern!(py, "SERVER_PROTOCOL"),
                    PyString::intern(py, ["HTTP/1.0", "HTTP/1.1"][version]),
                )?;
                d.set_item(intern!(py, "wsgi.input"), empty_input.bind(py))?;
                // Grow the table once, then take back what grew it.
                let grow = TEMPLATE_GROWN_AT.saturating_sub(d.len());
                for i in 0..grow {
                    d.set_item(format!("sluicegate.room.{i}"), 0)?;
                }
                for i in 0..grow {
                    d.del_item(format!("sluicegate.room.{i}"))?;
                }
                variants.push(d.unbind());
            }
            templates.push(variants);
        }
        Ok(EnvironBuilder {
            templates,
            schemes,
            empty_input,
            root_path: root_path.as_bytes().to_vec(),
            kept: Mutex::new(Kept {
                header_keys: ShortTable::new(NAME_SLOTS),
                values: RepeatedValues::new(),
                proxied: (0..listeners.len() * TEMPLATE_VARIANTS)
                    .map(|_| None)
                    .collect(),
            }),
            empty: PyString::intern(py, "").unbind(),
        })
    }

    /// Build the environ for one request. `input` becomes wsgi.input; `forwarded` is what a
    /// trusted proxy said about the client (see `proto::forwarded`).
    #[allow(clippy::too_many_arguments)]
    pub fn build<'py>(
        &self,
        py: Python<'py>,
        listener: usize,
        head: &RequestHead,
        peer: &Peer,
        cache: &mut Option<Box<dyn PeerCache>>,
        input: &Bound<'py, PyAny>,
        forwarded: Option<&Resolved>,
        tls: Option<&TlsFacts>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let method = head.method();
        let (variant, method_known) = template_variant(method, head.version);
        // Waited for with the GIL let go (`lock_py_attached`): whoever holds the lock may let
        // the GIL go inside it (an `intern!` key's first use does), and a thread that waited
        // for the lock holding the GIL hung the whole process with it.
        let mut kept = self.kept.lock_py_attached(py).unwrap();
        let (env, names_set) =
            self.copy_template(py, &mut kept, listener, variant, head, forwarded)?;
        if !method_known {
            env.set_item(intern!(py, "REQUEST_METHOD"), latin1(py, method))?;
        }
        // PATH_INFO: percent-decoded; bytes tunnelled as latin-1; SCRIPT_NAME prefix removed.
        let path = percent_decode(head.path());
        let mut path_info: &[u8] = &path;
        if !self.root_path.is_empty() && path_info.starts_with(&self.root_path) {
            let rest = &path_info[self.root_path.len()..];
            if rest.is_empty() || rest[0] == b'/' {
                path_info = rest;
            }
        }
        env.set_item(intern!(py, "PATH_INFO"), kept.values.get(py, path_info))?;
        let query = head.query();
        let uri = if query.is_empty() {
            // The template's QUERY_STRING is "" already.
            // A target without a query is kept like the path (never one with: a query may
            // carry a token).
            kept.values.get(py, head.target())
        } else {
            env.set_item(intern!(py, "QUERY_STRING"), latin1(py, query))?;
            latin1(py, head.target())
        };
        env.set_item(intern!(py, "REQUEST_URI"), &uri)?;
        env.set_item(intern!(py, "RAW_URI"), uri)?;
        // The client a trusted proxy names replaces the peer's address and port
        // (`apply_forwarded`): they are not set first only to be replaced.
        let client_forwarded = forwarded.is_some_and(|f| f.client.is_some());
        // (Nor are the peer's strings made then: behind a proxy each request may be a new
        // connection, whose cache would serve no other request.)
        if !client_forwarded || tls.is_some() {
            self.peer_entries(
                py,
                &env,
                peer,
                cache,
                &mut kept.values,
                client_forwarded,
                tls,
            )?;
        }
        if !input.is(&self.empty_input) {
            env.set_item(intern!(py, "wsgi.input"), input)?;
        }
        Self::add_headers(py, &env, head, &mut kept)?;
        if head.has_absolute_target() {
            // RFC 9112 §3.2.2: the target's authority is the host, whatever Host said.
            let authority = head.host().unwrap_or_default();
            let (name, port) = split_host_port(authority);
            env.set_item(intern!(py, "HTTP_HOST"), latin1(py, authority))?;
            env.set_item(intern!(py, "SERVER_NAME"), latin1(py, name))?;
            let default_port: &[u8] = if head.target()[..5].eq_ignore_ascii_case(b"https") {
                b"443"
            } else {
                b"80"
            };
            env.set_item(
                intern!(py, "SERVER_PORT"),
                latin1(py, port.filter(|p| !p.is_empty()).unwrap_or(default_port)),
            )?;
        }
        if let Some(f) = forwarded {
            let template_scheme = self.schemes[listener];
            apply_forwarded(
                py,
                &env,
                head,
                f,
                &mut kept.values,
                template_scheme,
                names_set,
            )?;
        }
        drop(kept);
        Ok(env)
    }

    /// A request's environ: a copy of its template, or, behind a proxy that names the port
    /// the client connected to and maybe the server (uwsgi's SERVER_PORT and SERVER_NAME, an
    /// X-Forwarded-Port; no host of its own, which would decide them instead), of a template
    /// that has them (`proxied_template`; then true).
    fn copy_template<'py>(
        &self,
        py: Python<'py>,
        kept: &mut Kept,
        listener: usize,
        variant: usize,
        head: &RequestHead,
        forwarded: Option<&Resolved>,
    ) -> PyResult<(Bound<'py, PyDict>, bool)> {
        let template = self.templates[listener][variant].bind(py);
        let named = match forwarded {
            Some(f) if f.host.is_none() && !head.has_absolute_target() => {
                f.port.map(|port| (f.server_name.as_deref(), port))
            }
            _ => None,
        };
        Ok(match named {
            Some((name, port)) => {
                let slot = listener * TEMPLATE_VARIANTS + variant;
                let named = proxied_template(py, kept, slot, template, name, port)?;
                (named.copy()?, true)
            }
            None => (template.copy()?, false),
        })
    }

    /// REMOTE_ADDR and REMOTE_PORT from the connection's peer (unless a trusted proxy names
    /// the client: `forwarded`), and a TLS connection's SSL_* variables; the peer's strings are
    /// made once per connection and cached on it.
    #[allow(clippy::too_many_arguments)]
    fn peer_entries(
        &self,
        py: Python<'_>,
        env: &Bound<'_, PyDict>,
        peer: &Peer,
        cache: &mut Option<Box<dyn PeerCache>>,
        values: &mut RepeatedValues,
        forwarded: bool,
        tls: Option<&TlsFacts>,
    ) -> PyResult<()> {
        let peer_strs = cache
            .get_or_insert_with(|| {
                Box::new(PeerStrings::new(py, peer, self.empty.bind(py), values))
            })
            .strings();
        if !forwarded {
            env.set_item(intern!(py, "REMOTE_ADDR"), peer_strs.addr.bind(py))?;
            match &peer_strs.port {
                Some(port) => env.set_item(intern!(py, "REMOTE_PORT"), port.bind(py))?,
                // The template's placeholder goes: a unix-socket client has no port.
                None => env.del_item(intern!(py, "REMOTE_PORT"))?,
            }
        }
        if let Some(facts) = tls {
            let vars = peer_strs.tls.get_or_insert_with(|| {
                let string = |v: &str| PyString::new(py, v).unbind();
                let key = |k: &str| PyString::intern(py, k).unbind();
                facts
                    .vars
                    .iter()
                    .map(|(k, v)| (key(k), string(v)))
                    .collect()
            });
            for (name, value) in vars.iter() {
                env.set_item(name.bind(py), value.bind(py))?;
            }
        }
        Ok(())
    }

    fn add_headers(
        py: Python<'_>,
        env: &Bound<'_, PyDict>,
        head: &RequestHead,
        kept: &mut Kept,
    ) -> PyResult<()> {
        let Kept {
            header_keys: cache,
            values,
            ..
        } = kept;
        // The interned keys set so far, to see a repeated header without asking the dict (one
        // key, one pointer). Past this many headers, the dict is asked.
        let mut set: [*mut ffi::PyObject; 32] = [std::ptr::null_mut(); 32];
        let mut n_set = 0usize;
        for (name, value) in head.headers() {
            let key = match cache.find(name) {
                Some(k) => k.clone_ref(py),
                None => {
                    let k = cgi_key(py, name);
                    if name.len() <= SHORT_MAX {
                        cache.insert(name, k.clone_ref(py));
                    }
                    k
                }
            };
            let HeaderKey::Key(key, repeats, interned) = key else {
                continue;
            };
            let key = key.bind(py);
            let value = if repeats {
                values.get(py, value)
            } else {
                latin1(py, value)
            };
            // A key that is not interned may exist as another object (the same name in
            // another case): the dict is asked.
            let seen = if !interned {
                true
            } else if n_set < set.len() {
                let p = key.as_ptr();
                let seen = set[..n_set].contains(&p);
                if !seen {
                    set[n_set] = p;
                    n_set += 1;
                }
                seen
            } else {
                true
            };
            if !seen {
                env.set_item(key, value)?;
                continue;
            }
            // Repeated headers are joined with ", " (RFC 9110 §5.3); a repeated identical
            // Content-Length (accepted by the parser) stays a single number.
            match env.get_item(key)? {
                Some(prev) if !name.eq_ignore_ascii_case(b"content-length") => {
                    let joined = format!(
                        "{}, {}",
                        prev.extract::<String>()?,
                        value.extract::<String>()?
                    );
                    env.set_item(key, joined)?;
                }
                Some(_) => {}
                None => env.set_item(key, value)?,
            }
        }
        Ok(())
    }
}

/// The template `slot` of a proxy's `port` and server `name` (None: not named, the
/// template's stays) ([`Proxied`]): the one kept, or a copy of `base` with them set, kept in
/// its place.
fn proxied_template<'py>(
    py: Python<'py>,
    kept: &mut Kept,
    slot: usize,
    base: &Bound<'py, PyDict>,
    name: Option<&[u8]>,
    port: u16,
) -> PyResult<Bound<'py, PyDict>> {
    if let Some(p) = &kept.proxied[slot] {
        if p.port == port && p.name.as_deref() == name {
            return Ok(p.template.bind(py).clone());
        }
    }
    // The same values `apply_forwarded` sets, in the entries the template has already.
    let template = base.copy()?;
    let mut digits = itoa::Buffer::new();
    let port_str = kept.values.get(py, digits.format(port).as_bytes());
    template.set_item(intern!(py, "SERVER_PORT"), port_str)?;
    if let Some(name) = name {
        template.set_item(intern!(py, "SERVER_NAME"), kept.values.get(py, name))?;
    }
    kept.proxied[slot] = Some(Proxied {
        name: name.map(<[u8]>::to_vec),
        port,
        template: template.clone().unbind(),
    });
    Ok(template)
}

/// What a trusted proxy said, over what the connection said: the client's address and port
/// (REMOTE_PORT is removed when the proxy gave no port: the proxy's own would be wrong), the
/// scheme, the host (HTTP_HOST, SERVER_NAME, and SERVER_PORT from its port or the scheme's
/// default), and the port the client connected to (SERVER_PORT, over all else). `names_set`:
/// the environ was copied from a template that has the proxy's server name and port already
/// (`proxied_template`).
///
/// Behind a proxy (a uwsgi packet from nginx, a new connection per request) the address, the
/// port the client connected to and the server's name repeat from request to request: they
/// come from the repeated values, and the address and the ports are written without `fmt`
/// (made with `to_string()` and a new string each, this function took 5,300 instructions of a
/// hello world's 36,000 over uwsgi behind nginx, and takes 3,500: callgrind).
fn apply_forwarded(
    py: Python<'_>,
    env: &Bound<'_, PyDict>,
    head: &RequestHead,
    f: &Resolved,
    values: &mut RepeatedValues,
    template_scheme: Option<Scheme>,
    names_set: bool,
) -> PyResult<()> {
    let mut digits = itoa::Buffer::new();
    if let Some((ip, port)) = f.client {
        let addr = match ip {
            std::net::IpAddr::V4(v4) => {
                let mut text = [0u8; 15];
                let n = kept::ipv4_text(v4.octets(), &mut text);
                values.get(py, &text[..n])
            }
            ip => values.get(py, ip.to_string().as_bytes()),
        };
        env.set_item(intern!(py, "REMOTE_ADDR"), addr)?;
        match port {
            // (Its digits as latin-1: a `&str` became a `str` through a UTF-8 decode.)
            Some(p) => env.set_item(
                intern!(py, "REMOTE_PORT"),
                latin1(py, digits.format(p).as_bytes()),
            )?,
            None => {
                if env.contains(intern!(py, "REMOTE_PORT"))? {
                    env.del_item(intern!(py, "REMOTE_PORT"))?;
                }
            }
        }
    }
    let scheme = f.scheme.unwrap_or(Scheme::Http);
    // Set only when it differs from the template's (nginx says `http` on every request);
    // interned: a str made from `as_str()` was a new string each request.
    if let Some(s) = f.scheme.filter(|&s| Some(s) != template_scheme) {
        let s = match s {
            Scheme::Http => intern!(py, "http"),
            Scheme::Https => intern!(py, "https"),
        };
        env.set_item(intern!(py, "wsgi.url_scheme"), s)?;
    }
    let port_of = |authority: &[u8]| -> String {
        match split_host_port(authority).1 {
            Some(p) if !p.is_empty() => String::from_utf8_lossy(p).into_owned(),
            _ => scheme.default_port().to_string(),
        }
    };
    if let Some(host) = &f.host {
        env.set_item(intern!(py, "HTTP_HOST"), latin1(py, host))?;
        env.set_item(
            intern!(py, "SERVER_NAME"),
            latin1(py, split_host_port(host).0),
        )?;
        if f.port.is_none() {
            env.set_item(intern!(py, "SERVER_PORT"), port_of(host))?;
        }
    } else if f.scheme.is_some() && f.port.is_none() {
        // (A port said outright, as nginx's SERVER_PORT on every uwsgi request, is set below.)
        let host = head.host().unwrap_or_default();
        env.set_item(intern!(py, "SERVER_PORT"), port_of(host))?;
    }
    if names_set {
        return Ok(());
    }
    if let Some(p) = f.port {
        let port = values.get(py, digits.format(p).as_bytes());
        env.set_item(intern!(py, "SERVER_PORT"), port)?;
    }
    if let Some(name) = &f.server_name {
        env.set_item(intern!(py, "SERVER_NAME"), values.get(py, name))?;
    }
    Ok(())
}
