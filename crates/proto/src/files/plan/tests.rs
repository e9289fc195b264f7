//! The static plan's tests: every status it answers, the head of each byte for byte, and the
//! representation and connection handling it picks (ranges: `tests/ranges.rs`).

use super::super::fields::request;
use super::super::{resolve, Resolved};
use super::*;
use crate::answer::{AnswerBody, ServerFields};
use crate::date::format_http_date;

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

/// What a plan's answer came to on HTTP/1.1, as the I/O layer sees it.
#[derive(Debug, PartialEq, Eq)]
struct Planned {
    status: u16,
    encoding: Encoding,
    body: Option<BodyRange>,
    keep_alive: bool,
    text_body: u64,
}

struct Got {
    plan: Planned,
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
        extra: b"",
    };
    let mut out = b"prefix|".to_vec();
    let mut scratch = PlanScratch::default();
    let p = plan(&req, name.as_bytes(), reps, opts, &date, &mut scratch);
    let plan = framed(&req, &p, &server, &mut out);
    let text = String::from_utf8(out).unwrap();
    let text = text.strip_prefix("prefix|").expect("appends").to_string();
    Got { plan, text }
}

/// Frame `p` as HTTP/1.1 into `out`, and say what it was.
fn framed(
    req: &RequestHead,
    p: &StaticPlan<'_>,
    server: &ServerFields<'_>,
    out: &mut Vec<u8>,
) -> Planned {
    let own = crate::h1::response::encode_answer(req, &p.answer, server, out);
    let body = match p.answer.body {
        AnswerBody::File { range, encoding } => {
            assert_eq!(encoding, p.encoding);
            Some(range)
        }
        _ => None,
    };
    Planned {
        status: own.status,
        encoding: p.encoding,
        body,
        keep_alive: own.keep_alive,
        text_body: if body.is_some() { 0 } else { own.body_bytes },
    }
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
        Planned {
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
        extra: b"",
    };
    let mut out = Vec::new();
    let mut scratch = PlanScratch::default();
    let p = plan(&req, path.file_name(), &plain(), &opts, &date, &mut scratch);
    let plan = framed(&req, &p, &server, &mut out);
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

mod ranges;
mod short;
