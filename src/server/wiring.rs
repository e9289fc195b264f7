//! What `Server::new` makes of the front's arguments before it wires the loop: the listeners
//! (socket, wire, names, TLS or not), each listener's TLS configuration, the balance table,
//! the access log's Python sink and statsd output, and the event loop's settings.

use std::sync::Arc;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use super::tls;
use crate::config::Config;
use crate::io::balance::Balance;
use crate::io::conn::Wire;
use crate::io::event_loop::{ListenSocket, ListenerTls, LoopSettings};
use crate::observe::access_log::{AccessLog, LineSink};
use crate::observe::statsd::StatsdLines;
use crate::wsgi::environ::ListenerInfo;

/// The listeners the front bound, in its order.
pub(super) struct Listeners {
    pub sockets: Vec<ListenSocket>,
    pub infos: Vec<ListenerInfo>,
    pub wires: Vec<Wire>,
    pub tls_flags: Vec<bool>,
}

impl Listeners {
    /// From the front's `(fd, kind, name, port, wire, tls)` tuples.
    pub fn of(listeners: &Bound<'_, PyAny>) -> PyResult<Listeners> {
        let mut l = Listeners {
            sockets: Vec::new(),
            infos: Vec::new(),
            wires: Vec::new(),
            tls_flags: Vec::new(),
        };
        for item in listeners.try_iter()? {
            let (fd, kind, name, port, wire, tls): (i32, String, String, String, String, bool) =
                item?.extract()?;
            l.tls_flags.push(tls);
            l.wires.push(match wire.as_str() {
                "http" => Wire::Http,
                "proxy" => Wire::ProxyThenHttp,
                "uwsgi" => Wire::Uwsgi,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "unknown listener wire {other:?}"
                    )))
                }
            });
            let unix = match kind.as_str() {
                "tcp" => false,
                "unix" => true,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "unknown listener kind {other:?}"
                    )))
                }
            };
            l.sockets.push(ListenSocket::from_fd(fd, unix));
            l.infos.push(ListenerInfo {
                server_name: name,
                server_port: port,
                tls,
            });
        }
        if l.sockets.is_empty() {
            return Err(PyValueError::new_err("no listeners"));
        }
        Ok(l)
    }
}

/// Each listener's TLS configuration (`None`: plaintext), and the certificate's expiry
/// (`None` when no listener speaks TLS). `--certfile`: the credentials the front loaded before
/// binding (`server::tls`).
pub(super) type ListenerTlsConfigs = (Vec<Option<Arc<rustls::ServerConfig>>>, Option<i64>);

pub(super) fn listener_tls(
    flags: &[bool],
    given: Option<&Bound<'_, PyAny>>,
    config: &Config,
) -> PyResult<ListenerTlsConfigs> {
    if !flags.contains(&true) {
        return Ok((vec![None; flags.len()], None));
    }
    let server = tls::server_config(given, config.tls.as_ref())?;
    let alpn = tls::with_alpn(&server, config);
    let configs = flags
        .iter()
        .map(|&on| on.then(|| Arc::clone(&alpn)))
        .collect();
    Ok((configs, Some(server.not_after)))
}

/// The table the workers of one master balance new connections by (`--balance-fd`), if any.
pub(super) fn balance_table(config: &Config) -> PyResult<Option<Balance>> {
    if config.balance_fd < 0 {
        return Ok(None);
    }
    Balance::open(config.balance_fd, config.balance_slots, config.balance_slot)
        .map(Some)
        .map_err(|e| PyOSError::new_err(format!("cannot map the balance table: {e}")))
}

/// `--http3`: a UDP socket beside each TLS listener on TCP, with its TLS configuration
/// (`None` without `--http3` or without such a listener).
pub(super) fn http3_hub(
    config: &Arc<Config>,
    sockets: &[ListenSocket],
    tls: &[Option<Arc<rustls::ServerConfig>>],
) -> PyResult<Option<Arc<crate::io::h3::H3Hub>>> {
    if !config.http3 {
        return Ok(None);
    }
    let mut on = Vec::new();
    for (i, (socket, tls)) in sockets.iter().zip(tls).enumerate() {
        if let (ListenSocket::Tcp(l, _), Some(tls)) = (socket, tls) {
            let addr = l
                .local_addr()
                .map_err(|e| PyOSError::new_err(e.to_string()))?;
            on.push((i, addr, Arc::clone(tls)));
        }
    }
    crate::io::h3::H3Hub::bind(Arc::clone(config), &on)
        .map_err(|e| PyOSError::new_err(format!("--http3: cannot bind its UDP socket: {e}")))
}

/// The event loop's settings, in the order they are made: HTTP/2's hub, HTTP/3's (its UDP
/// sockets bound here), the `--static` mounts opened, the balance table mapped (with this
/// worker's slot for uWSGI's `%(wid)`), and the access log started.
pub(super) fn loop_settings(
    config: &Arc<Config>,
    sockets: &[ListenSocket],
    wires: Vec<Wire>,
    tls: Vec<Option<Arc<rustls::ServerConfig>>>,
    access_sink: Option<LineSink>,
    statsd: Option<(StatsdLines, LineSink)>,
) -> PyResult<(LoopSettings, Option<Balance>)> {
    let h2 = (config.http2 != crate::config::Http2Mode::Off)
        .then(|| crate::io::h2::H2Hub::new(Arc::clone(config)));
    let h3 = http3_hub(config, sockets, &tls)?;
    let statics = crate::io::static_files::StaticFiles::new(
        &config.static_mounts,
        config.static_fallthrough,
        &config.static_expires,
    )
    .map_err(PyOSError::new_err)?;
    let balance = balance_table(config)?;
    crate::observe::uwsgi_format::set_worker_slot(config.balance_fd >= 0, config.balance_slot);
    let access_log = AccessLog::new(config, access_sink, statsd)
        .map_err(PyValueError::new_err)?
        .map(Arc::new);
    let settings = LoopSettings {
        config: Arc::clone(config),
        statics,
        access_log,
        wires,
        tls: ListenerTls::new(tls),
        h2,
        h3,
    };
    Ok((settings, balance))
}

/// The access log's lines handed to a Python callable (`config["access_log_sink"]`, None:
/// none), a batch of whole lines at a time, from the log's writer thread: the Python front
/// passes Python logging's `gunicorn.access` logger this way (see `observe::access_log`).
pub(super) fn python_line_sink(callable: Option<Bound<'_, PyAny>>) -> Option<LineSink> {
    let callable = callable.filter(|c| !c.is_none())?.unbind();
    Some(Box::new(move |batch: &[u8]| {
        Python::attach(|py| {
            callable
                .call1(py, (pyo3::types::PyBytes::new(py, batch),))
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
    }))
}

/// `config["statsd"]`: None, or (address, prefix, tags) of `--statsd-host`,
/// `--statsd-prefix` and `--dogstatsd-tags`: the request metrics and their socket.
pub(super) fn statsd_output(
    given: Option<Bound<'_, PyAny>>,
) -> PyResult<Option<(StatsdLines, LineSink)>> {
    let Some(given) = given.filter(|g| !g.is_none()) else {
        return Ok(None);
    };
    let (address, prefix, tags): (String, String, String) = given.extract()?;
    Ok(Some((
        StatsdLines::new(&prefix, &tags),
        crate::io::statsd::sender(&address),
    )))
}
