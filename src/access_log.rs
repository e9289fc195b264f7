//! The access log: one line per request, in a format chosen by `--access-log-format`
//! (`combined`, gunicorn's default `%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s"`;
//! `common`; `json`, one object per line; or a template of named `{fields}`), with where the
//! request's time went ([`Timings`]). Times are UTC.
//!
//! Lines are made on the thread that finishes the request and appended, under a lock held for a
//! copy, to a buffer of at most [`BUFFER_MAX`] bytes; a writer thread writes what piled up every
//! [`FLUSH_EVERY`] (sooner past [`FLUSH_AT`]), so a request costs no system call and no wake-up,
//! and a slow disk never stalls the event loop or an app thread: when the buffer is full the
//! line is dropped and counted (`dropped`), never waited for. (A channel with a wake-up per line
//! cost 5.8 µs of CPU per request and halved S6's throughput.) The writer writes to the
//! descriptor the Python front opened, which `USR1` replaces in place; the server flushes what
//! is left when it stops.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use sluicegate_proto::h1::encode::{decimal, DECIMAL_LEN};
use sluicegate_proto::RequestHead;

use crate::http_date::http_date;
use crate::io::stream::Peer;
use crate::metrics::RequestMetrics;

/// Bytes of lines waiting for the writer thread at most; more are dropped (and counted).
pub const BUFFER_MAX: usize = 4 * 1024 * 1024;
/// The writer writes what piled up this often...
pub const FLUSH_EVERY: Duration = Duration::from_millis(10);
/// ...or as soon as this much is waiting.
pub const FLUSH_AT: usize = 256 * 1024;

/// How a request ended, for the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Ok,
    /// The client went away before the response was sent.
    ClientGone,
    /// `--timeout` answered for the app (504, or the connection cut).
    Timeout,
    /// The app failed (500), or the request was refused.
    Error,
}

impl End {
    fn as_str(self) -> &'static str {
        match self {
            End::Ok => "ok",
            End::ClientGone => "client_gone",
            End::Timeout => "timeout",
            End::Error => "error",
        }
    }
}

/// Where one request's time went, measured with the monotonic clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timings {
    /// Parsed → the app called (waiting for a thread, or for the loop).
    pub queue: Duration,
    /// The app called → its iterable exhausted and closed.
    pub app: Duration,
    /// First byte written → last byte taken by the kernel's send buffer.
    pub send: Duration,
    /// Parsed → last byte taken.
    pub total: Duration,
}

/// One request's line, its fields borrowed from the request.
pub struct Entry<'a> {
    pub head: &'a RequestHead,
    /// The client (after forwarding rules and the PROXY protocol).
    pub client: &'a Peer,
    pub status: u16,
    pub body_bytes: u64,
    pub timings: Timings,
    pub end: End,
    /// The app ran inline on the event loop's thread (else on a pool thread, or no app).
    pub inline: Option<bool>,
}

/// A request whose response is still being sent by the event loop: its line is written when the
/// last byte is taken (or when the client goes away), with the send time then known.
pub struct PendingLog {
    pub head: RequestHead,
    pub client: Peer,
    pub status: u16,
    pub body_bytes: u64,
    /// `metrics::now_ns` readings.
    pub parsed_at: u64,
    pub queue: Duration,
    pub app: Duration,
    /// When the response's first byte was ready (its head encoded).
    pub send_from: u64,
    pub end: End,
    pub inline: Option<bool>,
}

impl PendingLog {
    /// The request is over (its last byte taken, or `gone`: the client left first): count it
    /// in `metrics`, and write its line if the log is on.
    pub fn finish(self, log: Option<&AccessLog>, metrics: &RequestMetrics, gone: bool) {
        Finished {
            head: &self.head,
            client: &self.client,
            status: self.status,
            body_bytes: self.body_bytes,
            parsed_at: self.parsed_at,
            queue: self.queue,
            app: self.app,
            send_from: self.send_from,
            end: if gone { End::ClientGone } else { self.end },
            inline: self.inline,
        }
        .account(log, metrics, crate::metrics::now_ns());
    }
}

/// A finished request, its fields borrowed: what `PendingLog` holds, for a request whose last
/// byte was taken before its app thread let go of it (no copy of the head then).
pub struct Finished<'a> {
    pub head: &'a RequestHead,
    pub client: &'a Peer,
    pub status: u16,
    pub body_bytes: u64,
    pub parsed_at: u64,
    pub queue: Duration,
    pub app: Duration,
    pub send_from: u64,
    pub end: End,
    pub inline: Option<bool>,
}

impl Finished<'_> {
    /// Count it in `metrics` and write its line if the log is on; `now`: its last byte's time.
    pub fn account(&self, log: Option<&AccessLog>, metrics: &RequestMetrics, now: u64) {
        let timings = Timings {
            queue: self.queue,
            app: self.app,
            send: crate::metrics::since(self.send_from, now),
            total: crate::metrics::since(self.parsed_at, now),
        };
        metrics.record(
            self.status,
            self.body_bytes,
            &timings,
            self.end,
            self.inline.is_some(),
        );
        if let Some(log) = log {
            log.write(&Entry {
                head: self.head,
                client: self.client,
                status: self.status,
                body_bytes: self.body_bytes,
                timings,
                end: self.end,
                inline: self.inline,
            });
        }
    }
}

/// The fields a template may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Client,
    Time,
    Method,
    Target,
    Path,
    Query,
    Protocol,
    Status,
    Bytes,
    Referer,
    UserAgent,
    RequestId,
    QueueUs,
    AppUs,
    SendUs,
    TotalUs,
    End,
    Pid,
    Scheduler,
}

const FIELDS: &[(&str, Field)] = &[
    ("client", Field::Client),
    ("time", Field::Time),
    ("method", Field::Method),
    ("target", Field::Target),
    ("path", Field::Path),
    ("query", Field::Query),
    ("protocol", Field::Protocol),
    ("status", Field::Status),
    ("bytes", Field::Bytes),
    ("referer", Field::Referer),
    ("user_agent", Field::UserAgent),
    ("request_id", Field::RequestId),
    ("queue_us", Field::QueueUs),
    ("app_us", Field::AppUs),
    ("send_us", Field::SendUs),
    ("total_us", Field::TotalUs),
    ("end", Field::End),
    ("pid", Field::Pid),
    ("scheduler", Field::Scheduler),
];

/// The names a template may use, for the option's documentation and errors.
pub fn field_names() -> Vec<&'static str> {
    FIELDS.iter().map(|(n, _)| *n).collect()
}

#[derive(Debug)]
enum Piece {
    Text(Vec<u8>),
    Field(Field),
}

#[derive(Debug)]
enum Format {
    Combined,
    Common,
    Json,
    Template(Vec<Piece>),
}

fn parse_format(spec: &str) -> Result<Format, String> {
    match spec {
        "combined" => return Ok(Format::Combined),
        "common" => return Ok(Format::Common),
        "json" => return Ok(Format::Json),
        _ => {}
    }
    let mut pieces = Vec::new();
    let mut rest = spec;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            pieces.push(Piece::Text(rest.as_bytes()[..open].to_vec()));
        }
        let close = rest[open..]
            .find('}')
            .ok_or_else(|| format!("unclosed '{{' in {spec:?}"))?;
        let name = &rest[open + 1..open + close];
        let field = FIELDS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| *f)
            .ok_or_else(|| {
                format!(
                    "unknown field {{{name}}} (known: {})",
                    field_names().join(", ")
                )
            })?;
        pieces.push(Piece::Field(field));
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.as_bytes().to_vec()));
    }
    Ok(Format::Template(pieces))
}

pub struct AccessLog {
    format: Format,
    pending: Arc<Pending>,
    /// Lines dropped because the writer fell behind.
    pub dropped: AtomicU64,
    pid: u32,
    /// The format names Referer, User-Agent or X-Request-ID (looked up once per line).
    names_headers: bool,
}

/// Lines not yet written, shared with the writer thread.
struct Pending {
    fd: RawFd,
    buf: Mutex<Vec<u8>>,
    wake: Condvar,
    /// Set when the log goes away: the writer writes what is left and ends.
    closed: std::sync::atomic::AtomicBool,
    /// Held from taking a batch to having written it, so batches keep their order.
    writing: Mutex<()>,
}

impl Pending {
    fn write_out(&self) {
        let _order = self.writing.lock().unwrap();
        let batch = std::mem::take(&mut *self.buf.lock().unwrap());
        if !batch.is_empty() {
            write_all(self.fd, &batch);
        }
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        self.pending.closed.store(true, Ordering::Release);
        self.pending.wake.notify_one();
    }
}

impl AccessLog {
    /// `None` when the log is off (fd < 0). Starts the writer thread.
    pub fn new(fd: i32, format: &str) -> Result<Option<AccessLog>, String> {
        let format = parse_format(format)?;
        if fd < 0 {
            return Ok(None);
        }
        let pending = Arc::new(Pending {
            fd,
            buf: Mutex::new(Vec::with_capacity(FLUSH_AT * 2)),
            wake: Condvar::new(),
            closed: std::sync::atomic::AtomicBool::new(false),
            writing: Mutex::new(()),
        });
        let p = Arc::clone(&pending);
        std::thread::Builder::new()
            .name("sluicegate-accesslog".into())
            .spawn(move || loop {
                {
                    let g = p.buf.lock().unwrap();
                    if g.len() < FLUSH_AT && !p.closed.load(Ordering::Acquire) {
                        let _ = p.wake.wait_timeout(g, FLUSH_EVERY).unwrap();
                    }
                }
                p.write_out();
                if p.closed.load(Ordering::Acquire) {
                    p.write_out();
                    return;
                }
            })
            .map_err(|e| format!("cannot start the access log writer: {e}"))?;
        Ok(Some(AccessLog {
            pending,
            dropped: AtomicU64::new(0),
            pid: std::process::id(),
            names_headers: match &format {
                Format::Common => false,
                Format::Combined | Format::Json => true,
                Format::Template(pieces) => pieces.iter().any(|p| {
                    matches!(
                        p,
                        Piece::Field(Field::Referer | Field::UserAgent | Field::RequestId)
                    )
                }),
            },
            format,
        }))
    }

    /// Make `e`'s line and hand it to the writer thread (or count it dropped).
    pub fn write(&self, e: &Entry<'_>) {
        // One line buffer per thread, reused: a request's line costs no allocation.
        thread_local! {
            static LINE: std::cell::RefCell<Vec<u8>> =
                std::cell::RefCell::new(Vec::with_capacity(LINE_KEEP));
        }
        LINE.with(|cell| {
            let mut line = cell.borrow_mut();
            line.clear();
            self.make_line(&mut line, e);
            self.append(&line);
            if line.capacity() > 16 * LINE_KEEP {
                // A line with huge headers: do not keep its buffer.
                *line = Vec::with_capacity(LINE_KEEP);
            }
        });
    }

    fn make_line(&self, line: &mut Vec<u8>, e: &Entry<'_>) {
        let named = if self.names_headers {
            NamedHeaders::of(e.head)
        } else {
            NamedHeaders::default()
        };
        match &self.format {
            Format::Combined | Format::Common => {
                push_client(line, e.client);
                line.extend_from_slice(b" - - [");
                push_clf_time(line);
                line.extend_from_slice(b"] \"");
                // Every field the client controls goes through one escaper (method, target,
                // Referer, User-Agent): a '"' or a control byte in any of them cannot forge a
                // field or a line.
                push_escaped(line, e.head.method());
                line.push(b' ');
                push_escaped(line, e.head.target());
                line.push(b' ');
                line.extend_from_slice(e.head.version.as_str().as_bytes());
                line.extend_from_slice(b"\" ");
                push_num(line, u64::from(e.status));
                line.push(b' ');
                if e.body_bytes == 0 {
                    line.push(b'-');
                } else {
                    push_num(line, e.body_bytes);
                }
                if matches!(self.format, Format::Combined) {
                    for value in [named.referer, named.user_agent] {
                        line.extend_from_slice(b" \"");
                        push_escaped(line, value.unwrap_or(b"-"));
                        line.push(b'"');
                    }
                }
            }
            Format::Json => push_json(line, e, &named, self.pid),
            Format::Template(pieces) => {
                for p in pieces {
                    match p {
                        Piece::Text(t) => line.extend_from_slice(t),
                        Piece::Field(f) => self.push_field(line, e, &named, *f, false),
                    }
                }
            }
        }
        line.push(b'\n');
    }

    /// Append a made line to what the writer thread takes, or drop and count it when full.
    fn append(&self, line: &[u8]) {
        let mut buf = self.pending.buf.lock().unwrap();
        if buf.len() + line.len() > BUFFER_MAX {
            drop(buf);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        buf.extend_from_slice(line);
        let full = buf.len() >= FLUSH_AT;
        drop(buf);
        if full {
            self.pending.wake.notify_one();
        }
    }

    /// Write what is waiting now, on this thread (the server stopping: the process may leave
    /// without waiting for the writer).
    pub fn flush(&self) {
        self.pending.write_out();
    }

    /// One field's value: in JSON as a JSON value (strings escaped for any byte), in a
    /// template as text escaped as in the combined format.
    fn push_field(
        &self,
        line: &mut Vec<u8>,
        e: &Entry<'_>,
        named: &NamedHeaders<'_>,
        f: Field,
        json: bool,
    ) {
        let text = |line: &mut Vec<u8>, v: &[u8]| {
            if json {
                push_json_string(line, v);
            } else {
                push_escaped(line, v);
            }
        };
        // Text that never needs escaping (an address, a date, a word of ours).
        let plain = |line: &mut Vec<u8>, push: &dyn Fn(&mut Vec<u8>)| {
            if json {
                line.push(b'"');
            }
            push(line);
            if json {
                line.push(b'"');
            }
        };
        let us = |line: &mut Vec<u8>, d: Duration| push_num(line, micros(d));
        match f {
            Field::Client => plain(line, &|l| push_client(l, e.client)),
            Field::Time => plain(line, &push_clf_time),
            Field::Method => text(line, e.head.method()),
            Field::Target => text(line, e.head.target()),
            Field::Path => text(line, e.head.path()),
            Field::Query => text(line, e.head.query()),
            Field::Protocol => plain(line, &|l| {
                l.extend_from_slice(e.head.version.as_str().as_bytes())
            }),
            Field::Status => push_num(line, u64::from(e.status)),
            Field::Bytes => push_num(line, e.body_bytes),
            Field::Referer => text(line, named.referer.unwrap_or(b"")),
            Field::UserAgent => text(line, named.user_agent.unwrap_or(b"")),
            Field::RequestId => text(line, named.request_id.unwrap_or(b"")),
            Field::QueueUs => us(line, e.timings.queue),
            Field::AppUs => us(line, e.timings.app),
            Field::SendUs => us(line, e.timings.send),
            Field::TotalUs => us(line, e.timings.total),
            Field::End => plain(line, &|l| l.extend_from_slice(e.end.as_str().as_bytes())),
            Field::Pid => push_num(line, u64::from(self.pid)),
            Field::Scheduler => plain(line, &|l| l.extend_from_slice(scheduler(e.inline))),
        }
    }
}

/// A line buffer keeps this much room between lines.
const LINE_KEEP: usize = 1024;

/// `e` as one JSON object: every field of [`FIELDS`], in its order. Written out field by field
/// (constant keys, no dispatch per field): this is the format a log pipeline reads at full
/// traffic.
fn push_json(line: &mut Vec<u8>, e: &Entry<'_>, named: &NamedHeaders<'_>, pid: u32) {
    let head = e.head;
    line.extend_from_slice(b"{\"client\":\"");
    push_client(line, e.client);
    line.extend_from_slice(b"\",\"time\":\"");
    push_clf_time(line);
    line.extend_from_slice(b"\",\"method\":");
    push_json_string(line, head.method());
    line.extend_from_slice(b",\"target\":");
    push_json_string(line, head.target());
    line.extend_from_slice(b",\"path\":");
    push_json_string(line, head.path());
    line.extend_from_slice(b",\"query\":");
    push_json_string(line, head.query());
    line.extend_from_slice(b",\"protocol\":\"");
    line.extend_from_slice(head.version.as_str().as_bytes());
    line.extend_from_slice(b"\",\"status\":");
    push_num(line, u64::from(e.status));
    line.extend_from_slice(b",\"bytes\":");
    push_num(line, e.body_bytes);
    line.extend_from_slice(b",\"referer\":");
    push_json_string(line, named.referer.unwrap_or(b""));
    line.extend_from_slice(b",\"user_agent\":");
    push_json_string(line, named.user_agent.unwrap_or(b""));
    line.extend_from_slice(b",\"request_id\":");
    push_json_string(line, named.request_id.unwrap_or(b""));
    line.extend_from_slice(b",\"queue_us\":");
    push_num(line, micros(e.timings.queue));
    line.extend_from_slice(b",\"app_us\":");
    push_num(line, micros(e.timings.app));
    line.extend_from_slice(b",\"send_us\":");
    push_num(line, micros(e.timings.send));
    line.extend_from_slice(b",\"total_us\":");
    push_num(line, micros(e.timings.total));
    line.extend_from_slice(b",\"end\":\"");
    line.extend_from_slice(e.end.as_str().as_bytes());
    line.extend_from_slice(b"\",\"pid\":");
    push_num(line, u64::from(pid));
    line.extend_from_slice(b",\"scheduler\":\"");
    line.extend_from_slice(scheduler(e.inline));
    line.extend_from_slice(b"\"}");
}

/// Whole microseconds, in u64 arithmetic (`as_micros` divides a u128).
fn micros(d: Duration) -> u64 {
    d.as_secs() * 1_000_000 + u64::from(d.subsec_micros())
}

fn scheduler(inline: Option<bool>) -> &'static [u8] {
    match inline {
        Some(true) => b"inline",
        Some(false) => b"pool",
        None => b"loop",
    }
}

/// The request headers a line may name, found in one pass over the head (first value of each).
#[derive(Default)]
struct NamedHeaders<'a> {
    referer: Option<&'a [u8]>,
    user_agent: Option<&'a [u8]>,
    request_id: Option<&'a [u8]>,
}

impl<'a> NamedHeaders<'a> {
    fn of(head: &'a RequestHead) -> Self {
        let mut found = NamedHeaders::default();
        for (name, value) in head.headers() {
            let slot = match name.len() {
                7 if name.eq_ignore_ascii_case(b"referer") => &mut found.referer,
                10 if name.eq_ignore_ascii_case(b"user-agent") => &mut found.user_agent,
                12 if name.eq_ignore_ascii_case(b"x-request-id") => &mut found.request_id,
                _ => continue,
            };
            slot.get_or_insert(value);
        }
        found
    }
}

fn write_all(fd: RawFd, mut rest: &[u8]) {
    while !rest.is_empty() {
        // SAFETY: `rest` is a valid readable slice; fd is the log descriptor owned by the
        // Python front for the server's lifetime.
        let n = unsafe { libc::write(fd, rest.as_ptr() as *const libc::c_void, rest.len()) };
        if n <= 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        rest = &rest[n as usize..];
    }
}

fn push_client(line: &mut Vec<u8>, peer: &Peer) {
    match peer {
        Peer::Ip(a) => match a.ip() {
            // Four small numbers: cheaper than the formatter, which costs ~900 instructions.
            std::net::IpAddr::V4(v4) => {
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
            ip => {
                use std::io::Write;
                let _ = write!(line, "{ip}");
            }
        },
        Peer::Unix => line.extend_from_slice(b"unix"),
    }
}

/// IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT" rearranged to "06/Nov/1994:08:49:37 +0000".
fn push_clf_time(line: &mut Vec<u8>) {
    let d = http_date();
    line.extend_from_slice(&d[5..7]);
    line.push(b'/');
    line.extend_from_slice(&d[8..11]);
    line.push(b'/');
    line.extend_from_slice(&d[12..16]);
    line.push(b':');
    line.extend_from_slice(&d[17..25]);
    line.extend_from_slice(b" +0000");
}

fn push_num(line: &mut Vec<u8>, n: u64) {
    let mut buf = [0u8; DECIMAL_LEN];
    line.extend_from_slice(decimal(n, &mut buf));
}

/// Append `v` with `"` and `\\` backslash-escaped and every byte outside printable ASCII as
/// `\\xHH` (as nginx escapes its log fields), so a log line is always one line of printable
/// ASCII whose quoted fields cannot be closed early.
fn push_escaped(line: &mut Vec<u8>, v: &[u8]) {
    push_with_escapes(line, v, |line, b| match b {
        b'"' | b'\\' => line.extend_from_slice(&[b'\\', b]),
        _ => line.extend_from_slice(&[
            b'\\',
            b'x',
            HEX[usize::from(b >> 4)],
            HEX[usize::from(b & 15)],
        ]),
    });
}

/// `v` as a JSON string: bytes are latin-1 characters (as PEP 3333 tunnels them), `"`, `\\`
/// and control characters (C0, DEL, C1) escaped, everything else as UTF-8: valid JSON, and
/// one line, for any bytes.
fn push_json_string(line: &mut Vec<u8>, v: &[u8]) {
    line.push(b'"');
    push_with_escapes(line, v, |line, b| match b {
        b'"' | b'\\' => line.extend_from_slice(&[b'\\', b]),
        // From 0xa0 on, the character itself; DEL and the C1 controls escaped, so that no
        // tool splitting lines (NEL is 0x85) can cut a line short.
        0xa0..=0xff => line.extend_from_slice(&[0xc0 | (b >> 6), 0x80 | (b & 0x3f)]),
        _ => line.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(b >> 4)],
            HEX[usize::from(b & 15)],
        ]),
    });
    line.push(b'"');
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Append `v`, runs of plain bytes ([`JSON_PLAIN`]) copied whole and every other byte as
/// `escape` writes it.
#[inline]
fn push_with_escapes(line: &mut Vec<u8>, v: &[u8], escape: impl Fn(&mut Vec<u8>, u8)) {
    line.reserve(v.len() + 2);
    let mut run = 0;
    for (i, &b) in v.iter().enumerate() {
        if JSON_PLAIN[usize::from(b)] {
            continue;
        }
        line.extend_from_slice(&v[run..i]);
        run = i + 1;
        escape(line, b);
    }
    line.extend_from_slice(&v[run..]);
}

/// Bytes a JSON string and a log field carry as they are: printable ASCII but '"' and '\\'.
const JSON_PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0x20;
    while b <= 0x7e {
        t[b] = b != b'"' as usize && b != b'\\' as usize;
        b += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn json_strings_are_valid_utf8_for_every_byte() {
        let all: Vec<u8> = (0..=255u8).collect();
        let mut out = Vec::new();
        push_json_string(&mut out, &all);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with('"') && text.ends_with('"'));
        assert!(text.contains("\\u0000") && text.contains("\\u001f") && text.contains("\\\""));
        assert!(text.contains('ÿ') && text.contains("\\u0085") && text.contains("\\u007f"));
    }

    #[test]
    fn json_strings_carry_each_byte_as_its_latin1_character() {
        for b in 0..=255u8 {
            let mut out = Vec::new();
            push_json_string(&mut out, &[b'a', b, b'z']);
            let text = String::from_utf8(out).unwrap();
            let inner = &text[2..text.len() - 2];
            let expect = match b {
                b'"' => "\\\"".to_string(),
                b'\\' => "\\\\".to_string(),
                0x20..=0x7e | 0xa0..=0xff => char::from(b).to_string(),
                _ => format!("\\u{:04x}", b),
            };
            assert_eq!(inner, expect, "byte {b:#x}");
        }
    }

    #[test]
    fn named_headers_are_found_in_one_pass_first_value_wins() {
        let wire = b"GET / HTTP/1.1\r\nHost: h\r\nUser-Agent: a\r\nREFERER: r\r\n\
                     user-agent: b\r\nX-Request-Id: 7\r\n\r\n";
        let (head, _) = sluicegate_proto::h1::HeadParser::new()
            .parse(wire, &sluicegate_proto::Limits::default())
            .unwrap()
            .unwrap();
        let n = NamedHeaders::of(&head);
        assert_eq!(n.user_agent, Some(&b"a"[..]));
        assert_eq!(n.referer, Some(&b"r"[..]));
        assert_eq!(n.request_id, Some(&b"7"[..]));
    }

    #[test]
    fn a_json_line_has_every_field_in_order() {
        let wire = b"GET /a?b=1 HTTP/1.1\r\nHost: h\r\nUser-Agent: \"x\"\r\n\r\n";
        let (head, _) = sluicegate_proto::h1::HeadParser::new()
            .parse(wire, &sluicegate_proto::Limits::default())
            .unwrap()
            .unwrap();
        let client = Peer::Ip("10.100.255.0:5".parse().unwrap());
        let e = Entry {
            head: &head,
            client: &client,
            status: 200,
            body_bytes: 13,
            timings: Timings::default(),
            end: End::Ok,
            inline: Some(true),
        };
        let mut line = Vec::new();
        push_json(&mut line, &e, &NamedHeaders::of(&head), 42);
        let text = String::from_utf8(line).unwrap();
        let mut at = 0;
        for (name, _) in FIELDS {
            let key = format!("\"{name}\":");
            let found = text[at..]
                .find(&key)
                .unwrap_or_else(|| panic!("{name} in {text}"));
            at += found + key.len();
        }
        assert!(text.starts_with("{\"client\":\"10.100.255.0\",") && text.ends_with("\"inline\"}"));
        assert!(
            text.contains("\"user_agent\":\"\\\"x\\\"\"") && text.contains("\"query\":\"b=1\"")
        );
    }

    #[test]
    fn templates_name_known_fields() {
        assert!(
            matches!(parse_format("{client} {status} {app_us}us"), Ok(Format::Template(p)) if p.len() == 6)
        );
        assert!(parse_format("{nope}")
            .unwrap_err()
            .contains("unknown field {nope}"));
        assert!(parse_format("{client").unwrap_err().contains("unclosed"));
        assert!(matches!(parse_format("json"), Ok(Format::Json)));
    }

    #[test]
    fn numbers() {
        let mut v = Vec::new();
        push_num(&mut v, 0);
        v.push(b' ');
        push_num(&mut v, 1234567890123);
        assert_eq!(v, b"0 1234567890123");
    }
}
