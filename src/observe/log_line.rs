//! One access log line: the formats `--access-log-format` names (`combined`, Apache's and
//! nginx's; `common`; `json`, one object per line; a template of named `{fields}`; or
//! gunicorn's `%(atom)s` format, made by `observe::gunicorn_format`; uWSGI's default line and
//! `log-format` strings, made by `observe::uwsgi_format`), and the escaping that
//! keeps every line one line of valid text (or valid JSON) whatever bytes the client sent.
//! Times are UTC (but in gunicorn's format, which has gunicorn's local time): the
//! CLF time (`06/Nov/1994:08:49:37 +0000`) in `combined`, `common` and a template's `{time}`,
//! ISO 8601 with milliseconds (`1994-11-06T08:49:37.042Z`) in `json`, which log pipelines
//! parse without a format string. Pure formatting: the writing is `observe::access_log`'s.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sluicegate_proto::date::{format_iso_time, ISO_TIME_LEN};
use sluicegate_proto::h1::encode::{decimal, DECIMAL_LEN};
use sluicegate_proto::RequestHead;

use super::entry::push_client;
pub use super::entry::Entry;
use super::gunicorn_format::{is_gunicorn_format, GunicornFormat};
use super::timings::micros;
use super::uwsgi_format::UwsgiFormat;
use crate::config::allowed_values;
use crate::http_date::http_date;

/// The fields a template may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
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
pub enum Piece {
    Text(Vec<u8>),
    Field(Field),
}

#[derive(Debug)]
pub enum Format {
    Combined,
    Common,
    Json,
    Template(Vec<Piece>),
    /// gunicorn's `%(atom)s` templates (`observe::gunicorn_format`).
    Gunicorn(GunicornFormat),
    /// uWSGI's default line (`uwsgi`) and `log-format` strings (`uwsgi:FORMAT`)
    /// (`observe::uwsgi_format`).
    Uwsgi(UwsgiFormat),
}

/// The named formats in `allowed_values.txt`'s order for `access_log_format`: a name, its place.
fn named_formats() -> [Format; 5] {
    [
        Format::Combined,
        Format::Common,
        Format::Json,
        Format::Uwsgi(UwsgiFormat::default_line(false)),
        Format::Uwsgi(UwsgiFormat::default_line(true)),
    ]
}

/// The prefix of a uWSGI `log-format` string in `--access-log-format` (what
/// `--uwsgi-log-format` passes).
pub const UWSGI_PREFIX: &str = "uwsgi:";

pub fn parse_format(spec: &str) -> Result<Format, String> {
    let names = allowed_values("access_log_format");
    if let Some(place) = names.iter().position(|name| *name == spec) {
        if let Some(format) = named_formats().into_iter().nth(place) {
            return Ok(format);
        }
    }
    if let Some(uwsgi) = spec.strip_prefix(UWSGI_PREFIX) {
        return Ok(Format::Uwsgi(UwsgiFormat::parse(uwsgi)));
    }
    if is_gunicorn_format(spec) {
        return GunicornFormat::parse(spec).map(Format::Gunicorn);
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

impl Format {
    /// The format names Referer, User-Agent or X-Request-ID (looked up once per line).
    pub fn names_headers(&self) -> bool {
        match self {
            Format::Common | Format::Gunicorn(_) | Format::Uwsgi(_) => false,
            Format::Combined | Format::Json => true,
            Format::Template(pieces) => pieces.iter().any(|p| {
                matches!(
                    p,
                    Piece::Field(Field::Referer | Field::UserAgent | Field::RequestId)
                )
            }),
        }
    }

    /// The format names a response header: the requests' ends keep their headers for it.
    pub fn names_extras(&self) -> bool {
        match self {
            Format::Gunicorn(g) => g.names_extras(),
            Format::Uwsgi(u) => u.names_extras(),
            _ => false,
        }
    }

    /// The environ variables the format names (lowercased), read after the app's call.
    pub fn environ_names(&self) -> Vec<String> {
        match self {
            Format::Gunicorn(g) => g.environ_names(),
            Format::Uwsgi(u) => u.environ_names(),
            _ => Vec::new(),
        }
    }

    /// Append `e`'s line, its newline included; `pid`: this process's.
    pub fn make_line(&self, line: &mut Vec<u8>, e: &Entry<'_>, pid: u32) {
        let named = if self.names_headers() {
            NamedHeaders::of(e.head)
        } else {
            NamedHeaders::default()
        };
        match self {
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
                if matches!(self, Format::Combined) {
                    for value in [named.referer, named.user_agent] {
                        line.extend_from_slice(b" \"");
                        push_escaped(line, value.unwrap_or(b"-"));
                        line.push(b'"');
                    }
                }
            }
            Format::Json => push_json(line, e, &named, pid),
            Format::Gunicorn(g) => g.make_line(line, e, pid),
            Format::Uwsgi(u) => u.make_line(line, e, pid),
            Format::Template(pieces) => {
                for p in pieces {
                    match p {
                        Piece::Text(t) => line.extend_from_slice(t),
                        Piece::Field(f) => push_field(line, e, &named, *f, pid),
                    }
                }
            }
        }
        line.push(b'\n');
    }
}

/// One field's value in a template: text escaped as in the combined format.
fn push_field(line: &mut Vec<u8>, e: &Entry<'_>, named: &NamedHeaders<'_>, f: Field, pid: u32) {
    let text = push_escaped;
    // Text that never needs escaping (an address, a date, a word of ours).
    let plain = |line: &mut Vec<u8>, push: &dyn Fn(&mut Vec<u8>)| push(line);
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
        Field::Pid => push_num(line, u64::from(pid)),
        Field::Scheduler => plain(line, &|l| l.extend_from_slice(scheduler(e.inline))),
    }
}

/// A line buffer keeps this much room between lines.
pub const LINE_KEEP: usize = 1024;

/// `e` as one JSON object: every field of [`FIELDS`], in its order. Written out field by field
/// (constant keys, no dispatch per field): this is the format a log pipeline reads at full
/// traffic.
fn push_json(line: &mut Vec<u8>, e: &Entry<'_>, named: &NamedHeaders<'_>, pid: u32) {
    let head = e.head;
    line.extend_from_slice(b"{\"client\":\"");
    push_client(line, e.client);
    line.extend_from_slice(b"\",\"time\":\"");
    push_iso_time(line);
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

/// The wall-clock time as ISO 8601 with milliseconds; the part up to the seconds is formatted
/// at most once per second per thread (as the Date header is).
fn push_iso_time(line: &mut Vec<u8>) {
    thread_local! {
        static CACHE: std::cell::Cell<(u64, [u8; ISO_TIME_LEN])> =
            const { std::cell::Cell::new((u64::MAX, [0; ISO_TIME_LEN])) };
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    let (secs, ms) = (now.as_secs(), now.subsec_millis());
    let mut text = CACHE.with(|c| {
        let (at, mut text) = c.get();
        if at != secs {
            text = format_iso_time(secs, 0);
            c.set((secs, text));
        }
        text
    });
    text[20] = b'0' + (ms / 100) as u8;
    text[21] = b'0' + (ms / 10 % 10) as u8;
    text[22] = b'0' + (ms % 10) as u8;
    line.extend_from_slice(&text);
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
/// `escape` writes it; cut short (with `...`) past [`FIELD_CAP`] bytes when one is set.
#[inline]
fn push_with_escapes(line: &mut Vec<u8>, v: &[u8], escape: impl Fn(&mut Vec<u8>, u8)) {
    let cap = FIELD_CAP.with(|c| c.get());
    if cap != usize::MAX {
        return push_capped(line, v, cap, escape);
    }
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

thread_local! {
    /// The most bytes one client-controlled field may take in the line being made
    /// (`usize::MAX`: no cap); set by [`Format::make_line_within`] only.
    static FIELD_CAP: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

/// [`push_with_escapes`] with a cap: whole escapes only, then `...` if `v` did not fit.
#[cold]
fn push_capped(line: &mut Vec<u8>, v: &[u8], cap: usize, escape: impl Fn(&mut Vec<u8>, u8)) {
    let start = line.len();
    let limit = cap.saturating_sub(3);
    for (i, &b) in v.iter().enumerate() {
        let before = line.len();
        if JSON_PLAIN[usize::from(b)] {
            line.push(b);
        } else {
            escape(line, b);
        }
        if line.len() - start > limit && i + 1 < v.len() {
            line.truncate(before);
            line.extend_from_slice(b"...");
            return;
        }
    }
}

/// Fields a client writes (method, target, path, query, Referer, User-Agent, X-Request-ID).
const CLIENT_FIELDS: usize = 7;
/// Room kept for everything else in a line (keys, numbers, address, time): a JSON line's own
/// part is under 400 bytes.
const OWN_PART: usize = 640;

impl Format {
    /// [`Format::make_line`], but at most `max` bytes when it can be: a longer line is made
    /// again with each field the client wrote cut to an equal share of `max` (ending `...`),
    /// so that it stays whole and valid (JSON stays JSON) in one write of `max` bytes.
    pub fn make_line_within(&self, line: &mut Vec<u8>, e: &Entry<'_>, pid: u32, max: usize) {
        let start = line.len();
        self.make_line(line, e, pid);
        if line.len() - start <= max {
            return;
        }
        line.truncate(start);
        FIELD_CAP.with(|c| c.set(max.saturating_sub(OWN_PART) / CLIENT_FIELDS));
        self.make_line(line, e, pid);
        FIELD_CAP.with(|c| c.set(usize::MAX));
    }
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
mod tests;
