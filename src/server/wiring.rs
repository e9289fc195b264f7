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
