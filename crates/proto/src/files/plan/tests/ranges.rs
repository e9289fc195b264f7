//! The plan's range tests: a single range (206), an unsatisfiable one (416), ranges ignored
//! (the whole file), `If-Range` by tag and by date, and a range over the encoding chosen.

use super::*;

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
