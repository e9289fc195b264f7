//! What `Server::new` makes of the front's arguments before it wires the loop: the listeners
//! (socket, wire, names, TLS or not), each listener's TLS configuration, and the balance table.

use std::sync::Arc;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use super::tls;
use crate::config::Config;
use crate::io::balance::Balance;
use crate::io::conn::Wire;
use crate::io::event_loop::ListenSocket;
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
