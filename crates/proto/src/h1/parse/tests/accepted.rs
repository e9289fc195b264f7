//! Heads the parser reads: target forms, fields and their values, connection handling, framing,
//! and limits met exactly.

use super::*;

#[test]
fn simple_get() {
    let s = ok("GET /a%20b?x=1&y HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n");
    assert_eq!(s.method, b"GET");
    assert_eq!(s.target, b"/a%20b?x=1&y");
    assert_eq!(s.path, b"/a%20b");
    assert_eq!(s.query, b"x=1&y");
    assert_eq!(s.version, Version::Http11);
    assert_eq!(s.body, BodyFraming::None);
    assert!(s.keep_alive && !s.expect_continue && !s.is_head);
    assert_eq!(
        s.headers,
        [
            (b"Host".to_vec(), b"example.com".to_vec()),
            (b"Accept".to_vec(), b"*/*".to_vec())
        ]
    );
    assert_eq!(
        s.buf,
        b"GET /a%20b?x=1&y HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n"
    );
}

#[test]
fn query_splitting() {
    let q = |t: &str| {
        let s = ok(format!("GET {t} HTTP/1.1\r\nHost: h\r\n\r\n"));
        (show(&s.path), show(&s.query))
    };
    assert_eq!(q("/"), ("/".into(), "".into()));
    assert_eq!(q("/p?"), ("/p".into(), "".into()));
    assert_eq!(q("/p?a?b=/c"), ("/p".into(), "a?b=/c".into()));
    assert_eq!(q("//x"), ("//x".into(), "".into()));
    assert_eq!(q("/?q"), ("/".into(), "q".into()));
    assert_eq!(q("/a|b{c}^`\"<>\\"), ("/a|b{c}^`\"<>\\".into(), "".into()));
}

#[test]
fn absolute_form_targets() {
    let t = |t: &str| {
        let s = ok(format!("GET {t} HTTP/1.1\r\nHost: ignored\r\n\r\n"));
        assert_eq!(s.target, t.as_bytes());
        (show(&s.path), show(&s.query))
    };
    assert_eq!(
        t("http://example.com/x/y?z=1"),
        ("/x/y".into(), "z=1".into())
    );
    assert_eq!(t("https://example.com:8443/"), ("/".into(), "".into()));
    assert_eq!(t("http://example.com"), ("/".into(), "".into()));
    assert_eq!(t("HTTP://Example.com?q=1"), ("/".into(), "q=1".into()));
    assert_eq!(t("hTTpS://[::1]:8080/a"), ("/a".into(), "".into()));
    // The same with an HTTP/1.0 version string: the borrowed '/' is still there.
    let s = ok("GET http://h HTTP/1.0\r\n\r\n");
    assert_eq!(s.path, b"/");
}

#[test]
fn the_host_of_an_absolute_target_replaces_the_host_header() {
    // RFC 9112 §3.2.2: with an absolute-form target, the Host header is ignored.
    let s = ok("GET http://other:8080/echo HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(s.host.as_deref(), Some(&b"other:8080"[..]));
    let s = ok("GET https://[::1]?q HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(s.host.as_deref(), Some(&b"[::1]"[..]));
    let s = ok("GET /echo HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(s.host.as_deref(), Some(&b"x"[..]));
    let s = ok("OPTIONS * HTTP/1.1\r\nHost: y\r\n\r\n");
    assert_eq!(s.host.as_deref(), Some(&b"y"[..]));
}

#[test]
fn options_asterisk() {
    let s = ok("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_eq!(
        (s.target.as_slice(), s.path.as_slice(), s.query.as_slice()),
        (&b"*"[..], &b"*"[..], &b""[..])
    );
}

#[test]
fn leading_empty_lines_are_skipped_and_counted() {
    let s = ok("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_eq!(s.method, b"GET");
    assert_eq!(s.n, 4 + 27);
    assert!(
        s.buf.starts_with(b"GET / "),
        "buf starts at the request line"
    );
    // Only CRLF pairs are empty lines.
    assert_eq!(parse3(b"\r\n", &Limits::default()), Ok(None));
    assert_eq!(parse3(b"\r\n\r", &Limits::default()), Ok(None));
    assert_eq!(parse3(b"", &Limits::default()), Ok(None));
}

#[test]
fn incomplete_heads_need_more() {
    for input in [
        &b"G"[..],
        b"GET / HTTP/1.1",
        b"GET / HTTP/1.1\r",
        b"GET / HTTP/1.1\r\n",
        b"GET / HTTP/1.1\r\nHost: h\r\n",
        b"GET / HTTP/1.1\r\nHost: h\r\n\r",
    ] {
        assert_eq!(
            parse3(input, &Limits::default()),
            Ok(None),
            "{:?}",
            show(input)
        );
    }
}

#[test]
fn body_starts_right_after_the_head() {
    let input = b"POST /f HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcGET";
    let (head, n) = HeadParser::new()
        .parse(input, &Limits::default())
        .unwrap()
        .unwrap();
    assert_eq!(&input[n..], b"abcGET");
    assert_eq!(head.body, BodyFraming::Length(3));
    assert_eq!(head.method(), b"POST");
}

#[test]
fn repeated_fields_kept_in_order_and_lookup_is_case_insensitive() {
    let input = get(&field("X-A: 1|x-b: 2|X-A: 3"));
    let s = ok(&input);
    let names: Vec<String> = s.headers.iter().map(|(n, _)| show(n)).collect();
    assert_eq!(names, ["Host", "X-A", "x-b", "X-A"]);
    let (head, _) = HeadParser::new()
        .parse(input.as_bytes(), &Limits::default())
        .unwrap()
        .unwrap();
    assert_eq!(head.header(b"x-a"), Some(&b"1"[..]));
    assert_eq!(head.header(b"X-B"), Some(&b"2"[..]));
    assert_eq!(head.header(b"nope"), None);
    assert_eq!(head.header_count(), 4);
}

#[test]
fn values_are_trimmed_and_may_hold_tabs_and_obs_text() {
    let mut input = b"GET / HTTP/1.1\r\nHost: h\r\nX-Obs: caf\xe9 \x80\xff\r\n".to_vec();
    input.extend_from_slice(b"X-Pad: \t a \t b \t\r\nX-Empty:\r\nX-Blank:  \t \r\n\r\n");
    let s = ok(&input);
    let values: Vec<&[u8]> = s.headers.iter().map(|(_, v)| v.as_slice()).collect();
    assert_eq!(
        values,
        [&b"h"[..], b"caf\xe9 \x80\xff", b"a \t b", b"", b""]
    );
}

#[test]
fn connection_and_keep_alive() {
    let ka = |version: &str, fields: &str| {
        ok(format!(
            "GET / {version}\r\nHost: h\r\n{}\r\n",
            field(fields)
        ))
        .keep_alive
    };
    assert!(ka("HTTP/1.1", "X: y"));
    assert!(!ka("HTTP/1.1", "Connection: close"));
    assert!(!ka("HTTP/1.1", "Connection: Upgrade, CLOSE"));
    assert!(!ka("HTTP/1.1", "Connection: foo|Connection: close"));
    assert!(ka("HTTP/1.1", "Connection: keep-alive"));
    assert!(ka("HTTP/1.1", "Connection: closed"));
    assert!(!ka("HTTP/1.0", "X: y"));
    assert!(ka("HTTP/1.0", "Connection: keep-alive"));
    assert!(ka("HTTP/1.0", "Connection: Keep-Alive"));
    assert!(ka("HTTP/1.0", "Connection: foo,,keep-alive ,"));
    assert!(ka("HTTP/1.0", "Connection: foo|Connection: keep-alive"));
    assert!(!ka("HTTP/1.0", "Connection: keep-alive, close"));
    assert!(!ka("HTTP/1.0", "Connection: keep-alive|Connection: close"));
}

#[test]
fn http10_needs_no_host() {
    let s = ok("GET / HTTP/1.0\r\n\r\n");
    assert_eq!(s.version, Version::Http10);
    assert!(s.headers.is_empty());
}

#[test]
fn expect_100_continue_only_on_11() {
    let ec = |version: &str, fields: &str| {
        ok(format!(
            "POST / {version}\r\nHost: h\r\nContent-Length: 1\r\n{}\r\n",
            field(fields)
        ))
        .expect_continue
    };
    assert!(ec("HTTP/1.1", "Expect: 100-continue"));
    assert!(ec("HTTP/1.1", "Expect: 100-Continue"));
    assert!(!ec("HTTP/1.1", "Expect: 200-ok"));
    assert!(!ec("HTTP/1.1", "X: y"));
    assert!(!ec("HTTP/1.0", "Expect: 100-continue"));
}

#[test]
fn head_method() {
    assert!(ok("HEAD / HTTP/1.1\r\nHost: h\r\n\r\n").is_head);
    let s = ok("head / HTTP/1.1\r\nHost: h\r\n\r\n");
    assert!(!s.is_head, "methods are case-sensitive");
    assert!(ok("M-SEARCH! / HTTP/1.1\r\nHost: h\r\n\r\n").method == b"M-SEARCH!");
}

#[test]
fn host_values() {
    for host in [
        "",
        "example.com",
        "example.com:8080",
        "[::1]:80",
        "127.0.0.1",
        "xn--bcher-kva.ch",
    ] {
        ok(format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n"));
    }
    for host in ["a b", "a/b", "a@b", "a?b", "a#b", "a\"b"] {
        assert_eq!(
            status(format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n")),
            400,
            "{host}"
        );
    }
}

#[test]
fn framing_content_length() {
    assert_eq!(body_of("Content-Length: 0"), BodyFraming::None);
    assert_eq!(body_of("Content-Length: 42"), BodyFraming::Length(42));
    assert_eq!(body_of("Content-Length: 007"), BodyFraming::Length(7));
    assert_eq!(
        body_of("Content-Length: 5|Content-Length: 5"),
        BodyFraming::Length(5)
    );
    assert_eq!(body_of("Content-Length: 5, 5"), BodyFraming::Length(5));
    assert_eq!(
        body_of("content-length: 5,5|CONTENT-LENGTH: 5"),
        BodyFraming::Length(5)
    );
    let exact = format!("Content-Length: {}", crate::limits::DEFAULT_MAX_BODY);
    assert_eq!(
        body_of(&exact),
        BodyFraming::Length(crate::limits::DEFAULT_MAX_BODY)
    );
}

#[test]
fn framing_chunked() {
    assert_eq!(body_of("Transfer-Encoding: chunked"), BodyFraming::Chunked);
    assert_eq!(body_of("Transfer-Encoding: CHUNKED"), BodyFraming::Chunked);
    assert_eq!(
        body_of("transfer-encoding: , chunked ,"),
        BodyFraming::Chunked
    );
    assert_eq!(
        body_of("Transfer-Encoding:|Transfer-Encoding: chunked"),
        BodyFraming::Chunked
    );
}

#[test]
fn limits_at_the_boundary_are_accepted() {
    let l = small();
    // Request line of exactly 32 bytes.
    let line = format!("GET /{} HTTP/1.0", "a".repeat(32 - 14));
    assert_eq!(line.len(), 32);
    ok_with(format!("{line}\r\n\r\n"), &l);
    // Head of exactly 96 bytes.
    let head = format!(
        "GET / HTTP/1.1\r\nHost: h\r\nX: {}\r\n\r\n",
        "v".repeat(96 - 32)
    );
    assert_eq!(head.len(), 96);
    ok_with(&head, &l);
    // Exactly 3 fields; body of exactly max_body.
    ok_with(
        "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nContent-Length: 1000\r\n\r\n",
        &l,
    );
}

#[test]
fn many_fields_use_the_heap_path() {
    let fields: String = (0..90).map(|i| format!("X-{i}: {i}\r\n")).collect();
    let s = ok(format!("GET / HTTP/1.1\r\nHost: h\r\n{fields}\r\n"));
    assert_eq!(s.headers.len(), 91);
    assert_eq!(s.headers[90], (b"X-89".to_vec(), b"89".to_vec()));
}

// ---- refusals ----
