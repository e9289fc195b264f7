//! One static response, decided: method → representation → preconditions → Range → the
//! answer. Returns a protocol-neutral [`Answer`] (status, fields, length, and which file's byte
//! range follows), so the I/O layer makes no HTTP decision of its own; each protocol frames it
//! (HTTP/1.1 through the crate's one response encoder, which adds Date, Server,
//! Content-Length and Connection exactly as for app responses).

use crate::answer::{Answer, AnswerBody};
use crate::date::{format_http_date, parse_http_date};
use crate::RequestHead;

use super::conditional::{evaluate_preconditions, if_range_holds, Precondition};
use super::fields::{single, Field, Fields, ACCEPT_ENCODING};
use super::range::{evaluate_range, RangeDecision};
use super::validators::last_modified;
use super::{choose_encoding, content_type, ETag, Encoding, FileMeta, MountOptions, StackBuf};

mod respond;

use respond::{small_response, StaticFields, Status};

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

/// The file bytes to send after the head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyRange {
    pub offset: u64,
    /// Always > 0 (an empty body is `None`).
    pub len: u64,
}

/// The decided response: the answer, and the representation it describes.
#[derive(Debug, Clone, Copy)]
pub struct StaticPlan<'a> {
    /// 200, 206, 304, 404, 405, 412 or 416 (301: [`plan_redirect_to_slash`]). Its body is an
    /// [`AnswerBody::File`] range of `encoding`'s file, or a short text, or nothing (HEAD,
    /// 304, an empty file).
    pub answer: Answer<'a>,
    /// The representation the answer describes (and a file body is read from).
    pub encoding: Encoding,
}

/// Where an answer's field values that are made per request live while it is framed: the
/// caller's stack, so that planning allocates nothing (a redirect's Location aside).
#[derive(Default)]
pub struct PlanScratch {
    etag: Option<ETag>,
    last_modified: Option<[u8; 29]>,
    cache_control: Option<StackBuf<48>>,
    content_range: Option<StackBuf<72>>,
    location: Vec<u8>,
}

/// Plan the response to `req` for a file that exists, given its representations. `file_name`
/// is the resolved path's last segment ([`super::ResolvedPath::file_name`]) and sets the
/// Content-Type; `date` is now, as the Date field will say it. The answer's values live in
/// `scratch`.
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
///   identity), Content-Range (206), Date, Server, and Connection as HTTP/1.1's encoder decides.
/// - With siblings, every response for the file (200, 206, 304, 412, 416) carries
///   `Vary: Accept-Encoding`: the chosen representation decided each of them.
pub fn plan<'s>(
    req: &RequestHead,
    file_name: &[u8],
    reps: &Representations,
    opts: &MountOptions,
    date: &[u8],
    scratch: &'s mut PlanScratch,
) -> StaticPlan<'s> {
    let is_get = req.method() == b"GET";
    if !is_get && !req.is_head {
        let allow: &[(&[u8], &[u8])] = &[(b"Allow", b"GET, HEAD")];
        return small_response(req, Status::MethodNotAllowed, allow);
    }
    let PlanScratch {
        etag,
        last_modified: lm_text,
        cache_control,
        content_range,
        ..
    } = scratch;
    let f = Fields::new(req);
    let accept = f.lines(f.accept_encoding, ACCEPT_ENCODING);
    let encoding = choose_encoding(accept, reps.br.is_some(), reps.gzip.is_some());
    let meta = reps.meta(encoding);
    let etag: &'s ETag = Option::insert(etag, ETag::new(meta, encoding));
    let now = parse_http_date(date);
    let lm = last_modified(meta, now);
    *lm_text = lm.map(format_http_date);
    let lm_text: Option<&'s [u8; 29]> = Option::as_ref(lm_text);
    *cache_control = opts.cache_control();
    let cache_control: Option<&'s StackBuf<48>> = Option::as_ref(cache_control);

    // Built in place in the value returned (an answer is a few hundred bytes: no copies).
    let mut planned = StaticPlan {
        answer: Answer::new(200),
        encoding,
    };
    let a = &mut planned.answer;
    match evaluate_preconditions(&f, etag.as_bytes(), lm) {
        Precondition::Proceed => {}
        Precondition::Failed => {
            let vary: &[(&[u8], &[u8])] = &[(b"Vary", b"Accept-Encoding")];
            let extra = if reps.varies() { vary } else { &[] };
            let mut plan = small_response(req, Status::PreconditionFailed, extra);
            plan.encoding = encoding;
            return plan;
        }
        Precondition::NotModified => {
            a.status = Status::NotModified.code();
            a.validators(etag, lm_text);
            a.caching(cache_control, reps.varies());
            a.length = None;
            return planned;
        }
    }

    let size = meta.size;
    let range = range_decision(is_get, &f, etag, lm, now, size);
    let content_range: &'s mut StackBuf<72> = Option::insert(content_range, StackBuf::new());
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
            let content_range: &'s StackBuf<72> = content_range;
            let both: [(&'s [u8], &'s [u8]); 2] = [
                (b"Content-Range", content_range.as_bytes()),
                (b"Vary", b"Accept-Encoding"),
            ];
            let extra = if reps.varies() { &both[..] } else { &both[..1] };
            let mut plan = small_response(req, Status::RangeNotSatisfiable, extra);
            plan.encoding = encoding;
            return plan;
        }
    };
    a.status = status.code();
    a.push(b"Content-Type", content_type(file_name).as_bytes());
    a.validators(etag, lm_text);
    a.push(b"Accept-Ranges", b"bytes");
    a.caching(cache_control, reps.varies());
    if let Some(coding) = encoding.content_coding() {
        a.push(b"Content-Encoding", coding);
    }
    if status == Status::PartialContent {
        a.push(b"Content-Range", content_range.as_bytes());
    }
    let range = BodyRange { offset, len };
    with_file(a, range, encoding, is_get);
    planned
}

/// A 200 or 206 with its fields: `range` of `encoding`'s file follows (for GET, when not empty).
fn with_file(a: &mut Answer<'_>, range: BodyRange, encoding: Encoding, is_get: bool) {
    a.length = Some(range.len);
    if is_get && range.len > 0 {
        a.body = AnswerBody::File { encoding, range };
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
/// that is no regular file): a short text body (none for HEAD).
pub fn plan_not_found(req: &RequestHead) -> StaticPlan<'static> {
    small_response(req, Status::NotFound, &[])
}

/// A directory named without its trailing '/': 301 to the '/' form, query kept (as nginx
/// does), so that relative links in the directory's index resolve under it. No body; the
/// connection stays open on the same rule as every static answer. The Location lives in
/// `scratch`.
pub fn plan_redirect_to_slash<'s>(
    req: &RequestHead,
    scratch: &'s mut PlanScratch,
) -> StaticPlan<'s> {
    let location = &mut scratch.location;
    location.clear();
    location.reserve(req.path().len() + 2 + req.query().len());
    location.extend_from_slice(req.path());
    location.push(b'/');
    if !req.query().is_empty() {
        location.push(b'?');
        location.extend_from_slice(req.query());
    }
    let mut a = Answer::new(Status::MovedPermanently.code());
    a.push(b"Location", &scratch.location);
    StaticPlan {
        answer: a,
        encoding: Encoding::Identity,
    }
}

#[cfg(test)]
mod tests;
