//! gunicorn's access log format (`access_log_format`, `--access-logformat`): a Python
//! `%`-template over gunicorn's atoms, compiled once at start and made into a line per request
//! with the same bytes gunicorn's `glogging.Logger.access` writes for the same request.
//!
//! The atoms (gunicorn's `Logger.atoms`): `h` client address, `l` `-`, `u` the user of a Basic
//! `Authorization`, `t` `[10/Oct/2000:13:55:36 -0700]` (local time), `r` the request line,
//! `m` method, `U` path (percent-decoded), `q` query, `H` protocol, `s` status, `B` body bytes,
//! `b` body bytes as text, `f` Referer, `a` User-Agent, `T`/`D`/`M`/`L` the request's time in
//! seconds, microseconds, milliseconds and `seconds.micros`, `p` `<pid>`, `{name}i` a request
//! header, `{name}o` a response header, `{name}e` an environ variable as the app left it (the
//! WSGI bridge reads the ones a format names after the call: `LogExtras`; without it, as over
//! HTTP/2, the ones the server derives from the request); any other name is `-`, as in
//! gunicorn. Text atoms have `"` written `\"`, as gunicorn's `SafeAtoms` does; bytes
//! outside latin-1's printable range that could cut or forge a line (control bytes, DEL) are
//! written `\xHH`, where gunicorn would write them raw. Latin-1 bytes above 0x9f are written as
//! their UTF-8 character, as gunicorn's UTF-8 log stream does.
//!
//! Conversions: `s` (any atom), `d`/`i` (the numeric atoms `B`, `T`, `D`, `M`: gunicorn's
//! other atoms are text, and `%d` of text fails there), with Python's flags `-` and `0`, a
//! width and a precision; `%%` is a `%`. Anything else is refused at start with the reason.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sluicegate_proto::path::percent_decode;

use super::entry::{push_client, Entry};
use super::timings::micros;

/// What one `%(...)` names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Atom {
    Host,
    Ident,
    User,
    Time,
    RequestLine,
    Method,
    Path,
    Query,
    Protocol,
    Status,
    BodyBytes,
    BodyText,
    Referer,
    UserAgent,
    Seconds,
    Micros,
    Millis,
    Decimal,
    Pid,
    /// `{name}i`, the name lowercased.
    RequestHeader(Vec<u8>),
    /// `{name}o`, the name lowercased.
    ResponseHeader(Vec<u8>),
    /// `{name}e`, the name uppercased as the environ spells CGI keys.
    Environ(Vec<u8>),
    /// A name gunicorn has no atom for: `-`.
    Unknown,
}

/// One `%(name)[flags][width][.precision]conv`.
#[derive(Debug)]
struct Spec {
    atom: Atom,
    left: bool,
    zero: bool,
    width: usize,
    precision: Option<usize>,
    number: bool,
}

#[derive(Debug)]
enum Part {
    Text(Vec<u8>),
    Atom(Spec),
}

/// A compiled gunicorn format.
#[derive(Debug)]
pub struct GunicornFormat {
    parts: Vec<Part>,
}

/// A value before formatting: a number, or latin-1 text (escaped when written).
enum Value<'a> {
    Num(u64),
    Text(std::borrow::Cow<'a, [u8]>),
    /// Text already UTF-8 (the decoded Basic user, an environ `str`), `"` escaped.
    Utf8(String),
    /// Another environ object as `str()` prints it: not escaped (gunicorn's `SafeAtoms`
    /// escapes `str` values only), but for the bytes that would cut the line.
    Plain(String),
}

/// Whether `spec` is a gunicorn template (it names an atom the Python way).
pub fn is_gunicorn_format(spec: &str) -> bool {
    spec.contains("%(")
}

impl GunicornFormat {
    pub fn parse(spec: &str) -> Result<GunicornFormat, String> {
        let mut parts = Vec::new();
        let mut text = Vec::new();
        let bytes = spec.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] != b'%' {
                text.push(bytes[i]);
                i += 1;
                continue;
            }
            match bytes.get(i + 1) {
                Some(b'%') => {
                    text.push(b'%');
                    i += 2;
                    continue;
                }
                Some(b'(') => {}
                _ => {
                    return Err(format!(
                        "a '%' at byte {i} of {spec:?} names no atom: write %(name)s, or %% \
                         for a '%'"
                    ))
                }
            }
            let close = spec[i + 2..]
                .find(')')
                .ok_or_else(|| format!("unclosed '%(' in {spec:?}"))?;
            let name = &spec[i + 2..i + 2 + close];
            let (s, next) = parse_spec(spec, name, i + 3 + close)?;
            if !text.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut text)));
            }
            parts.push(Part::Atom(s));
            i = next;
        }
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        Ok(GunicornFormat { parts })
    }

    /// The format names a response header (`{name}o`) or an environ variable (`{name}e`).
    pub fn names_extras(&self) -> bool {
        self.parts.iter().any(|p| {
            matches!(
                p,
                Part::Atom(Spec {
                    atom: Atom::ResponseHeader(_) | Atom::Environ(_),
                    ..
                })
            )
        })
    }

    /// The environ variables the format names, lowercased as gunicorn looks them up.
    pub fn environ_names(&self) -> Vec<String> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Atom(Spec {
                    atom: Atom::Environ(k),
                    ..
                }) => Some(String::from_utf8_lossy(k).to_lowercase()),
                _ => None,
            })
            .collect()
    }

    /// Append `e`'s line (without its newline); `pid`: this process's.
    pub fn make_line(&self, line: &mut Vec<u8>, e: &Entry<'_>, pid: u32) {
        for p in &self.parts {
            match p {
                Part::Text(t) => line.extend_from_slice(t),
                Part::Atom(s) => push_atom(line, s, value(&s.atom, e, pid)),
            }
        }
    }
}

/// The flags, width, precision and conversion after `%(name)`, from byte `at`; the spec and
/// the index after it.
fn parse_spec(spec: &str, name: &str, mut at: usize) -> Result<(Spec, usize), String> {
    let bytes = spec.as_bytes();
    let (mut left, mut zero) = (false, false);
    while let Some(&f) = bytes.get(at) {
        match f {
            b'-' => left = true,
            b'0' => zero = true,
            b' ' | b'+' | b'#' => {}
            _ => break,
        }
        at += 1;
    }
    let digits = |at: &mut usize| {
        let start = *at;
        while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
            *at += 1;
        }
        spec[start..*at].parse::<usize>().ok()
    };
    let width = digits(&mut at).unwrap_or(0);
    let precision = if bytes.get(at) == Some(&b'.') {
        at += 1;
        Some(digits(&mut at).unwrap_or(0))
    } else {
        None
    };
    let atom = atom_named(name);
    let number = match bytes.get(at) {
        Some(b's') => false,
        Some(b'd' | b'i') if is_numeric(&atom) => true,
        Some(b'd' | b'i') => {
            return Err(format!(
                "%({name})d: gunicorn's atom {name:?} is text, and %d of text fails in \
                 gunicorn too (write %({name})s)"
            ))
        }
        Some(&c) => {
            return Err(format!(
                "%({name}){}: only the conversions s, d and i are supported",
                char::from(c)
            ))
        }
        None => {
            return Err(format!(
                "%({name}) at the end of {spec:?} has no conversion"
            ))
        }
    };
    Ok((
        Spec {
            atom,
            left,
            zero,
            width,
            precision,
            number,
        },
        at + 1,
    ))
}

fn is_numeric(atom: &Atom) -> bool {
    matches!(
        atom,
        Atom::BodyBytes | Atom::Seconds | Atom::Micros | Atom::Millis
    )
}

fn atom_named(name: &str) -> Atom {
    if let Some(inner) = name.strip_prefix('{') {
        // gunicorn looks `{...}` names up lowercased.
        let lower = inner.to_ascii_lowercase().into_bytes();
        return match lower.split_last() {
            Some((b'i', rest)) if rest.ends_with(b"}") => {
                Atom::RequestHeader(rest[..rest.len() - 1].to_vec())
            }
            Some((b'o', rest)) if rest.ends_with(b"}") => {
                Atom::ResponseHeader(rest[..rest.len() - 1].to_vec())
            }
            Some((b'e', rest)) if rest.ends_with(b"}") => {
                Atom::Environ(rest[..rest.len() - 1].to_ascii_uppercase())
            }
            _ => Atom::Unknown,
        };
    }
    match name {
        "h" => Atom::Host,
        "l" => Atom::Ident,
        "u" => Atom::User,
        "t" => Atom::Time,
        "r" => Atom::RequestLine,
        "m" => Atom::Method,
        "U" => Atom::Path,
        "q" => Atom::Query,
        "H" => Atom::Protocol,
        "s" => Atom::Status,
        "B" => Atom::BodyBytes,
        "b" => Atom::BodyText,
        "f" => Atom::Referer,
        "a" => Atom::UserAgent,
        "T" => Atom::Seconds,
        "D" => Atom::Micros,
        "M" => Atom::Millis,
        "L" => Atom::Decimal,
        "p" => Atom::Pid,
        _ => Atom::Unknown,
    }
}

fn text(v: &[u8]) -> Value<'_> {
    Value::Text(std::borrow::Cow::Borrowed(v))
}

fn owned(v: Vec<u8>) -> Value<'static> {
    Value::Text(std::borrow::Cow::Owned(v))
}

const DASH: &[u8] = b"-";

/// The value of `atom` for `e`, as gunicorn's `Logger.atoms` makes it.
fn value<'a>(atom: &Atom, e: &Entry<'a>, pid: u32) -> Value<'a> {
    let head = e.head;
    let total = e.timings.total;
    match atom {
        Atom::Host => owned(client_text(e)),
        Atom::Ident | Atom::Unknown => text(DASH),
        Atom::User => basic_user(last_header(e, b"authorization")).map_or(text(DASH), Value::Utf8),
        Atom::Time => owned(local_clf_time()),
        Atom::RequestLine => {
            let mut v = Vec::with_capacity(head.target().len() + 20);
            v.extend_from_slice(head.method());
            v.push(b' ');
            v.extend_from_slice(head.target());
            v.push(b' ');
            v.extend_from_slice(head.version.as_str().as_bytes());
            owned(v)
        }
        Atom::Method => text(head.method()),
        Atom::Path => Value::Text(percent_decode(head.path())),
        Atom::Query => text(head.query()),
        Atom::Protocol => text(head.version.as_str().as_bytes()),
        Atom::Status => owned(e.status.to_string().into_bytes()),
        Atom::BodyBytes => Value::Num(e.body_bytes),
        Atom::BodyText => owned(e.body_bytes.to_string().into_bytes()),
        Atom::Referer => joined_header(e, b"referer").map_or(text(DASH), Value::Text),
        Atom::UserAgent => joined_header(e, b"user-agent").map_or(text(DASH), Value::Text),
        Atom::Seconds => Value::Num(total.as_secs()),
        Atom::Micros => Value::Num(micros(total)),
        Atom::Millis => Value::Num(total.as_secs() * 1000 + u64::from(total.subsec_millis())),
        Atom::Decimal => {
            owned(format!("{}.{:06}", total.as_secs(), total.subsec_micros()).into_bytes())
        }
        Atom::Pid => owned(format!("<{pid}>").into_bytes()),
        Atom::RequestHeader(name) => text(last_header(e, name).unwrap_or(DASH)),
        Atom::ResponseHeader(name) => e
            .extras
            .and_then(|hs| hs.value_of(name))
            .map_or(text(DASH), |v| owned(v.to_vec())),
        Atom::Environ(key) => match e.extras.filter(|x| x.has_environ()) {
            // The environ as the app left it: what gunicorn reads.
            Some(x) => match x.environ_value(key) {
                Some((v, true)) => Value::Utf8(v.to_string()),
                Some((v, false)) => Value::Plain(v.to_string()),
                None => text(DASH),
            },
            None => environ_value(e, key).unwrap_or(text(DASH)),
        },
    }
}

/// The client as REMOTE_ADDR carries it.
fn client_text(e: &Entry<'_>) -> Vec<u8> {
    let mut v = Vec::with_capacity(15);
    push_client(&mut v, e.client);
    v
}

/// The last value of request header `name` (gunicorn's atoms keep the last of repeated
/// fields).
fn last_header<'a>(e: &Entry<'a>, name: &[u8]) -> Option<&'a [u8]> {
    e.head
        .headers()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .last()
        .map(|(_, v)| v)
}

/// Header `name` as the environ's `HTTP_*` key carries it: repeated fields joined with `,`.
fn joined_header<'a>(e: &Entry<'a>, name: &[u8]) -> Option<std::borrow::Cow<'a, [u8]>> {
    let mut found: Option<std::borrow::Cow<'a, [u8]>> = None;
    for (n, v) in e.head.headers() {
        if n.eq_ignore_ascii_case(name) {
            found = Some(match found {
                None => std::borrow::Cow::Borrowed(v),
                Some(before) => {
                    let mut joined = before.into_owned();
                    joined.push(b',');
                    joined.extend_from_slice(v);
                    std::borrow::Cow::Owned(joined)
                }
            });
        }
    }
    found
}

/// `{KEY}e`: the environ keys the server sets from the request (an app's own keys are not
/// seen here: `-`).
fn environ_value<'a>(e: &Entry<'a>, key: &[u8]) -> Option<Value<'a>> {
    let head = e.head;
    Some(match key {
        b"REQUEST_METHOD" => text(head.method()),
        b"QUERY_STRING" => text(head.query()),
        b"RAW_URI" | b"REQUEST_URI" => text(head.target()),
        b"SERVER_PROTOCOL" => text(head.version.as_str().as_bytes()),
        b"PATH_INFO" => Value::Text(percent_decode(head.path())),
        b"SCRIPT_NAME" => text(b""),
        b"REMOTE_ADDR" => owned(client_text(e)),
        b"CONTENT_TYPE" => Value::Text(joined_header(e, b"content-type")?),
        b"CONTENT_LENGTH" => Value::Text(joined_header(e, b"content-length")?),
        _ => {
            let name = key.strip_prefix(b"HTTP_")?;
            let wanted: Vec<u8> = name
                .iter()
                .map(|&b| if b == b'_' { b'-' } else { b })
                .collect();
            Value::Text(joined_header(e, &wanted)?)
        }
    })
}

/// The user of a Basic `Authorization` value, as gunicorn's `_get_user` decodes it.
fn basic_user(auth: Option<&[u8]>) -> Option<String> {
    let auth = auth?;
    if auth.len() < 5 || !auth[..5].eq_ignore_ascii_case(b"basic") {
        return None;
    }
    let space = auth.iter().position(|&b| b == b' ')?;
    // Python's b64decode drops bytes outside the alphabet before decoding.
    let b64: String = auth[space + 1..]
        .iter()
        .filter(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        .map(|&b| char::from(b))
        .collect();
    let decoded = <base64ct::Base64 as base64ct::Encoding>::decode_vec(&b64).ok()?;
    let user = decoded.split(|&b| b == b':').next().unwrap_or(&[]);
    // An empty user is `-` too (gunicorn: `self._get_user(environ) or '-'`).
    String::from_utf8(user.to_vec())
        .ok()
        .filter(|u| !u.is_empty())
}

/// Append one formatted atom: width, precision and escaping as Python's `%` over gunicorn's
/// `SafeAtoms`.
fn push_atom(line: &mut Vec<u8>, s: &Spec, v: Value<'_>) {
    let mut body: Vec<u8> = match v {
        Value::Num(n) => n.to_string().into_bytes(),
        Value::Text(t) => escape(&t),
        Value::Utf8(u) => escape_utf8(&u.replace('"', "\\\"")),
        Value::Plain(u) => escape_utf8(&u),
    };
    if let Some(p) = s.precision.filter(|_| !s.number) {
        body.truncate(p);
    }
    let pad = s.width.saturating_sub(body.len());
    let fill = if s.zero && s.number && !s.left {
        b'0'
    } else {
        b' '
    };
    if !s.left {
        line.extend(std::iter::repeat_n(fill, pad));
    }
    let mut raw = false;
    for &b in &body {
        if raw {
            line.push(b);
            raw = false;
        } else if b == UTF8_MARK {
            raw = true;
        } else if b >= 0xa0 {
            line.extend_from_slice(&[0xc0 | (b >> 6), 0x80 | (b & 0x3f)]);
        } else {
            line.push(b);
        }
    }
    if s.left {
        line.extend(std::iter::repeat_n(b' ', pad));
    }
}

/// UTF-8 text with its control characters (C0, DEL) as `\xHH`, in the form [`push_atom`]
/// takes: latin-1 characters as their byte (written back as UTF-8 there), any other
/// character's UTF-8 bytes each after [`UTF8_MARK`] (written as they are).
fn escape_utf8(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\u{0}'..='\u{1f}' | '\u{7f}' => {
                out.extend_from_slice(format!("\\x{:02x}", c as u32).as_bytes())
            }
            _ if c.is_ascii() || ('\u{a0}'..='\u{ff}').contains(&c) => out.push(c as u8),
            _ => {
                let mut buf = [0u8; 4];
                for &b in c.encode_utf8(&mut buf).as_bytes() {
                    out.extend_from_slice(&[UTF8_MARK, b]);
                }
            }
        }
    }
    out
}

/// Marks the next byte of a value as UTF-8 already (see [`escape_utf8`]): a byte no escaped
/// value holds otherwise (every byte under 0x20 is written as `\xHH` text).
const UTF8_MARK: u8 = 0x01;

/// `"` as `\"` (gunicorn's `SafeAtoms`); control bytes and DEL..0x9f as `\xHH`.
fn escape(v: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() + 2);
    for &b in v {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            0x00..=0x1f | 0x7f..=0x9f => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&[
                    b'\\',
                    b'x',
                    HEX[usize::from(b >> 4)],
                    HEX[usize::from(b & 15)],
                ]);
            }
            _ => out.push(b),
        }
    }
    out
}

/// `[%d/%b/%Y:%H:%M:%S %z]` in local time (gunicorn's `time.strftime`), made at most once a
/// second per thread.
fn local_clf_time() -> Vec<u8> {
    thread_local! {
        static CACHE: std::cell::RefCell<(u64, Vec<u8>)> =
            const { std::cell::RefCell::new((u64::MAX, Vec::new())) };
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs();
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.0 != now {
            *c = (now, format_local_clf(now));
        }
        c.1.clone()
    })
}

fn format_local_clf(now: u64) -> Vec<u8> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let t = now as libc::time_t;
    // SAFETY: a zeroed tm is a valid value for localtime_r to fill.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: localtime_r reads the time_t and fills the tm we own, both valid for the call;
    // it is the thread-safe form (no shared static buffer).
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return b"[-]".to_vec();
    }
    let off = tm.tm_gmtoff / 60;
    let sign = if off < 0 { '-' } else { '+' };
    format!(
        "[{:02}/{}/{}:{:02}:{:02}:{:02} {sign}{:02}{:02}]",
        tm.tm_mday,
        MONTHS[tm.tm_mon.clamp(0, 11) as usize],
        tm.tm_year + 1900,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        off.abs() / 60,
        off.abs() % 60
    )
    .into_bytes()
}

#[cfg(test)]
mod tests;
