//! uWSGI's request log lines: its default line (`--access-log-format uwsgi`, uWSGI's
//! `uwsgi_logit_simple`, core/logging.c) and its `log-format` strings (`uwsgi:FORMAT`, from
//! `--uwsgi-log-format`: uWSGI's `%(var)` chunks, `uwsgi_build_log_format`), made with the
//! same bytes uWSGI 2.0 writes for the same request, but for the fields sluicegate cannot know
//! the way uWSGI does (below).
//!
//! The default line:
//! `[pid: P|app: 0|req: N/N] ADDR (USER) {V vars in B bytes} [CTIME] METHOD URI => generated
//! S bytes in T msecs (PROTO STATUS) H headers in HB bytes (1 switches on core 0)`; with
//! uWSGI's `log-micros` (`--access-log-format uwsgi-micros`) `T micros`, the time in
//! microseconds.
//!
//! The variables (uWSGI's `uwsgi_register_logchunks`): `uri`, `method`, `user`, `addr`,
//! `host`, `proto`, `uagent`, `referer`, `status`, `rsize` (body bytes), `hsize` (the
//! response head's bytes: status line, headers, blank line), `size` (both), `cl` (the request's
//! Content-Length), `micros`, `msecs`, `secs`, `tmsecs`, `tmicros`, `time`, `ltime`, `ftime`,
//! `ctime`, `epoch`, `pid`, `wid`, `switches`, `vars`, `core`, `vsz`, `rss`, `vszM`, `rssM`,
//! `pktsize`, `modifier1`, `modifier2`, `headers`, `werr`, `rerr`, `ioerr`; `var.NAME` (the
//! request variable NAME, read from the environ as the app left it); `metric.NAME` (no
//! metrics here: `-`); any other name is a log variable the app set with
//! `uwsgi.set_logvar` (kept in the environ under `uwsgi.logvar.`, uwsgi_module.py). An empty
//! value is `-`, as uWSGI writes it. Values are written raw, as uWSGI does, but for bytes that
//! could cut or forge a line (control bytes, DEL), written `\xHH`.
//!
//! How the figures uWSGI takes from its own request packet are made: `vars` and `pktsize` are
//! those of the packet uWSGI's `http-socket` builds for the same HTTP request (proto/http.c:
//! REQUEST_METHOD, REQUEST_URI, PATH_INFO, QUERY_STRING, SERVER_PROTOCOL, SCRIPT_NAME,
//! SERVER_NAME, SERVER_PORT, REMOTE_ADDR, then one variable per header name, repeated fields
//! joined with `, `); `vars` counts keys and values, as uWSGI's `var_cnt` does. The status
//! line's reason is the standard one for the code (the app's own text is not kept). `req:
//! N/N`: this worker's requests, twice (uWSGI's second figure counts every worker's). `core`
//! is 0 and `switches` 1 (no async cores).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sluicegate_proto::path::percent_decode;

use super::entry::{push_client, Entry};
use super::timings::{micros, End};

/// The environ key prefix of the app's log variables (uwsgi_module.LOGVAR_PREFIX).
pub const LOGVAR_PREFIX: &str = "uwsgi.logvar.";

/// This process's worker number for `%(wid)` (1 in a single process).
static WORKER_ID: AtomicU32 = AtomicU32::new(1);
/// Lines made in this process: the `req:` figures.
static REQUESTS: AtomicU64 = AtomicU64::new(0);

/// Set the worker number `%(wid)` writes: `slot` + 1 in a worker process (`worker`), else 1.
pub fn set_worker_slot(worker: bool, slot: usize) {
    let wid = if worker { slot as u32 + 1 } else { 1 };
    WORKER_ID.store(wid, Ordering::Relaxed);
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Var {
    Uri,
    Method,
    User,
    Addr,
    Host,
    Proto,
    Uagent,
    Referer,
    Status,
    Rsize,
    Hsize,
    Size,
    Cl,
    Micros,
    Msecs,
    Secs,
    Tmsecs,
    Tmicros,
    Time,
    Ltime,
    Ctime,
    Epoch,
    Pid,
    Wid,
    Switches,
    Vars,
    Core,
    Vsz,
    Rss,
    VszM,
    RssM,
    Pktsize,
    Zero,
    Headers,
    Werr,
    Rerr,
    Ioerr,
    /// `var.NAME`: an environ variable (uppercased as CGI keys are).
    Request(String),
    /// `metric.NAME`: none here.
    Metric,
    /// A log variable set with `uwsgi.set_logvar` (the environ key, lowercased).
    Logged(String),
}

fn var_named(name: &str) -> Var {
    if let Some(v) = name.strip_prefix("var.") {
        return Var::Request(v.to_string());
    }
    if name.starts_with("metric.") {
        return Var::Metric;
    }
    match name {
        "uri" => Var::Uri,
        "method" => Var::Method,
        "user" => Var::User,
        "addr" => Var::Addr,
        "host" => Var::Host,
        "proto" => Var::Proto,
        "uagent" => Var::Uagent,
        "referer" => Var::Referer,
        "status" => Var::Status,
        "rsize" => Var::Rsize,
        "hsize" => Var::Hsize,
        "size" => Var::Size,
        "cl" => Var::Cl,
        "micros" => Var::Micros,
        "msecs" => Var::Msecs,
        "secs" => Var::Secs,
        "tmsecs" => Var::Tmsecs,
        "tmicros" => Var::Tmicros,
        "time" => Var::Time,
        "ltime" | "ftime" => Var::Ltime,
        "ctime" => Var::Ctime,
        "epoch" => Var::Epoch,
        "pid" => Var::Pid,
        "wid" => Var::Wid,
        "switches" => Var::Switches,
        "vars" => Var::Vars,
        "core" => Var::Core,
        "vsz" => Var::Vsz,
        "rss" => Var::Rss,
        "vszM" => Var::VszM,
        "rssM" => Var::RssM,
        "pktsize" => Var::Pktsize,
        "modifier1" | "modifier2" => Var::Zero,
        "headers" => Var::Headers,
        "werr" => Var::Werr,
        "rerr" => Var::Rerr,
        "ioerr" => Var::Ioerr,
        other => Var::Logged(format!("{LOGVAR_PREFIX}{other}").to_lowercase()),
    }
}

#[derive(Debug)]
enum Part {
    Text(Vec<u8>),
    Var(Var),
}

/// A compiled uWSGI request log format.
#[derive(Debug)]
pub struct UwsgiFormat {
    /// None: uWSGI's default line.
    parts: Option<Vec<Part>>,
    /// The default line's time in microseconds (uWSGI's `log-micros`), else milliseconds.
    micros: bool,
    /// The address is the request's X-Forwarded-For, when it has one (uWSGI's
    /// `log-x-forwarded-for`; its packet's REMOTE_ADDR too).
    pub forwarded_for: bool,
}

impl UwsgiFormat {
    /// uWSGI's default request line; `micros`: its time in microseconds (`log-micros`).
    pub fn default_line(micros: bool) -> UwsgiFormat {
        UwsgiFormat {
            parts: None,
            micros,
            forwarded_for: false,
        }
    }

    /// A `log-format` string, read as uWSGI's `uwsgi_build_log_format` reads it: `%(name)`
    /// is a variable, anything else (a lone `%`, an unclosed `%(`) is text.
    pub fn parse(spec: &str) -> UwsgiFormat {
        let mut parts = Vec::new();
        let mut text = Vec::new();
        let mut rest = spec;
        while let Some(at) = rest.find("%(") {
            let after = &rest[at + 2..];
            match after.find(')') {
                Some(close) if close > 0 => {
                    text.extend_from_slice(&rest.as_bytes()[..at]);
                    if !text.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut text)));
                    }
                    parts.push(Part::Var(var_named(&after[..close])));
                    rest = &after[close + 1..];
                }
                _ => {
                    text.extend_from_slice(&rest.as_bytes()[..at + 2]);
                    rest = after;
                }
            }
        }
        text.extend_from_slice(rest.as_bytes());
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        UwsgiFormat {
            parts: Some(parts),
            micros: false,
            forwarded_for: false,
        }
    }

    /// The format needs the response's headers and the environ (every uWSGI line does: its
    /// `headers`/`hsize` figures, SERVER_PORT, log variables).
    pub fn names_extras(&self) -> bool {
        true
    }

    /// The environ variables read after the app's call (lowercased).
    pub fn environ_names(&self) -> Vec<String> {
        let mut names = vec!["server_port".to_string(), "remote_user".to_string()];
        for p in self.parts.iter().flatten() {
            match p {
                Part::Var(Var::Request(n)) => names.push(n.to_lowercase()),
                Part::Var(Var::Logged(n)) => names.push(n.clone()),
                _ => {}
            }
        }
        names
    }

    /// Append `e`'s line (without its newline); `pid`: this process's.
    pub fn make_line(&self, line: &mut Vec<u8>, e: &Entry<'_>, pid: u32) {
        let n = REQUESTS.fetch_add(1, Ordering::Relaxed) + 1;
        let Some(parts) = &self.parts else {
            return default_line(line, e, pid, n, self.forwarded_for, self.micros);
        };
        for p in parts {
            match p {
                Part::Text(t) => line.extend_from_slice(t),
                Part::Var(v) => {
                    let start = line.len();
                    push_var(line, v, e, pid, self.forwarded_for);
                    if line.len() == start {
                        line.push(b'-');
                    }
                }
            }
        }
    }
}

/// uWSGI's `uwsgi_logit_simple` line.
fn default_line(line: &mut Vec<u8>, e: &Entry<'_>, pid: u32, n: u64, fwd: bool, us: bool) {
    use std::io::Write;
    let (vars, pktsize) = packet(e, fwd);
    let (headers, hsize) = head_size(e);
    let _ = write!(line, "[pid: {pid}|app: 0|req: {n}/{n}] ");
    push_safe(line, &addr(e, fwd));
    line.extend_from_slice(b" (");
    push_safe(line, environ(e, "remote_user").unwrap_or(b""));
    let _ = write!(line, ") {{{vars} vars in {pktsize} bytes}} [");
    line.extend_from_slice(&ctime(start_of(e)));
    line.extend_from_slice(b"] ");
    push_safe(line, e.head.method());
    line.push(b' ');
    push_safe(line, e.head.target());
    let (time, unit) = match us {
        true => (micros(e.timings.total), "micros"),
        false => (micros(e.timings.total) / 1000, "msecs"),
    };
    let _ = write!(
        line,
        " => generated {} bytes in {time} {unit} ({} {}) {headers} headers in {hsize} bytes \
         (1 switches on core 0)",
        e.body_bytes,
        e.head.version.as_str(),
        e.status
    );
}

fn push_var(line: &mut Vec<u8>, v: &Var, e: &Entry<'_>, pid: u32, fwd: bool) {
    use std::io::Write;
    let total = micros(e.timings.total);
    let num = |line: &mut Vec<u8>, n: u64| {
        let _ = write!(line, "{n}");
    };
    match v {
        Var::Uri => push_safe(line, e.head.target()),
        Var::Method => push_safe(line, e.head.method()),
        Var::User => push_safe(line, environ(e, "remote_user").unwrap_or(b"")),
        Var::Addr => push_safe(line, &addr(e, fwd)),
        Var::Host => push_safe(line, &joined(e, b"host")),
        Var::Proto => line.extend_from_slice(e.head.version.as_str().as_bytes()),
        Var::Uagent => push_safe(line, &joined(e, b"user-agent")),
        Var::Referer => push_safe(line, &joined(e, b"referer")),
        Var::Status => num(line, u64::from(e.status)),
        Var::Rsize => num(line, e.body_bytes),
        Var::Hsize => num(line, head_size(e).1),
        Var::Size => num(line, head_size(e).1 + e.body_bytes),
        Var::Cl => num(line, content_length(e)),
        Var::Micros => num(line, total),
        Var::Msecs => num(line, total / 1000),
        Var::Secs => {
            let _ = write!(line, "{:.6}", e.timings.total.as_secs_f64());
        }
        Var::Tmsecs => num(line, epoch_micros(start_of(e)) / 1000),
        Var::Tmicros => num(line, epoch_micros(start_of(e))),
        Var::Time => num(line, start_of(e).as_secs()),
        Var::Ltime => line.extend_from_slice(&local_time(start_of(e).as_secs(), true)),
        Var::Ctime => line.extend_from_slice(&ctime(start_of(e))),
        Var::Epoch => num(line, now().as_secs()),
        Var::Pid => num(line, u64::from(pid)),
        Var::Wid => num(line, u64::from(WORKER_ID.load(Ordering::Relaxed))),
        Var::Switches => num(line, 1),
        Var::Vars => num(line, packet(e, fwd).0),
        Var::Core | Var::Zero | Var::Rerr => num(line, 0),
        Var::Vsz => num(line, memory().0),
        Var::Rss => num(line, memory().1),
        Var::VszM => num(line, memory().0 / 1024 / 1024),
        Var::RssM => num(line, memory().1 / 1024 / 1024),
        Var::Pktsize => num(line, packet(e, fwd).1),
        Var::Headers => num(line, head_size(e).0),
        Var::Werr | Var::Ioerr => num(line, u64::from(e.end == End::ClientGone)),
        Var::Request(name) => push_safe(line, &request_var(e, name)),
        Var::Metric => {}
        Var::Logged(key) => push_safe(line, environ(e, key).unwrap_or(b"")),
    }
}

/// The client's address as uWSGI's REMOTE_ADDR: the peer, or with `fwd` the request's
/// X-Forwarded-For when it has one (its whole value, as uWSGI takes it).
fn addr(e: &Entry<'_>, fwd: bool) -> Vec<u8> {
    let forwarded = if fwd {
        joined(e, b"x-forwarded-for")
    } else {
        Vec::new()
    };
    if !forwarded.is_empty() {
        return forwarded;
    }
    let mut client = Vec::new();
    push_client(&mut client, e.client);
    client
}

/// An environ variable as the app left it (`key` in any case).
fn environ<'a>(e: &Entry<'a>, key: &str) -> Option<&'a [u8]> {
    e.extras
        .and_then(|x| x.environ_value(key.as_bytes()))
        .map(|(v, _)| v.as_bytes())
}

/// `var.NAME`: the environ's, else the one the request carries (an `HTTP_*` header).
fn request_var(e: &Entry<'_>, name: &str) -> Vec<u8> {
    if let Some(v) = environ(e, name) {
        return v.to_vec();
    }
    match name.strip_prefix("HTTP_") {
        Some(h) => joined(e, h.replace('_', "-").as_bytes()),
        None => Vec::new(),
    }
}

/// Request header `name`, repeated fields joined with `, ` (uWSGI's http-socket does).
fn joined(e: &Entry<'_>, name: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for (n, v) in e.head.headers() {
        if n.eq_ignore_ascii_case(name) {
            if !out.is_empty() {
                out.extend_from_slice(b", ");
            }
            out.extend_from_slice(v);
        }
    }
    out
}

fn content_length(e: &Entry<'_>) -> u64 {
    std::str::from_utf8(&joined(e, b"content-length"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// (variables counted as keys and values, bytes) of the packet uWSGI's http-socket builds.
fn packet(e: &Entry<'_>, fwd: bool) -> (u64, u64) {
    let head = e.head;
    let var = |k: usize, v: usize| (2 + k + 2 + v) as u64;
    let client = addr(e, fwd);
    let port = environ(e, "server_port").map_or(2, <[u8]>::len);
    let mut count = 9u64;
    let mut bytes = var(14, head.method().len())
        + var(11, head.target().len())
        + var(9, percent_decode(head.path()).len())
        + var(12, head.query().len())
        + var(15, head.version.as_str().len())
        + var(11, 0)
        + var(11, hostname().len())
        + var(11, port)
        + var(11, client.len());
    let mut seen: Vec<(Vec<u8>, usize)> = Vec::new();
    for (n, v) in head.headers() {
        let key = n.to_ascii_uppercase();
        match seen.iter_mut().find(|(k, _)| *k == key) {
            Some((_, len)) => *len += 2 + v.len(),
            None => seen.push((key, v.len())),
        }
    }
    for (key, len) in &seen {
        let bare = key.as_slice() == b"CONTENT-LENGTH" || key.as_slice() == b"CONTENT-TYPE";
        bytes += var(key.len() + if bare { 0 } else { 5 }, *len);
        count += 1;
    }
    (count * 2, bytes)
}

/// (headers, bytes) of the response head as uWSGI writes it: `PROTO CODE REASON\r\n`, each
/// `Name: value\r\n`, and the blank line.
fn head_size(e: &Entry<'_>) -> (u64, u64) {
    let mut bytes = e.head.version.as_str().len() + 1 + 3 + 1 + reason(e.status).len() + 2 + 2;
    let mut count = 0u64;
    if let Some(x) = e.extras {
        for (n, v) in x.headers() {
            bytes += n.len() + 2 + v.len() + 2;
            count += 1;
        }
    }
    (count, bytes as u64)
}

/// The standard reason phrase of `code` (Python's `http.HTTPStatus`, what frameworks send).
fn reason(code: u16) -> &'static str {
    match code {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        413 => "Request Entity Too Large",
        414 => "Request-URI Too Long",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Unknown",
    }
}

/// Bytes as uWSGI writes them, but control bytes and DEL as `\xHH` (one line stays one line).
fn push_safe(line: &mut Vec<u8>, v: &[u8]) {
    for &b in v {
        if b < 0x20 || b == 0x7f {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            line.extend_from_slice(&[
                b'\\',
                b'x',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 15)],
            ]);
        } else {
            line.push(b);
        }
    }
}

fn now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
}

/// When the request started (now less its total time), since the epoch.
fn start_of(e: &Entry<'_>) -> Duration {
    now().saturating_sub(e.timings.total)
}

fn epoch_micros(d: Duration) -> u64 {
    d.as_secs() * 1_000_000 + u64::from(d.subsec_micros())
}

/// This host's name (uWSGI's SERVER_NAME), read once.
fn hostname() -> &'static [u8] {
    static NAME: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        let mut buf = [0u8; 256];
        // SAFETY: gethostname writes at most buf.len() bytes into the buffer we own.
        let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
        if r != 0 {
            return Vec::new();
        }
        buf.iter().take_while(|&&b| b != 0).copied().collect()
    })
}

/// (vsz, rss) of this process in bytes (/proc/self/statm).
fn memory() -> (u64, u64) {
    let page = 4096u64;
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            let mut it = s.split_whitespace().map(|x| x.parse::<u64>().ok());
            Some((it.next()?? * page, it.next()?? * page))
        })
        .unwrap_or((0, 0))
}

/// C's `ctime` of `t` without its newline (`Fri Nov 27 02:18:11 2026`), local time.
fn ctime(t: Duration) -> Vec<u8> {
    local_time(t.as_secs(), false)
}

/// Local time as `%d/%b/%Y:%H:%M:%S %z` (`clf`) or as ctime's 24 characters.
fn local_time(secs: u64, clf: bool) -> Vec<u8> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    let t = secs as libc::time_t;
    // SAFETY: a zeroed tm is a valid value for localtime_r to fill.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: localtime_r reads the time_t and fills the tm we own, both valid for the call.
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return b"-".to_vec();
    }
    let month = MONTHS[tm.tm_mon.clamp(0, 11) as usize];
    if clf {
        let off = tm.tm_gmtoff / 60;
        let sign = if off < 0 { '-' } else { '+' };
        return format!(
            "{:02}/{month}/{}:{:02}:{:02}:{:02} {sign}{:02}{:02}",
            tm.tm_mday,
            tm.tm_year + 1900,
            tm.tm_hour,
            tm.tm_min,
            tm.tm_sec,
            off.abs() / 60,
            off.abs() % 60
        )
        .into_bytes();
    }
    format!(
        "{} {month} {:2} {:02}:{:02}:{:02} {}",
        DAYS[tm.tm_wday.clamp(0, 6) as usize],
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        tm.tm_year + 1900
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_as_uwsgi_reads_them() {
        let f = UwsgiFormat::parse("%(addr) - %(user) [%(ltime)] \"%(method) %(uri)\" %(foo) 5%");
        let parts = f.parts.unwrap();
        assert!(matches!(&parts[0], Part::Var(Var::Addr)));
        assert!(matches!(&parts[1], Part::Text(t) if t == b" - "));
        assert!(
            matches!(parts.iter().rev().nth(1), Some(Part::Var(Var::Logged(k))) if k == "uwsgi.logvar.foo")
        );
        assert!(matches!(parts.last(), Some(Part::Text(t)) if t == b" 5%"));
        let open = UwsgiFormat::parse("a %(b");
        assert!(matches!(&open.parts.unwrap()[..], [Part::Text(t)] if t == b"a %(b"));
    }

    #[test]
    fn ctime_is_24_characters() {
        assert_eq!(ctime(Duration::from_secs(1_795_746_292)).len(), 24);
        assert_eq!(local_time(1_795_746_292, true).len(), 26); // 27/Nov/2026:02:24:52 +0000
    }
}
