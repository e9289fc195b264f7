//! The frozen, validated configuration the Python front hands to the core.
//!
//! The Python front owns option parsing and validation (one table, see `sluicegate/options.py`);
//! this module only extracts the already-validated values into plain Rust types, once, at
//! startup, so the hot path never touches Python for a setting.
//!
//! Plain data, on the bottom floor: the small types the settings are made of
//! ([`Policy`], [`BodyPace`], [`MountConfig`]) are defined here, and the layers that act on
//! them import them from here, never the other way round.
//!
//! The names an option of a few values takes (`--scheduler`, `--http2`, `--cert-reqs`,
//! `--tls-min-version`, `--forwarded-headers`) are declared once, in the Python package's
//! `allowed_values.txt`, compiled in here ([`allowed_values`]); each enum lists its variants
//! in `ALL` in that file's order, and a name means the variant in its place.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::types::PyDict;
use sluicegate_proto::forwarded::{Family, TrustList};
use sluicegate_proto::Limits;

/// Every setting the core reads. Field docs name the option that sets it.
#[derive(Debug, Clone)]
pub struct Config {
    /// `--threads MIN:MAX`: app threads kept warm / the most that may run at once.
    pub threads_min: usize,
    pub threads_max: usize,
    /// `--max-runnable` (see `wsgi::pool::admission`; 0 = no limit).
    pub max_runnable: usize,
    /// `--scheduler` ([`Policy`], see `server::scheduler`).
    pub scheduler: Policy,
    /// `--spin` ([`SpinPolicy`], see `io::event_loop::spin`).
    pub spin: SpinPolicy,
    /// `--pace` ([`PacePolicy`], see `io::event_loop::pace`).
    pub pace: PacePolicy,
    /// `--start-gate` ([`GatePolicy`], see `wsgi::pool::start_gate`).
    pub start_gate: GatePolicy,
    /// `--header-timeout`: a request head must arrive whole within this (408).
    pub header_timeout: Duration,
    /// `--keepalive-timeout`: an idle connection between requests is closed after this.
    pub keepalive_timeout: Duration,
    /// `--read-timeout`: the app's body read fails after this long without progress.
    pub read_timeout: Duration,
    /// `--min-body-rate` and `--body-timeout` ([`BodyPace`]).
    pub body_pace: BodyPace,
    /// `--write-timeout`: a client that accepts no bytes for this long is disconnected.
    pub write_timeout: Duration,
    /// `--timeout`: how long an app call may run (`wsgi::deadline`); None = off.
    pub timeout: Option<Duration>,
    /// `--graceful-timeout`: how long in-flight requests get at shutdown.
    pub graceful_timeout: Duration,
    /// `--drain-delay`: how long a graceful stop serves on with a failing health path.
    pub drain_delay: Duration,
    /// `--limit-*`: request size limits (414, 431, 413).
    pub limits: Limits,
    /// `--uwsgi-compat buffer-size`: a head over the limit closes with uWSGI's line, no 431.
    pub head_overflow_closes: bool,
    /// `--write-high-water`: past this queued for a slow client the app waits (backpressure).
    pub write_high_water: u64,
    /// `--max-drain`: an unread request body up to this size is drained after the response so
    /// the connection can be kept; a larger one closes the connection.
    pub max_drain: u64,
    /// `--limit-response-headers`: the app's header section, names and values, in bytes.
    pub limit_response_headers: usize,
    /// `--http2`: where HTTP/2 is spoken ([`Http2Mode`]).
    pub http2: Http2Mode,
    /// `--http2-max-streams`: SETTINGS_MAX_CONCURRENT_STREAMS of every HTTP/2 connection.
    pub http2_max_streams: u32,
    /// `--http3`: QUIC and HTTP/3 on every TLS listener's address (`io::h3`).
    pub http3: bool,
    /// `--http3-0rtt`: accept 0-RTT; requests that arrive in it are served at once only if
    /// idempotent (`io::h3::early`).
    pub http3_0rtt: bool,
    /// `--http3-retry-above`: QUIC handshakes in progress past which an unvalidated client
    /// address is sent a Retry first (0: always).
    pub http3_retry_above: usize,
    /// `--http3-congestion`: QUIC's congestion controller ([`Http3Congestion`]).
    pub http3_congestion: Http3Congestion,
    /// `--root-path`: SCRIPT_NAME.
    pub root_path: String,
    /// `--forwarded-allow-ips` (gunicorn's meaning) and `--forwarded-headers`: whose
    /// forwarding headers are read for the scheme alone (and uwsgi variables, PROXY headers
    /// without `--proxy-allow-ips`), and which family; None when nobody is trusted.
    pub forwarding: Option<(TrustList, Family)>,
    /// `--forwarded-for-ips`: whose forwarding headers are believed whole: the client's
    /// address, host and port besides the scheme (None: nobody's).
    pub forwarded_for: Option<TrustList>,
    /// `--forwarded-headers`: which family of forwarding headers is read, from either list.
    pub forwarded_family: Family,
    /// `--proxy-allow-ips`: who may send a PROXY protocol header, when it is not the
    /// `--forwarded-allow-ips` list (None: that list decides).
    pub proxy_trust: Option<TrustList>,
    /// `--log-level debug`.
    pub debug: bool,
    /// `--health-path`: answered by the event loop itself; empty = off.
    pub health_path: Vec<u8>,
    /// wsgi.url_scheme.
    pub url_scheme: String,
    /// `--server-header`: value of the Server header; empty = not sent.
    pub server_header: Vec<u8>,
    /// `--certfile`, `--keyfile`, `--ca-certs`, `--cert-reqs`, `--tls-min-version`
    /// ([`TlsSettings`]); None without `--certfile`.
    pub tls: Option<TlsSettings>,
    /// `--static`: the mounts served by the event loop itself.
    pub static_mounts: Vec<MountConfig>,
    /// `--static-fallthrough`: a request under a mount that matches no file goes to the app.
    pub static_fallthrough: bool,
    /// `--static-expires`, `--static-expires-uri`: the `Expires` rules of static answers.
    pub static_expires: Vec<ExpiresConfig>,
    /// `--add-header`: `Name: value\r\n` lines added to every HTTP/1.1 answer (validated by
    /// the Python front: a token, a value without control bytes).
    pub add_headers: Vec<u8>,
    /// `--access-log`: file descriptor to append access log lines to, or -1.
    pub access_log_fd: i32,
    /// `--access-log-format`: combined, common, json or a template (`access_log`).
    pub access_log_format: String,
    /// `--access-log-when`: all, none, or a list of 4xx, 5xx, slow=MS, zero, big=BYTES.
    pub access_log_when: String,
    /// `--access-log-forwarded-for`: uWSGI's lines give X-Forwarded-For as the address.
    pub access_log_forwarded_for: bool,
    /// `--server-timing`: a `Server-Timing` header with the queue and app times.
    pub server_timing: bool,
    /// `--early-hints`: `wsgi.early_hints` sends (else the environ's callable does nothing).
    pub early_hints: bool,
    /// `--metrics-bind`, for this process (the front adds a worker's offset): `HOST:PORT`,
    /// `unix:PATH`, or empty (off).
    pub metrics_bind: String,
    /// `--debug-requests`: `/debug/requests` is served on `--metrics-bind` (else 404).
    pub debug_requests: bool,
    /// `--no-control-socket`: the Python front runs no control socket. The core lists app
    /// calls for its `requests` (`Server.in_flight`) only with `--timeout` or `--metrics-bind`.
    pub no_control_socket: bool,
    /// Read end of the pipe given to `signal.set_wakeup_fd`, or -1.
    pub signal_fd: i32,
    /// How log lines name the app (`MODULE:APP` as given), or empty.
    pub app_name: String,
    /// With worker processes: the master's table of connection counts (`io::balance`): its
    /// fd (-1: one process), its number of entries, and this worker's entry.
    pub balance_fd: i32,
    pub balance_slots: usize,
    pub balance_slot: usize,
}

/// The allowed values of the options of a few names, as the Python front's parsers read them
/// too: one `option: name name ...` a line, `#` lines are comments.
const ALLOWED_VALUES: &str = include_str!("../python/sluicegate/allowed_values.txt");

/// The names `option` takes, in `allowed_values.txt`'s order (none for an option not there).
pub fn allowed_values(option: &str) -> Vec<&'static str> {
    ALLOWED_VALUES
        .lines()
        .map(str::trim)
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim() == option)
        .map(|(_, names)| names.split_whitespace().collect())
        .unwrap_or_default()
}

/// The variant `name` means among `variants`, which list `option`'s variants in
/// `allowed_values.txt`'s order.
fn by_name<T: Copy>(option: &str, variants: &[T], name: &str) -> Option<T> {
    let place = allowed_values(option).iter().position(|n| *n == name)?;
    variants.get(place).copied()
}

/// The config value `key`, one of the names `allowed_values.txt` gives it, as its variant.
fn one_of<T: Copy>(d: &Bound<'_, PyDict>, key: &str, variants: &[T]) -> PyResult<T> {
    let name: String = get(d, key)?;
    by_name(key, variants, &name).ok_or_else(|| {
        pyo3::exceptions::PyValueError::new_err(format!(
            "{key} must be one of {}, not {name:?}",
            allowed_values(key).join(", ")
        ))
    })
}

/// `--http2`: where HTTP/2 is spoken (docs/http-support.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Http2Mode {
    /// ALPN `h2` on TLS listeners and h2c with prior knowledge on plain HTTP listeners.
    On,
    /// ALPN `h2` on TLS listeners only.
    Tls,
    /// HTTP/1.1 only.
    Off,
}

impl Http2Mode {
    /// The variants in `allowed_values.txt`'s order for `http2`.
    pub const ALL: [Http2Mode; 3] = [Http2Mode::On, Http2Mode::Tls, Http2Mode::Off];

    pub fn parse(name: &str) -> Option<Http2Mode> {
        by_name("http2", &Self::ALL, name)
    }

    /// Whether a connection of this kind (TLS or not) may turn into HTTP/2.
    pub fn allows(self, tls: bool) -> bool {
        match self {
            Http2Mode::On => true,
            Http2Mode::Tls => tls,
            Http2Mode::Off => false,
        }
    }
}

/// `--http3-congestion`: quinn's congestion controller for every HTTP/3 connection
/// (`io::h3::config`; docs/http3.md says why BBR is the default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Http3Congestion {
    Cubic,
    NewReno,
    Bbr,
}

impl Http3Congestion {
    /// The variants in `allowed_values.txt`'s order for `http3_congestion`.
    pub const ALL: [Http3Congestion; 3] = [
        Http3Congestion::Cubic,
        Http3Congestion::NewReno,
        Http3Congestion::Bbr,
    ];
}

/// `--scheduler`: the adaptive default, or one mode forced (for apps known to block on every
/// request, and to measure the alternatives the adaptive design was chosen over).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Adaptive,
    /// Always inline; a blocked call is still taken over, but the mode never changes.
    Inline,
    /// Every request on the pool.
    Pool,
}

impl Policy {
    /// The variants in `allowed_values.txt`'s order for `scheduler`.
    pub const ALL: [Policy; 3] = [Policy::Adaptive, Policy::Inline, Policy::Pool];

    /// The `--scheduler` value (validated once, when the config is built).
    pub fn parse(s: &str) -> Option<Policy> {
        by_name("scheduler", &Self::ALL, s)
    }
}

/// `--spin`: whether the event loop spins before it sleeps (`io::event_loop::spin`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinPolicy {
    /// Only while the process may use every CPU of the machine (`observe::allowance`).
    Auto,
    On,
    Off,
}

impl SpinPolicy {
    /// The variants in `allowed_values.txt`'s order for `spin`.
    pub const ALL: [SpinPolicy; 3] = [SpinPolicy::Auto, SpinPolicy::On, SpinPolicy::Off];
}

/// `--start-gate`: the places of the gate pool calls pass to start (`wsgi::pool::start_gate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GatePolicy {
    /// Two below the machine's CPUs (`observe::allowance`), 16 on all of them.
    Auto,
    On,
    Off,
}

impl GatePolicy {
    /// The variants in `allowed_values.txt`'s order for `start_gate`.
    pub const ALL: [GatePolicy; 3] = [GatePolicy::Auto, GatePolicy::On, GatePolicy::Off];
}

/// `--pace`: the event loop keeps the process's CPU below a CPU quota (`io::event_loop::pace`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacePolicy {
    /// Under a quota (`observe::allowance`), read again every second.
    Auto,
    Off,
}

impl PacePolicy {
    /// The variants in `allowed_values.txt`'s order for `pace`.
    pub const ALL: [PacePolicy; 2] = [PacePolicy::Auto, PacePolicy::Off];
}

/// How fast a body must come (`--min-body-rate`, `--body-timeout`), as Kestrel's
/// `MinRequestBodyDataRate`: after `GRACE`, the bytes received must average at least
/// `min_rate` per second since the body began, and the whole body must be in within `total`.
/// A client sending one byte a second makes progress, and is still cut.
#[derive(Clone, Copy, Debug)]
pub struct BodyPace {
    pub min_rate: u64,
    pub total: Option<Duration>,
}

impl BodyPace {
    /// How long the rate is not judged, from the body's start (slow start, a client's pause).
    pub const GRACE: Duration = Duration::from_secs(5);

    /// When the body fails if no more bytes come, having `received` raw bytes since `started`.
    pub fn deadline(&self, started: Instant, received: u64) -> Option<Instant> {
        let by_rate = (self.min_rate > 0).then(|| {
            let owed = Duration::from_secs_f64(received as f64 / self.min_rate as f64);
            started + Self::GRACE + owed
        });
        let total = self.total.map(|t| started + t);
        match (by_rate, total) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

fn get<T>(d: &Bound<'_, PyDict>, key: &str) -> PyResult<T>
where
    T: for<'a, 'py> FromPyObject<'a, 'py>,
    for<'a, 'py> <T as FromPyObject<'a, 'py>>::Error: Into<PyErr>,
{
    match d.get_item(key)? {
        Some(v) => v.extract::<T>().map_err(|e| {
            let e: PyErr = e.into();
            pyo3::exceptions::PyValueError::new_err(format!("config key {key:?}: {e}"))
        }),
        None => Err(pyo3::exceptions::PyKeyError::new_err(format!(
            "config key {key:?} is missing"
        ))),
    }
}

/// `--forwarded-headers`: the families in `allowed_values.txt`'s order.
const FAMILIES: [Family; 2] = [Family::XForwarded, Family::Forwarded];

/// `--proxy-allow-ips`: its own list, or None (empty: `--forwarded-allow-ips` decides).
fn proxy_trust(d: &Bound<'_, PyDict>) -> PyResult<Option<TrustList>> {
    let list: String = get(d, "proxy_allow_ips")?;
    if list.trim().is_empty() {
        return Ok(None);
    }
    TrustList::parse(&list)
        .map(Some)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("proxy_allow_ips: {e}")))
}

/// A byte or count limit where 0 means none of its own (`--limit-request-line 0`, as in
/// gunicorn): the largest value, so that no comparison against it ever fails.
fn or_unlimited(n: usize) -> usize {
    if n == 0 {
        usize::MAX
    } else {
        n
    }
}

fn secs(d: &Bound<'_, PyDict>, key: &str) -> PyResult<Duration> {
    let v: f64 = get(d, key)?;
    if !(v > 0.0 && v.is_finite()) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "config key {key:?} must be a positive number of seconds"
        )));
    }
    Ok(Duration::from_secs_f64(v))
}

/// One `--static-expires` (or, `on_uri`, `--static-expires-uri`) rule: a pattern and seconds.
#[derive(Debug, Clone)]
pub struct ExpiresConfig {
    pub pattern: String,
    pub seconds: u64,
    pub on_uri: bool,
}

/// One `--static` mount, as the Python front validated it.
#[derive(Debug, Clone)]
pub struct MountConfig {
    pub prefix: String,
    pub directory: String,
    pub max_age: Option<u32>,
    pub immutable: bool,
    pub index: Option<String>,
    pub dotfiles: bool,
    pub follow_symlinks: bool,
    /// `;fallthrough`: a request under this mount that matches no file goes to the app.
    pub fallthrough: bool,
}

fn expires_rules(d: &Bound<'_, PyDict>) -> PyResult<Vec<ExpiresConfig>> {
    let rules: Vec<(String, u64, bool)> = get(d, "static_expires")?;
    Ok(rules
        .into_iter()
        .map(|(pattern, seconds, on_uri)| ExpiresConfig {
            pattern,
            seconds,
            on_uri,
        })
        .collect())
}

fn mounts(d: &Bound<'_, PyDict>) -> PyResult<Vec<MountConfig>> {
    let list = d
        .get_item("static")?
        .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err("config key \"static\" is missing"))?;
    let mut out = Vec::new();
    for item in list.try_iter()? {
        let m = item?;
        let m = m.cast::<PyDict>()?;
        out.push(MountConfig {
            prefix: get(m, "prefix")?,
            directory: get(m, "directory")?,
            max_age: get(m, "max_age")?,
            immutable: get(m, "immutable")?,
            index: get(m, "index")?,
            dotfiles: get(m, "dotfiles")?,
            follow_symlinks: get(m, "follow_symlinks")?,
            fallthrough: get(m, "fallthrough")?,
        });
    }
    Ok(out)
}

fn tls_settings(d: &Bound<'_, PyDict>) -> PyResult<Option<TlsSettings>> {
    let cert: Option<String> = get(d, "certfile")?;
    let key: Option<String> = get(d, "keyfile")?;
    let ca: Option<String> = get(d, "ca_certs")?;
    let client_auth = one_of(d, "cert_reqs", &ClientAuth::ALL)?;
    let min_version = one_of(d, "tls_min_version", &MinVersion::ALL)?;
    let Some(cert) = cert else {
        return Ok(None);
    };
    Ok(Some(TlsSettings {
        key_file: PathBuf::from(key.unwrap_or_else(|| cert.clone())),
        cert_file: PathBuf::from(cert),
        ca_file: ca.map(PathBuf::from),
        client_auth,
        min_version,
        alpn: vec![b"http/1.1".to_vec()],
    }))
}

impl Config {
    pub fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<Config> {
        let threads_min: usize = get(d, "threads_min")?;
        let threads_max: usize = get(d, "threads_max")?;
        if threads_max == 0 || threads_min > threads_max {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "threads must satisfy 0 <= min <= max and max >= 1",
            ));
        }
        let server_header: String = get(d, "server_header")?;
        Ok(Config {
            threads_min,
            threads_max,
            max_runnable: get(d, "max_runnable")?,
            scheduler: one_of(d, "scheduler", &Policy::ALL)?,
            spin: one_of(d, "spin", &SpinPolicy::ALL)?,
            pace: one_of(d, "pace", &PacePolicy::ALL)?,
            start_gate: one_of(d, "start_gate", &GatePolicy::ALL)?,
            header_timeout: secs(d, "header_timeout")?,
            keepalive_timeout: secs(d, "keepalive_timeout")?,
            read_timeout: secs(d, "read_timeout")?,
            write_timeout: secs(d, "write_timeout")?,
            body_pace: BodyPace {
                min_rate: get(d, "min_body_rate")?,
                total: {
                    let t: f64 = get(d, "body_timeout")?;
                    (t > 0.0).then(|| Duration::from_secs_f64(t))
                },
            },
            timeout: {
                let t: f64 = get(d, "timeout")?;
                if t == 0.0 {
                    None
                } else {
                    Some(secs(d, "timeout")?)
                }
            },
            graceful_timeout: secs(d, "graceful_timeout")?,
            drain_delay: Duration::from_secs_f64(get::<f64>(d, "drain_delay")?.max(0.0)),
            limits: Limits {
                // 0: no limit of its own (gunicorn's meaning); the head's limit still holds.
                max_request_line: or_unlimited(get(d, "limit_request_line")?),
                max_header_bytes: get(d, "limit_header_bytes")?,
                max_headers: or_unlimited(get(d, "limit_headers")?),
                max_body: get(d, "limit_body")?,
                max_field_bytes: or_unlimited(get(d, "limit_field_bytes")?),
            },
            head_overflow_closes: get(d, "head_overflow_closes")?,
            max_drain: get(d, "max_drain")?,
            http2: one_of(d, "http2", &Http2Mode::ALL)?,
            http2_max_streams: get(d, "http2_max_streams")?,
            // on, off: allowed_values.txt's order.
            http3: one_of(d, "http3", &[true, false])?,
            http3_0rtt: get(d, "http3_0rtt")?,
            http3_retry_above: get(d, "http3_retry_above")?,
            http3_congestion: one_of(d, "http3_congestion", &Http3Congestion::ALL)?,
            limit_response_headers: get(d, "limit_response_headers")?,
            write_high_water: get(d, "write_high_water")?,
            root_path: get(d, "root_path")?,
            forwarding: {
                let list: String = get(d, "forwarded_allow_ips")?;
                let trust = TrustList::parse(&list).map_err(|e| {
                    pyo3::exceptions::PyValueError::new_err(format!("forwarded_allow_ips: {e}"))
                })?;
                let family = one_of(d, "forwarded_headers", &FAMILIES)?;
                (!trust.is_empty()).then_some((trust, family))
            },
            forwarded_for: {
                let list: String = get(d, "forwarded_for_ips")?;
                let trust = TrustList::parse(&list).map_err(|e| {
                    pyo3::exceptions::PyValueError::new_err(format!("forwarded_for_ips: {e}"))
                })?;
                (!trust.is_empty()).then_some(trust)
            },
            forwarded_family: one_of(d, "forwarded_headers", &FAMILIES)?,
            proxy_trust: proxy_trust(d)?,
            health_path: get::<String>(d, "health_path")?.into_bytes(),
            debug: get::<String>(d, "log_level")? == "debug",
            url_scheme: get(d, "url_scheme")?,
            server_header: server_header.into_bytes(),
            access_log_fd: get(d, "access_log_fd")?,
            access_log_format: get(d, "access_log_format")?,
            access_log_when: get(d, "access_log_when")?,
            access_log_forwarded_for: get(d, "access_log_forwarded_for")?,
            server_timing: get(d, "server_timing")?,
            early_hints: get(d, "early_hints")?,
            metrics_bind: get(d, "metrics_bind")?,
            debug_requests: get(d, "debug_requests")?,
            no_control_socket: get(d, "no_control_socket")?,
            tls: tls_settings(d)?,
            static_mounts: mounts(d)?,
            static_fallthrough: get(d, "static_fallthrough")?,
            static_expires: expires_rules(d)?,
            add_headers: get(d, "add_headers")?,
            signal_fd: get(d, "signal_fd")?,
            app_name: get(d, "app_name")?,
            balance_fd: get(d, "balance_fd")?,
            balance_slots: get(d, "balance_slots")?,
            balance_slot: get(d, "balance_slot")?,
        })
    }
}

/// Whether and how clients present certificates (`--cert-reqs`, gunicorn's name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// No certificate asked for.
    None,
    /// Asked for; a client without one is served (`SSL_CLIENT_VERIFY=NONE`), a client with an
    /// invalid one is refused.
    Optional,
    /// A certificate issued by the CA file is required.
    Required,
}

impl ClientAuth {
    /// The variants in `allowed_values.txt`'s order for `cert_reqs`.
    pub const ALL: [ClientAuth; 3] = [ClientAuth::None, ClientAuth::Optional, ClientAuth::Required];

    pub fn parse(s: &str) -> Option<ClientAuth> {
        by_name("cert_reqs", &Self::ALL, s)
    }
}

/// The oldest protocol version served (`--tls-min-version`). Nothing below TLS 1.2 exists in
/// rustls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MinVersion {
    Tls12,
    Tls13,
}

impl MinVersion {
    /// The variants in `allowed_values.txt`'s order for `tls_min_version`.
    pub const ALL: [MinVersion; 2] = [MinVersion::Tls12, MinVersion::Tls13];

    pub fn parse(s: &str) -> Option<MinVersion> {
        by_name("tls_min_version", &Self::ALL, s)
    }
}

/// What TLS listeners are configured with (`--certfile`, `--keyfile`, `--ca-certs`,
/// `--cert-reqs`, `--tls-min-version`): plain values; `io::tls::load` reads and checks files.
#[derive(Debug, Clone)]
pub struct TlsSettings {
    /// PEM: the server certificate first, then its intermediates.
    pub cert_file: PathBuf,
    /// PEM: PKCS#8, SEC1 (EC) or PKCS#1 (RSA), unencrypted.
    pub key_file: PathBuf,
    /// PEM: the CAs that issue client certificates.
    pub ca_file: Option<PathBuf>,
    pub client_auth: ClientAuth,
    pub min_version: MinVersion,
    /// ALPN protocol ids offered, most preferred first (`http/1.1` today).
    pub alpn: Vec<Vec<u8>>,
}

#[cfg(test)]
mod tests;
