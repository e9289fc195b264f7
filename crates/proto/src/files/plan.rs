//! One static response, decided: method → representation → preconditions → Range → the
//! encoded head. Returns what the I/O layer must send after the head (which file, which byte
//! range), so the I/O layer makes no HTTP decision of its own. The head goes through the
//! crate's one response encoder (`h1::encode`), which adds Date, Server, Content-Length and
//! Connection exactly as for app responses.

use crate::date::{format_http_date, parse_http_date};
use crate::h1::encode::ResponseFraming;
use crate::RequestHead;

use super::conditional::{evaluate_preconditions, if_range_holds, Precondition};
use super::fields::{single, Field, Fields, ACCEPT_ENCODING};
use super::range::{evaluate_range, RangeDecision};
use super::validators::last_modified;
use super::{choose_encoding, content_type, ETag, Encoding, FileMeta, MountOptions, StackBuf};

mod respond;

use respond::{encode, small_response, Headers, Status};

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
    let range = range_decision(is_get, &f, &etag, lm, now, size);
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

/// What the Range field asks of a representation of `size` bytes: only for GET, and only when
/// If-Range (if present, once) holds for its validators.
fn range_decision(
    is_get: bool,
    f: &Fields<'_>,
    etag: &ETag,
    lm: Option<u64>,
    now: Option<u64>,
    size: u64,
) -> RangeDecision {
    match (is_get, single(f.range)) {
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

#[cfg(test)]
mod tests;
