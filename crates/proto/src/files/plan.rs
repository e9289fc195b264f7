//! One static response, decided: method → representation → preconditions → Range → the
//! encoded head. Returns what the I/O layer must send after the head (which file, which byte
//! range), so the I/O layer makes no HTTP decision of its own. The head goes through the
//! crate's one response encoder (`h1::encode`), which adds Date, Server, Content-Length and
//! Connection exactly as for app responses.

use crate::date::{format_http_date, parse_http_date};
use crate::h1::encode::{encode_response_head, ResponseFraming, ResponseHead};
use crate::h1::response::own_answer_keeps_alive;
use crate::{BodyFraming, RequestHead};

use super::conditional::{evaluate_preconditions, if_range_holds, Precondition};
use super::fields::{single, Field, Fields, ACCEPT_ENCODING};
use super::range::{evaluate_range, RangeDecision};
use super::validators::last_modified;
use super::{choose_encoding, content_type, ETag, Encoding, FileMeta, MountOptions, StackBuf};

/// The representations of one file that exist on disk, from `fstat` of each open fd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Representations {
    /// The file itself (required: without it nothing is served).
    pub identity: FileMeta,
    /// `file.br`, if it exists and is a regular file.
    pub br: Option<FileMeta>,
    /// `file.gz`, if it exists and is a regular file.
    pub gzip: Option<FileMeta>,
}

impl Representations {
    /// A file without precompressed siblings.
    pub fn identity(meta: FileMeta) -> Self {
        Representations {
            identity: meta,
            br: None,
            gzip: None,
        }
    }
    /// The metadata of `encoding`'s file (identity's if that sibling does not exist).
    pub fn meta(&self, encoding: Encoding) -> &FileMeta {
        let sibling = match encoding {
            Encoding::Identity => None,
            Encoding::Brotli => self.br.as_ref(),
            Encoding::Gzip => self.gzip.as_ref(),
        };
        sibling.unwrap_or(&self.identity)
    }
    /// With a sibling, the response depends on Accept-Encoding, whichever is chosen, so caches
    /// must key on it: `Vary: Accept-Encoding` (RFC 9110 §12.5.5).
    fn varies(&self) -> bool {
        self.br.is_some() || self.gzip.is_some()
    }
}

/// Header values the server adds to every response, as for app responses.
#[derive(Debug, Clone, Copy)]
pub struct ServerFields<'a> {
    /// The current 29-byte IMF-fixdate (`crate::date`, cached per second by the I/O layer);
    /// empty: no Date header. Also "now" for Last-Modified clamping and If-Range.
    pub date: &'a [u8],
    /// The Server header value; empty: none.
    pub server: &'a [u8],
}

/// The file bytes to send after the head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyRange {
    pub offset: u64,
    /// Always > 0 (an empty body is `None`).
    pub len: u64,
}

/// The decided response. The head (and any short text body) was appended to `out`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticPlan {
    /// 200, 206, 304, 404, 405, 412 or 416.
    pub status: u16,
    /// The representation the head describes (and `body` is read from).
    pub encoding: Encoding,
    /// `sendfile` this range of `encoding`'s file after `out`; `None`: nothing more to send
    /// (HEAD, 304, errors, empty file).
    pub body: Option<BodyRange>,
    /// Whether the connection stays open (the head says so). False when the request had a body:
    /// the static path never reads one, so the connection cannot carry another request.
    pub keep_alive: bool,
    /// Bytes of a short text body appended to `out` after the head (error answers such as 404,
    /// 405, 416; 0 for HEAD and file answers), for the access log.
    pub text_body: u64,
}

/// Plan the response to `req` for a file that exists, given its representations. `file_name`
/// is the resolved path's last segment ([`super::ResolvedPath::file_name`]) and sets the
/// Content-Type. Appends the head to `out`.
///
/// - Methods other than GET and HEAD → 405 with `Allow: GET, HEAD`.
/// - The representation is chosen from Accept-Encoding ([`choose_encoding`]); preconditions
///   and Range are evaluated against *its* validators and size.
/// - Preconditions (RFC 9110 §13.2.2) → 412 or 304. A 304 carries ETag, Last-Modified,
///   Cache-Control, Vary and Date, no Content-Length or Content-Type.
/// - Range, for GET only, if If-Range (when present) holds → 206 / 416 / 200
///   ([`evaluate_range`]).
/// - 200/206 carry Content-Type, Content-Length, Last-Modified, ETag, Accept-Ranges,
///   Cache-Control (if configured), Vary (if siblings exist), Content-Encoding (if not
///   identity), Content-Range (206), Date, Server, and Connection as the encoder decides.
/// - With siblings, every response for the file (200, 206, 304, 412, 416) carries
///   `Vary: Accept-Encoding`: the chosen representation decided each of them.
pub fn plan(
    req: &RequestHead,
    file_name: &[u8],
    reps: &Representations,
    opts: &MountOptions,
    server: &ServerFields<'_>,
    out: &mut Vec<u8>,
) -> StaticPlan {
    let is_get = req.method() == b"GET";
    if !is_get && !req.is_head {
        let allow: &[(&[u8], &[u8])] = &[(b"Allow", b"GET, HEAD")];
        return small_response(req, Status::MethodNotAllowed, allow, server, out);
    }
    let f = Fields::new(req);
    let accept = f.lines(f.accept_encoding, ACCEPT_ENCODING);
    let encoding = choose_encoding(accept, reps.br.is_some(), reps.gzip.is_some());
    let meta = reps.meta(encoding);
    let etag = ETag::new(meta, encoding);
    let now = parse_http_date(server.date);
    let lm = last_modified(meta, now);
    let lm_text = lm.map(format_http_date);
    let cache_control = opts.cache_control();

    let mut h = Headers::default();
    match evaluate_preconditions(&f, etag.as_bytes(), lm) {
        Precondition::Proceed => {}
        Precondition::Failed => {
            let vary: &[(&[u8], &[u8])] = &[(b"Vary", b"Accept-Encoding")];
            let extra = if reps.varies() { vary } else { &[] };
            let mut plan = small_response(req, Status::PreconditionFailed, extra, server, out);
            plan.encoding = encoding;
            return plan;
        }
        Precondition::NotModified => {
            h.validators(&etag, lm_text.as_ref());
            h.caching(cache_control.as_ref(), reps.varies());
            let keep_alive = encode(
                req,
                Status::NotModified,
                &h,
                ResponseFraming::NoBody,
                server,
                out,
            );
            return StaticPlan {
                status: 304,
                encoding,
                body: None,
                keep_alive,
                text_body: 0,
            };
        }
    }

    let size = meta.size;
    let range = match (is_get, single(f.range)) {
        (true, Some(value)) => {
            let applies = match f.if_range {
                Field::Absent => true,
                Field::One(v) => if_range_holds(v, etag.as_bytes(), lm, now),
                Field::Repeated => false,
            };
            if applies {
                evaluate_range(value, size)
            } else {
                RangeDecision::Full
            }
        }
        _ => RangeDecision::Full,
    };
    let mut content_range = StackBuf::<72>::new();
    content_range.push(b"bytes ");
    let (status, offset, len) = match range {
        RangeDecision::Full => (Status::Ok, 0, size),
        RangeDecision::Partial { offset, len } => {
            content_range.push_dec(offset);
            content_range.push(b"-");
            content_range.push_dec(offset + len - 1);
            content_range.push(b"/");
            content_range.push_dec(size);
            (Status::PartialContent, offset, len)
        }
        RangeDecision::Unsatisfiable => {
            content_range.push(b"*/");
            content_range.push_dec(size);
            let both: &[(&[u8], &[u8])] = &[
                (b"Content-Range", content_range.as_bytes()),
                (b"Vary", b"Accept-Encoding"),
            ];
            let extra = if reps.varies() { both } else { &both[..1] };
            let mut plan = small_response(req, Status::RangeNotSatisfiable, extra, server, out);
            plan.encoding = encoding;
            return plan;
        }
    };

    h.push(b"Content-Type", content_type(file_name).as_bytes());
    h.validators(&etag, lm_text.as_ref());
    h.push(b"Accept-Ranges", b"bytes");
    h.caching(cache_control.as_ref(), reps.varies());
    if let Some(coding) = encoding.content_coding() {
        h.push(b"Content-Encoding", coding);
    }
    if status == Status::PartialContent {
        h.push(b"Content-Range", content_range.as_bytes());
    }
    let keep_alive = encode(req, status, &h, ResponseFraming::Length(len), server, out);
    StaticPlan {
        status: status.code(),
        encoding,
        body: (is_get && len > 0).then_some(BodyRange { offset, len }),
        keep_alive,
        text_body: 0,
    }
}

/// The 404 for a refused path ([`super::Refusal`]) or a file the I/O layer could not open (or
/// that is no regular file): a short text body (none for HEAD). Appends to `out`.
pub fn plan_not_found(
    req: &RequestHead,
    server: &ServerFields<'_>,
    out: &mut Vec<u8>,
) -> StaticPlan {
    small_response(req, Status::NotFound, &[], server, out)
}

/// A directory named without its trailing '/': 301 to the '/' form, query kept (as nginx
/// does), so that relative links in the directory's index resolve under it. No body; the
/// connection stays open on the same rule as every static answer. Appends the head to `out`.
pub fn plan_redirect_to_slash(
    req: &RequestHead,
    server: &ServerFields<'_>,
    out: &mut Vec<u8>,
) -> StaticPlan {
    let mut location = Vec::with_capacity(req.path().len() + 2 + req.query().len());
    location.extend_from_slice(req.path());
    location.push(b'/');
    if !req.query().is_empty() {
        location.push(b'?');
        location.extend_from_slice(req.query());
    }
    let mut h = Headers::default();
    h.push(b"Location", &location);
    let keep_alive = encode(
        req,
        Status::MovedPermanently,
        &h,
        ResponseFraming::Length(0),
        server,
        out,
    );
    StaticPlan {
        status: Status::MovedPermanently.code(),
        encoding: Encoding::Identity,
        body: None,
        keep_alive,
        text_body: 0,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Ok,
    MovedPermanently,
    PartialContent,
    NotModified,
    NotFound,
    MethodNotAllowed,
    PreconditionFailed,
    RangeNotSatisfiable,
}

impl Status {
    fn code(self) -> u16 {
        match self {
            Status::Ok => 200,
            Status::MovedPermanently => 301,
            Status::PartialContent => 206,
            Status::NotModified => 304,
            Status::NotFound => 404,
            Status::MethodNotAllowed => 405,
            Status::PreconditionFailed => 412,
            Status::RangeNotSatisfiable => 416,
        }
    }
    /// The status line after "HTTP/1.1 " (RFC 9110 §15 reason phrases).
    fn line(self) -> &'static [u8] {
        match self {
            Status::Ok => b"200 OK",
            Status::MovedPermanently => b"301 Moved Permanently",
            Status::PartialContent => b"206 Partial Content",
            Status::NotModified => b"304 Not Modified",
            Status::NotFound => b"404 Not Found",
            Status::MethodNotAllowed => b"405 Method Not Allowed",
            Status::PreconditionFailed => b"412 Precondition Failed",
            Status::RangeNotSatisfiable => b"416 Range Not Satisfiable",
        }
    }
}

/// The most headers a static response carries before the encoder's own (200/206: eight).
const MAX_HEADERS: usize = 10;

/// Response headers collected on the stack.
#[derive(Default)]
struct Headers<'a> {
    list: [(&'a [u8], &'a [u8]); MAX_HEADERS],
    len: usize,
}

impl<'a> Headers<'a> {
    fn push(&mut self, name: &'a [u8], value: &'a [u8]) {
        self.list[self.len] = (name, value);
        self.len += 1;
    }
    fn validators(&mut self, etag: &'a ETag, last_modified: Option<&'a [u8; 29]>) {
        if let Some(date) = last_modified {
            self.push(b"Last-Modified", date);
        }
        self.push(b"ETag", etag.as_bytes());
    }
    fn caching(&mut self, cache_control: Option<&'a StackBuf<48>>, vary: bool) {
        if let Some(cc) = cache_control {
            self.push(b"Cache-Control", cc.as_bytes());
        }
        if vary {
            self.push(b"Vary", b"Accept-Encoding");
        }
    }
    fn as_slice(&self) -> &[(&'a [u8], &'a [u8])] {
        &self.list[..self.len]
    }
}

/// Encode the head through the crate's encoder; returns keep-alive.
fn encode(
    req: &RequestHead,
    status: Status,
    headers: &Headers<'_>,
    framing: ResponseFraming,
    server: &ServerFields<'_>,
    out: &mut Vec<u8>,
) -> bool {
    let keep_alive = own_answer_keeps_alive(req.keep_alive, req.body != BodyFraming::None);
    encode_response_head(
        out,
        &ResponseHead {
            version: req.version,
            status: status.line(),
            headers: headers.as_slice(),
            framing,
            keep_alive,
            date: server.date,
            server: server.server,
        },
    );
    keep_alive
}

/// An error-ish response (404, 405, 412, 416) with its reason phrase as a text body, omitted
/// for HEAD (whose Content-Length still says what GET would get).
fn small_response(
    req: &RequestHead,
    status: Status,
    extra: &[(&[u8], &[u8])],
    server: &ServerFields<'_>,
    out: &mut Vec<u8>,
) -> StaticPlan {
    let reason = &status.line()[4..];
    let mut h = Headers::default();
    h.push(b"Content-Type", b"text/plain; charset=utf-8");
    for &(name, value) in extra {
        h.push(name, value);
    }
    let body_len = reason.len() as u64 + 1;
    let keep_alive = encode(
        req,
        status,
        &h,
        ResponseFraming::Length(body_len),
        server,
        out,
    );
    if !req.is_head {
        out.extend_from_slice(reason);
        out.push(b'\n');
    }
    StaticPlan {
        status: status.code(),
        encoding: Encoding::Identity,
        body: None,
        keep_alive,
        text_body: if req.is_head { 0 } else { body_len },
    }
}

#[cfg(test)]
mod tests {
    use super::super::fields::request;
    use super::super::{resolve, Resolved};
    use super::*;

    /// mtime: Tue, 14 Nov 2023 22:13:20 GMT.
    const MTIME: i64 = 1_700_000_000;
    const LM: &str = "Tue, 14 Nov 2023 22:13:20 GMT";
    const NOW: u64 = 1_700_000_100;

    const FILE: FileMeta = FileMeta {
        size: 1000,
        mtime_secs: MTIME,
        mtime_nanos: 5,
        inode: 0x42,
    };
    const BR: FileMeta = FileMeta {
        size: 300,
        mtime_secs: MTIME,
        mtime_nanos: 6,
        inode: 0x43,
    };
    const GZ: FileMeta = FileMeta {
        size: 400,
        mtime_secs: MTIME,
        mtime_nanos: 7,
        inode: 0x44,
    };
    const TAG: &str = "\"6553f100.5-3e8-42\"";
    const TAG_BR: &str = "\"6553f100.6-12c-43-br\"";
    const TAG_GZ: &str = "\"6553f100.7-190-44-gz\"";

    fn all() -> Representations {
        Representations {
            identity: FILE,
            br: Some(BR),
            gzip: Some(GZ),
        }
    }

    struct Got {
        plan: StaticPlan,
        text: String,
    }

    impl Got {
        fn header(&self, name: &str) -> Option<&str> {
            let head = self.text.split("\r\n\r\n").next().unwrap();
            head.split("\r\n").skip(1).find_map(|line| {
                let (n, v) = line.split_once(": ").unwrap();
                n.eq_ignore_ascii_case(name).then_some(v)
            })
        }
        fn body_text(&self) -> &str {
            self.text.split_once("\r\n\r\n").unwrap().1
        }
    }

    fn run_with(raw: &str, reps: &Representations, opts: &MountOptions, name: &str) -> Got {
        let req = request(raw);
        let date = format_http_date(NOW);
        let server = ServerFields {
            date: &date,
            server: b"sluicegate",
        };
        let mut out = b"prefix|".to_vec();
        let plan = plan(&req, name.as_bytes(), reps, opts, &server, &mut out);
        let text = String::from_utf8(out).unwrap();
        let text = text.strip_prefix("prefix|").expect("appends").to_string();
        Got { plan, text }
    }

    fn get(fields: &str, reps: &Representations) -> Got {
        method("GET", fields, reps)
    }
    fn method(m: &str, fields: &str, reps: &Representations) -> Got {
        let raw = format!("{m} /static/app.js HTTP/1.1\r\nHost: h\r\n{fields}\r\n");
        run_with(&raw, reps, &MountOptions::default(), "app.js")
    }
    fn plain() -> Representations {
        Representations::identity(FILE)
    }

    #[test]
    fn full_get_exact_bytes() {
        let opts = MountOptions {
            max_age: Some(3600),
            ..Default::default()
        };
        let g = run_with(
            "GET /static/app.js HTTP/1.1\r\nHost: h\r\n\r\n",
            &plain(),
            &opts,
            "app.js",
        );
        assert_eq!(
            g.text,
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/javascript; charset=utf-8\r\n\
                 Last-Modified: {LM}\r\nETag: {TAG}\r\nAccept-Ranges: bytes\r\n\
                 Cache-Control: public, max-age=3600\r\nDate: Tue, 14 Nov 2023 22:15:00 GMT\r\n\
                 Server: sluicegate\r\nContent-Length: 1000\r\n\r\n"
            )
        );
        assert_eq!(
            g.plan,
            StaticPlan {
                status: 200,
                encoding: Encoding::Identity,
                body: Some(BodyRange {
                    offset: 0,
                    len: 1000
                }),
                keep_alive: true,
                text_body: 0,
            }
        );
    }

    #[test]
    fn head_has_the_get_headers_and_no_body() {
        let get = method("GET", "", &plain());
        let head = method("HEAD", "", &plain());
        assert_eq!(head.plan.status, 200);
        assert_eq!(head.plan.body, None);
        assert_eq!(head.text, get.text);
        assert_eq!(head.header("Content-Length"), Some("1000"));
        // Range is for GET only.
        let head = method("HEAD", "Range: bytes=0-9\r\n", &plain());
        assert_eq!(head.plan.status, 200);
        assert_eq!(head.header("Content-Range"), None);
    }

    #[test]
    fn other_methods_are_405() {
        for m in [
            "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "get", "Head",
        ] {
            let g = method(m, "", &plain());
            assert_eq!(g.plan.status, 405, "{m}");
            assert_eq!(g.header("Allow"), Some("GET, HEAD"));
            assert_eq!(g.header("Content-Type"), Some("text/plain; charset=utf-8"));
            assert_eq!(g.header("Content-Length"), Some("19"));
            assert_eq!(g.body_text(), "Method Not Allowed\n");
            assert_eq!(g.plan.body, None);
            assert!(g.plan.keep_alive);
            assert!(g.header("ETag").is_none());
        }
        let g = method("POST", "Content-Length: 3\r\n", &plain());
        assert_eq!(g.plan.status, 405);
        assert!(!g.plan.keep_alive, "unread body: close");
        assert_eq!(g.header("Connection"), Some("close"));
    }

    #[test]
    fn not_modified_by_etag_and_by_date() {
        let opts = MountOptions {
            max_age: Some(60),
            ..Default::default()
        };
        for fields in [
            format!("If-None-Match: {TAG}\r\n"),
            format!("If-None-Match: W/{TAG}\r\n"),
            "If-None-Match: *\r\n".to_string(),
            format!("If-Modified-Since: {LM}\r\n"),
            "If-Modified-Since: Wed, 15 Nov 2023 00:00:00 GMT\r\n".to_string(),
        ] {
            let raw = format!("GET /static/app.js HTTP/1.1\r\nHost: h\r\n{fields}\r\n");
            let g = run_with(&raw, &plain(), &opts, "app.js");
            assert_eq!(g.plan.status, 304, "{fields}");
            assert_eq!(
                g.text,
                format!(
                    "HTTP/1.1 304 Not Modified\r\nLast-Modified: {LM}\r\nETag: {TAG}\r\n\
                     Cache-Control: public, max-age=60\r\n\
                     Date: Tue, 14 Nov 2023 22:15:00 GMT\r\nServer: sluicegate\r\n\r\n"
                )
            );
            assert_eq!(g.plan.body, None);
        }
        // Modified since: 200.
        let g = get(
            "If-Modified-Since: Tue, 14 Nov 2023 22:13:19 GMT\r\n",
            &plain(),
        );
        assert_eq!(g.plan.status, 200);
        // HEAD gets 304 too.
        let g = method("HEAD", &format!("If-None-Match: {TAG}\r\n"), &plain());
        assert_eq!(g.plan.status, 304);
    }

    #[test]
    fn not_modified_with_siblings_carries_vary_and_no_representation_headers() {
        let g = get(
            &format!("Accept-Encoding: br\r\nIf-None-Match: {TAG_BR}\r\n"),
            &all(),
        );
        assert_eq!(g.plan.status, 304);
        assert_eq!(g.plan.encoding, Encoding::Brotli);
        assert_eq!(g.header("Vary"), Some("Accept-Encoding"));
        assert_eq!(g.header("ETag"), Some(TAG_BR));
        for absent in [
            "Content-Length",
            "Content-Type",
            "Content-Encoding",
            "Accept-Ranges",
        ] {
            assert_eq!(g.header(absent), None, "{absent}");
        }
        // The identity tag does not validate the br representation.
        let g = get(
            &format!("Accept-Encoding: br\r\nIf-None-Match: {TAG}\r\n"),
            &all(),
        );
        assert_eq!(g.plan.status, 200);
        assert_eq!(g.plan.encoding, Encoding::Brotli);
    }

    #[test]
    fn precondition_failed() {
        for fields in [
            "If-Match: \"other\"\r\n",
            "If-Match: W/\"6553f100.5-3e8-42\"\r\n",
            "If-Unmodified-Since: Tue, 14 Nov 2023 22:13:19 GMT\r\n",
        ] {
            let g = get(fields, &plain());
            assert_eq!(g.plan.status, 412, "{fields}");
            assert_eq!(g.body_text(), "Precondition Failed\n");
            assert_eq!(g.header("Content-Length"), Some("20"));
            assert_eq!(g.plan.body, None);
        }
        let g = method("HEAD", "If-Match: \"other\"\r\n", &plain());
        assert_eq!(g.plan.status, 412);
        assert_eq!(g.body_text(), "", "no body for HEAD");
        assert_eq!(g.header("Content-Length"), Some("20"));
        // Passing preconditions: 200.
        assert_eq!(
            get(&format!("If-Match: {TAG}\r\n"), &plain()).plan.status,
            200
        );
        assert_eq!(get("If-Match: *\r\n", &plain()).plan.status, 200);
        let ius = format!("If-Unmodified-Since: {LM}\r\n");
        assert_eq!(get(&ius, &plain()).plan.status, 200);
        // 412 wins over 304 and over Range.
        let g = get(
            &format!("If-Match: \"x\"\r\nIf-None-Match: {TAG}\r\nRange: bytes=0-1\r\n"),
            &plain(),
        );
        assert_eq!(g.plan.status, 412);
    }

    #[test]
    fn single_range_is_206() {
        let g = get("Range: bytes=0-499\r\n", &plain());
        assert_eq!(g.plan.status, 206);
        assert!(g.text.starts_with("HTTP/1.1 206 Partial Content\r\n"));
        assert_eq!(g.header("Content-Range"), Some("bytes 0-499/1000"));
        assert_eq!(g.header("Content-Length"), Some("500"));
        assert_eq!(g.header("ETag"), Some(TAG));
        assert_eq!(
            g.header("Content-Type"),
            Some("text/javascript; charset=utf-8")
        );
        assert_eq!(
            g.plan.body,
            Some(BodyRange {
                offset: 0,
                len: 500
            })
        );

        let g = get("Range: bytes=-1\r\n", &plain());
        assert_eq!(g.header("Content-Range"), Some("bytes 999-999/1000"));
        assert_eq!(
            g.plan.body,
            Some(BodyRange {
                offset: 999,
                len: 1
            })
        );
        let g = get("Range: bytes=900-\r\n", &plain());
        assert_eq!(g.header("Content-Range"), Some("bytes 900-999/1000"));
        assert_eq!(
            g.plan.body,
            Some(BodyRange {
                offset: 900,
                len: 100
            })
        );
    }

    #[test]
    fn unsatisfiable_range_is_416() {
        let g = get("Range: bytes=1000-\r\n", &plain());
        assert_eq!(g.plan.status, 416);
        assert_eq!(g.header("Content-Range"), Some("bytes */1000"));
        assert_eq!(g.body_text(), "Range Not Satisfiable\n");
        assert_eq!(g.plan.body, None);
        assert!(g.plan.keep_alive);
    }

    #[test]
    fn ignored_ranges_give_the_whole_file() {
        for fields in [
            "Range: bytes=0-0,-1\r\n",
            "Range: bytes=0-10,5-20\r\n",
            "Range: bytes=abc\r\n",
            "Range: pages=1-2\r\n",
            "Range: bytes=0-1\r\nRange: bytes=2-3\r\n",
        ] {
            let g = get(fields, &plain());
            assert_eq!(g.plan.status, 200, "{fields}");
            assert_eq!(
                g.plan.body,
                Some(BodyRange {
                    offset: 0,
                    len: 1000
                })
            );
            assert_eq!(g.header("Content-Range"), None);
        }
        let many = (0..20)
            .map(|i| format!("{i}-{i}"))
            .collect::<Vec<_>>()
            .join(",");
        let g = get(&format!("Range: bytes={many}\r\n"), &plain());
        assert_eq!(g.plan.status, 200);
    }

    #[test]
    fn if_range_both_forms() {
        let r = "Range: bytes=10-19\r\n";
        let status = |if_range: &str| {
            get(&format!("{r}If-Range: {if_range}\r\n"), &plain())
                .plan
                .status
        };
        assert_eq!(status(TAG), 206);
        assert_eq!(status("\"stale\""), 200);
        assert_eq!(status(&format!("W/{TAG}")), 200, "weak: never");
        assert_eq!(
            status(LM),
            206,
            "exact date, a strong validator (100 s old)"
        );
        assert_eq!(status("Tue, 14 Nov 2023 22:13:21 GMT"), 200, "not exact");
        assert_eq!(status("Tue, 14 Nov 2023 22:13:19 GMT"), 200);
        assert_eq!(status("garbage"), 200);
        // If-Range without Range is ignored; a failed If-Range never gives 416.
        assert_eq!(get("If-Range: \"stale\"\r\n", &plain()).plan.status, 200);
        let g = get("Range: bytes=5000-\r\nIf-Range: \"stale\"\r\n", &plain());
        assert_eq!(g.plan.status, 200);
        // Last-Modified in the current second is weak: the date form fails.
        let fresh = FileMeta {
            mtime_secs: NOW as i64,
            ..FILE
        };
        let now = "Tue, 14 Nov 2023 22:15:00 GMT";
        let g = get(
            &format!("{r}If-Range: {now}\r\n"),
            &Representations::identity(fresh),
        );
        assert_eq!(g.plan.status, 200);
    }

    #[test]
    fn encodings_and_vary() {
        let g = get("Accept-Encoding: gzip, deflate, br\r\n", &all());
        assert_eq!(g.plan.encoding, Encoding::Brotli);
        assert_eq!(g.header("Content-Encoding"), Some("br"));
        assert_eq!(g.header("Content-Length"), Some("300"));
        assert_eq!(g.header("ETag"), Some(TAG_BR));
        assert_eq!(g.header("Vary"), Some("Accept-Encoding"));
        assert_eq!(
            g.header("Content-Type"),
            Some("text/javascript; charset=utf-8")
        );
        assert_eq!(
            g.plan.body,
            Some(BodyRange {
                offset: 0,
                len: 300
            })
        );

        let g = get("Accept-Encoding: gzip\r\n", &all());
        assert_eq!(g.plan.encoding, Encoding::Gzip);
        assert_eq!(g.header("Content-Encoding"), Some("gzip"));
        assert_eq!(g.header("ETag"), Some(TAG_GZ));
        assert_eq!(g.header("Content-Length"), Some("400"));

        let g = get("Accept-Encoding: br;q=0.5, gzip;q=0.9\r\n", &all());
        assert_eq!(g.plan.encoding, Encoding::Gzip);

        // Identity from a file with siblings still varies.
        for fields in [
            "",
            "Accept-Encoding: gzip;q=0, br;q=0\r\n",
            "Accept-Encoding: identity\r\n",
        ] {
            let g = get(fields, &all());
            assert_eq!(g.plan.encoding, Encoding::Identity, "{fields}");
            assert_eq!(g.header("Content-Encoding"), None);
            assert_eq!(g.header("Vary"), Some("Accept-Encoding"));
            assert_eq!(g.header("ETag"), Some(TAG));
        }
        // No siblings: no Vary.
        let g = get("Accept-Encoding: gzip, br\r\n", &plain());
        assert_eq!(g.plan.encoding, Encoding::Identity);
        assert_eq!(g.header("Vary"), None);
        // Only a gzip sibling.
        let gz_only = Representations {
            gzip: Some(GZ),
            ..plain()
        };
        let g = get("Accept-Encoding: br, gzip\r\n", &gz_only);
        assert_eq!(g.plan.encoding, Encoding::Gzip);
    }

    #[test]
    fn range_applies_to_the_chosen_encoding() {
        let g = get("Accept-Encoding: gzip\r\nRange: bytes=100-\r\n", &all());
        assert_eq!(g.plan.status, 206);
        assert_eq!(g.plan.encoding, Encoding::Gzip);
        assert_eq!(g.header("Content-Range"), Some("bytes 100-399/400"));
        assert_eq!(g.header("Content-Encoding"), Some("gzip"));
        assert_eq!(
            g.plan.body,
            Some(BodyRange {
                offset: 100,
                len: 300
            })
        );
        let g = get("Accept-Encoding: gzip\r\nRange: bytes=500-\r\n", &all());
        assert_eq!(g.plan.status, 416);
        assert_eq!(g.header("Content-Range"), Some("bytes */400"));
        assert_eq!(g.header("Vary"), Some("Accept-Encoding"));
        assert_eq!(g.plan.encoding, Encoding::Gzip);
        let g = get("Accept-Encoding: gzip\r\nIf-Match: \"x\"\r\n", &all());
        assert_eq!(g.plan.status, 412);
        assert_eq!(g.header("Vary"), Some("Accept-Encoding"));
        assert_eq!(get("If-Match: \"x\"\r\n", &plain()).header("Vary"), None);
        assert_eq!(get("Range: bytes=5000-\r\n", &plain()).header("Vary"), None);
        // If-Range with the gzip tag, for the gzip representation.
        let g = get(
            &format!("Accept-Encoding: gzip\r\nRange: bytes=0-0\r\nIf-Range: {TAG_GZ}\r\n"),
            &all(),
        );
        assert_eq!(g.plan.status, 206);
        let g = get(
            &format!("Accept-Encoding: gzip\r\nRange: bytes=0-0\r\nIf-Range: {TAG}\r\n"),
            &all(),
        );
        assert_eq!(g.plan.status, 200);
    }

    #[test]
    fn connection_handling_follows_the_request() {
        let g = run_with(
            "GET /x HTTP/1.0\r\n\r\n",
            &plain(),
            &MountOptions::default(),
            "x",
        );
        assert!(!g.plan.keep_alive);
        assert_eq!(g.header("Connection"), Some("close"));
        let g = run_with(
            "GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
            &plain(),
            &MountOptions::default(),
            "x",
        );
        assert!(g.plan.keep_alive);
        assert_eq!(g.header("Connection"), Some("keep-alive"));
        let g = get("Connection: close\r\n", &plain());
        assert!(!g.plan.keep_alive);
        assert_eq!(g.header("Connection"), Some("close"));
        let g = get("Content-Length: 5\r\n", &plain());
        assert!(!g.plan.keep_alive, "a GET with a body");
    }

    #[test]
    fn last_modified_edge_cases() {
        let future = FileMeta {
            mtime_secs: NOW as i64 + 3600,
            ..FILE
        };
        let g = get("", &Representations::identity(future));
        assert_eq!(
            g.header("Last-Modified"),
            g.header("Date"),
            "clamped to now"
        );
        let ancient = FileMeta {
            mtime_secs: -1,
            ..FILE
        };
        let g = get(
            "If-Modified-Since: Tue, 14 Nov 2023 22:13:20 GMT\r\n",
            &Representations::identity(ancient),
        );
        assert_eq!(g.header("Last-Modified"), None);
        assert_eq!(
            g.plan.status, 200,
            "no Last-Modified: If-Modified-Since ignored"
        );
    }

    #[test]
    fn empty_file() {
        let empty = Representations::identity(FileMeta { size: 0, ..FILE });
        let g = get("Range: bytes=0-\r\n", &empty);
        assert_eq!(g.plan.status, 200);
        assert_eq!(g.header("Content-Length"), Some("0"));
        assert_eq!(g.plan.body, None);
    }

    #[test]
    fn content_type_from_the_name() {
        let raw = "GET /x HTTP/1.1\r\nHost: h\r\n\r\n";
        let o = MountOptions::default();
        let ct = |name: &str| {
            run_with(raw, &plain(), &o, name)
                .header("Content-Type")
                .map(str::to_owned)
        };
        assert_eq!(
            ct("index.html").as_deref(),
            Some("text/html; charset=utf-8")
        );
        assert_eq!(ct("logo.PNG").as_deref(), Some("image/png"));
        assert_eq!(ct("LICENSE").as_deref(), Some("application/octet-stream"));
    }

    #[test]
    fn not_found() {
        let date = format_http_date(NOW);
        let server = ServerFields {
            date: &date,
            server: b"",
        };
        let mut out = Vec::new();
        let req = request("GET /static/.env HTTP/1.1\r\nHost: h\r\n\r\n");
        let plan = plan_not_found(&req, &server, &mut out);
        assert_eq!(plan.status, 404);
        assert_eq!(plan.body, None);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\n\
             Date: Tue, 14 Nov 2023 22:15:00 GMT\r\nContent-Length: 10\r\n\r\nNot Found\n"
        );
        let mut out = Vec::new();
        let req = request("HEAD /static/.env HTTP/1.1\r\nHost: h\r\n\r\n");
        plan_not_found(&req, &server, &mut out);
        assert!(
            out.ends_with(b"Content-Length: 10\r\n\r\n"),
            "no body for HEAD"
        );
    }

    #[test]
    fn redirect_to_slash_keeps_the_query() {
        let date = format_http_date(NOW);
        let server = ServerFields {
            date: &date,
            server: b"",
        };
        let mut out = Vec::new();
        let req = request("GET /static/docs?x=1 HTTP/1.1\r\nHost: h\r\n\r\n");
        let plan = plan_redirect_to_slash(&req, &server, &mut out);
        assert_eq!((plan.status, plan.body, plan.keep_alive), (301, None, true));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 301 Moved Permanently\r\nLocation: /static/docs/?x=1\r\n\
             Date: Tue, 14 Nov 2023 22:15:00 GMT\r\nContent-Length: 0\r\n\r\n"
        );
        let mut out = Vec::new();
        let req = request("GET /d HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx");
        let plan = plan_redirect_to_slash(&req, &server, &mut out);
        assert!(!plan.keep_alive, "an unread body closes the connection");
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("Connection: close\r\n"));
    }

    /// The whole flow as the I/O layer runs it.
    #[test]
    fn resolve_then_plan() {
        let opts = MountOptions {
            index: Some(b"index.html"[..].into()),
            max_age: Some(31_536_000),
            immutable: true,
            ..Default::default()
        };
        let req = request("GET /static/docs/?v=1 HTTP/1.1\r\nHost: h\r\nRange: bytes=0-99\r\n\r\n");
        let Resolved::File(path) = resolve(b"/static", req.path(), &opts) else {
            panic!("resolves")
        };
        assert_eq!(
            path.segments().collect::<Vec<_>>(),
            [&b"docs"[..], b"index.html"]
        );
        let date = format_http_date(NOW);
        let server = ServerFields {
            date: &date,
            server: b"sluicegate",
        };
        let mut out = Vec::new();
        let plan = plan(&req, path.file_name(), &plain(), &opts, &server, &mut out);
        assert_eq!(plan.status, 206);
        assert_eq!(
            plan.body,
            Some(BodyRange {
                offset: 0,
                len: 100
            })
        );
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("Content-Type: text/html; charset=utf-8\r\n"));
        assert!(text.contains("Cache-Control: public, max-age=31536000, immutable\r\n"));
    }
}
