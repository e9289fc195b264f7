//! TLS credentials as Python holds them: `_core.load_tls(...)` reads and checks the certificate
//! and key files (`io::tls::load`) once, in the process that starts the server, before it binds
//! and before `--user` drops privileges; the returned `TlsCredentials` is handed to every
//! `Server` (forked workers inherit it), so a worker never reads the key itself. A single
//! process loads them again on HUP and hands them to its running `Server` (`Server.set_tls`).

use pyo3::prelude::*;
use std::path::PathBuf;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::config::{ClientAuth, MinVersion, TlsSettings};
use crate::io::event_loop::LoopCtx;
use crate::io::tls::{load, TlsConfig};

/// Loaded, checked TLS credentials (the rustls server configuration built from them).
#[pyclass(frozen, module = "sluicegate._core")]
pub struct TlsCredentials {
    pub config: TlsConfig,
}

#[pymethods]
impl TlsCredentials {
    /// The server certificate's subject (`CN=...`), for the start line.
    #[getter]
    fn subject(&self) -> String {
        self.config.subject.clone()
    }

    /// The earliest expiry of the certificates served, unix seconds.
    #[getter]
    fn not_after(&self) -> i64 {
        self.config.not_after
    }
}

/// Read and check the files; a problem is a `ValueError` of one line naming the file. The
/// GIL is released meanwhile: a file that blocks on read (a FIFO, a hung network mount) holds
/// only the thread that reads it, never the process's other threads.
#[pyfunction]
#[pyo3(signature = (certfile, keyfile=None, ca_certs=None, cert_reqs="none", tls_min_version="1.2"))]
pub fn load_tls(
    py: Python<'_>,
    certfile: String,
    keyfile: Option<String>,
    ca_certs: Option<String>,
    cert_reqs: &str,
    tls_min_version: &str,
) -> PyResult<TlsCredentials> {
    let value_error = |m: String| pyo3::exceptions::PyValueError::new_err(m);
    let settings = TlsSettings {
        key_file: PathBuf::from(keyfile.unwrap_or_else(|| certfile.clone())),
        cert_file: PathBuf::from(certfile),
        ca_file: ca_certs.map(PathBuf::from),
        client_auth: ClientAuth::parse(cert_reqs)
            .ok_or_else(|| value_error(format!("--cert-reqs {cert_reqs:?}")))?,
        min_version: MinVersion::parse(tls_min_version)
            .ok_or_else(|| value_error(format!("--tls-min-version {tls_min_version:?}")))?,
        alpn: vec![b"http/1.1".to_vec()],
    };
    py.detach(|| load_settings(&settings))
        .map(|config| TlsCredentials { config })
        .map_err(value_error)
}

/// The configuration TLS listeners serve: with `--http2` allowed over TLS, h2 offered first,
/// then http/1.1 (ALPN).
pub fn with_alpn(t: &TlsConfig, config: &crate::config::Config) -> Arc<rustls::ServerConfig> {
    if config.http2.allows(true) {
        let mut c = (*t.server).clone();
        c.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Arc::new(c)
    } else {
        Arc::clone(&t.server)
    }
}

/// New TLS connections are served with `t` from now on, and the expiry metric follows it;
/// false when no listener speaks TLS.
pub fn replace(ctx: &LoopCtx, t: &TlsConfig) -> bool {
    if !ctx.settings.tls.replace(with_alpn(t, &ctx.settings.config)) {
        return false;
    }
    if let Some(h3) = &ctx.settings.h3 {
        if let Err(e) = h3.replace_tls(&t.server) {
            eprintln!("sluicegate: --http3: the new certificate is not served over QUIC: {e}");
        }
    }
    ctx.counters
        .tls_not_after
        .store(t.not_after.max(1), Ordering::Relaxed);
    true
}

/// `io::tls::load` at the current time, its error as one line.
pub fn load_settings(settings: &TlsSettings) -> Result<TlsConfig, String> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    load(settings, now).map_err(|e| e.to_string())
}

/// The rustls configuration a `Server` serves its TLS listeners with: the credentials the
/// front loaded (`config["tls"]`), else loaded now from the config's settings.
pub fn server_config(
    given: Option<&Bound<'_, PyAny>>,
    settings: Option<&TlsSettings>,
) -> PyResult<TlsConfig> {
    if let Some(obj) = given.filter(|o| !o.is_none()) {
        let creds = obj.cast::<TlsCredentials>()?;
        return Ok(creds.get().config.clone());
    }
    let settings = settings.ok_or_else(|| {
        pyo3::exceptions::PyValueError::new_err(
            "a TLS listener (https:) needs --certfile and --keyfile",
        )
    })?;
    load_settings(settings).map_err(pyo3::exceptions::PyValueError::new_err)
}
