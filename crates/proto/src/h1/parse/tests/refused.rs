//! Heads the parser refuses, each with its status: limits passed, bare CR or LF, control bytes,
//! bad field lines, methods, targets, versions, Host, Content-Length and Transfer-Encoding.

use super::*;

#[test]
fn request_line_too_long_is_414_before_the_head_ends() {
    let l = small();
    let line = format!("GET /{} HTTP/1.0", "a".repeat(32 - 13));
    assert_eq!(err_with(format!("{line}\r\n\r\n"), &l), UriTooLong);
    // As soon as 33 bytes without a line end are buffered: no need for the rest.
    let partial = format!("GET /{}", "a".repeat(28));
    assert_eq!(
        seen(HeadParser::new().parse(partial.as_bytes(), &l)),
        Err(UriTooLong)
    );
    assert_eq!(
        HeadParser::new()
            .parse(&partial.as_bytes()[..32], &l)
            .unwrap()
            .map(|_| ()),
        None
    );
    // Default limit: 8 KiB.
    let long = format!("GET /{} HTTP/1.1\r\nHost: h\r\n\r\n", "a".repeat(8 * 1024));
    assert_eq!(err(long), UriTooLong);
}

#[test]
fn head_too_large_is_431_as_soon_as_exceeded() {
    let l = small();
    let head = format!(
        "GET / HTTP/1.1\r\nHost: h\r\nX: {}\r\n\r\n",
        "v".repeat(96 - 31)
    );
    assert_eq!(err_with(&head, &l), HeadersTooLarge);
    let partial = format!("GET / HTTP/1.1\r\nX: {}", "v".repeat(100));
    assert_eq!(
        seen(HeadParser::new().parse(partial.as_bytes(), &l)),
        Err(HeadersTooLarge)
    );
    // Leading empty lines count.
    assert_eq!(err_with("\r\n".repeat(49), &l), HeadersTooLarge);
    let big: String = (0..70)
        .map(|i| format!("X-{i}: {}\r\n", "v".repeat(1000)))
        .collect();
    assert_eq!(err(get(&big)), HeadersTooLarge);
}

#[test]
fn too_many_fields_is_431() {
    let l = small();
    assert_eq!(
        err_with(
            "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n",
            &l
        ),
        HeadersTooLarge
    );
    let fields: String = (0..100).map(|i| format!("X-{i}: {i}\r\n")).collect();
    assert_eq!(err(get(&fields)), HeadersTooLarge);
}

#[test]
fn bare_lf_and_bare_cr_are_400() {
    for input in [
        &b"GET / HTTP/1.1\nHost: h\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\nHost: h\n\r\n",
        b"GET / HTTP/1.1\r\nHost: h\r\n\n",
        b"GET / HTTP/1.1\r\nHost: h\n\n",
        b"\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
        b"\r\n\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
        b"\rGET / HTTP/1.1\r\nHost: h\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n",
        b"GET /\r HTTP/1.1\r\nHost: h\r\n\r\n",
        b"GET / HTTP/1.1\r\r\nHost: h\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: h\r\n\r\r\n",
    ] {
        assert_eq!(status(input), 400, "{:?}", show(input));
    }
}

#[test]
fn control_bytes_are_400_but_tab_in_values_is_fine() {
    ok(get(&field("X: a\tb")));
    for input in [
        get(&field("X: a\0b")),
        get(&field("X: a\x01b")),
        get(&field("X: a\x7fb")),
        get(&field("X: \x1b[31m")),
        get(&field("X\0: a")),
        "GET /\0 HTTP/1.1\r\nHost: h\r\n\r\n".into(),
        "GET /\x7f HTTP/1.1\r\nHost: h\r\n\r\n".into(),
        "G\x01T / HTTP/1.1\r\nHost: h\r\n\r\n".into(),
        "GET /\tHTTP/1.1\r\nHost: h\r\n\r\n".into(),
        "GET\t/ HTTP/1.1\r\nHost: h\r\n\r\n".into(),
    ] {
        assert_eq!(status(&input), 400, "{input:?}");
    }
}

#[test]
fn field_line_syntax_errors_are_400() {
    for fields in [
        "X: a|  folded",
        "X: a|\tfolded",
        "X : a",
        "X\t: a",
        ": a",
        "X a",
        "X(y): a",
        "X\u{e9}: a",
    ] {
        assert_eq!(status_of(fields), 400, "{fields:?}");
    }
    assert_eq!(status("GET / HTTP/1.1\r\n Host: h\r\n\r\n"), 400);
}

/// httparse's reading of a field section that `parse_fields` accepted: (name, value) pairs.

#[test]
fn invalid_methods_are_400() {
    for line in [
        "G(T / HTTP/1.1",
        " / HTTP/1.1",
        "GE T / HTTP/1.1",
        "G\u{e9}T / HTTP/1.1",
        "GET",
    ] {
        assert_eq!(
            status(format!("{line}\r\nHost: h\r\n\r\n")),
            400,
            "{line:?}"
        );
    }
}

#[test]
fn invalid_targets_are_400() {
    for line in [
        "GET a HTTP/1.1",
        "GET /a b HTTP/1.1",
        "GET  / HTTP/1.1",
        "GET / HTTP/1.1 ",
        "GET  HTTP/1.1",
        "GET /#frag HTTP/1.1",
        "GET * HTTP/1.1",
        "OPTIONS *x HTTP/1.1",
        "CONNECT example.com:443 HTTP/1.1",
        "CONNECT / HTTP/1.1",
        "GET example.com:443 HTTP/1.1",
        "GET http:// HTTP/1.1",
        "GET http:///x HTTP/1.1",
        "GET http://?q HTTP/1.1",
        "GET http://user@h/ HTTP/1.1",
        "GET http://h\\x/ HTTP/1.1",
        "GET ftp://h/ HTTP/1.1",
        "GET http:/h/ HTTP/1.1",
    ] {
        assert_eq!(
            status(format!("{line}\r\nHost: h\r\n\r\n")),
            400,
            "{line:?}"
        );
    }
    assert_eq!(status(b"GET /\x80 HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
    assert_eq!(status(b"GET /\xff HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
}

#[test]
fn versions() {
    let v = |version: &str| status(format!("GET / {version}\r\nHost: h\r\n\r\n"));
    for unsupported in ["HTTP/2.0", "HTTP/0.9", "HTTP/3.0", "HTTP/9.9", "HTTP/0.1"] {
        assert_eq!(v(unsupported), 505, "{unsupported}");
    }
    for bad in [
        "HTTP/1",
        "HTTP/2",
        "http/1.1",
        "HTTP/1.10",
        "HTTP/11",
        "HTTP/a.b",
        "HTTP 1.1",
        "HTTPS/1.1",
        "",
    ] {
        assert_eq!(v(bad), 400, "{bad:?}");
    }
    assert_eq!(status("GET /\r\n\r\n"), 400, "HTTP/0.9-style line");
    // An HTTP/2 prior-knowledge preface gets 505, not 400.
    assert_eq!(status("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 505);
}

#[test]
fn higher_minor_versions_of_http1_are_served_as_http11() {
    // RFC 9110 §2.5: a recipient SHOULD handle a higher minor version as its own highest.
    for minor in 2..=9 {
        let line = format!("GET /x?q HTTP/1.{minor}");
        let s = ok(format!("{line}\r\nHost: h\r\n\r\n"));
        assert_eq!(s.version, Version::Http11, "{line}");
        assert_eq!(s.version.as_str(), "HTTP/1.1");
        assert!(s.keep_alive, "persistent by default, as 1.1: {line}");
        assert_eq!((&s.path[..], &s.query[..]), (&b"/x"[..], &b"q"[..]));
        // 1.1's rules with it: Host is required, chunked is understood.
        assert_eq!(
            status(format!("{line}\r\n\r\n")),
            400,
            "{line} without Host"
        );
        let s = ok(format!(
            "POST / HTTP/1.{minor}\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        ));
        assert_eq!(s.body, BodyFraming::Chunked);
    }
    // An absolute-form target without a path still reads "/" out of the version.
    assert_eq!(ok("GET http://h HTTP/1.5\r\nHost: h\r\n\r\n").path, b"/");
}

#[test]
fn a_bad_request_line_is_refused_as_soon_as_it_is_complete() {
    // Each of these lines is complete and wrong: the parser answers before any header
    // field (or the empty line that ends the head) arrives. parse3 checks it whole, byte by
    // byte (the error comes at the line's LF) and with trailing bytes.
    for (input, want) in [
        (&b"GET /\r\n"[..], 400),
        (b"GET /\r\n\xe2\r\n", 400),
        (b"GET /\r\n\xe2", 400),
        (b"GET / HTTP/2.0\r\n", 505),
        (b"GET / HTTP/2.0\r\nHost: h\r\n", 505),
        (b"GET / HTTP/1.10\r\nHost", 400),
        (b"G@T / HTTP/1.1\r\n", 400),
        (b"GET  / HTTP/1.1\r\n", 400),
        (b"GET /a\x7fb HTTP/1.1\r\n", 400),
        (b"GET * HTTP/1.1\r\n", 400),
        (b"CONNECT h:443 HTTP/1.1\r\n", 400),
        (b"\r\nGET ftp://h/ HTTP/1.1\r\nX: y\r\n", 400),
    ] {
        assert_eq!(err(input).status(), want, "{:?}", show(input));
    }
    // At the line's LF, not before.
    let mut p = HeadParser::new();
    assert!(matches!(p.parse(b"GET /\r", &Limits::default()), Ok(None)));
    assert!(p.parse(b"GET /\r\n", &Limits::default()).is_err());
    // A good line still waits for the rest of the head.
    assert_eq!(parse3(b"GET / HTTP/1.1\r\n", &Limits::default()), Ok(None));
    assert_eq!(
        parse3(b"GET / HTTP/1.9\r\nHost: h\r\n", &Limits::default()),
        Ok(None)
    );
}

#[test]
fn host_rules() {
    assert_eq!(status("GET / HTTP/1.1\r\n\r\n"), 400);
    assert_eq!(status("GET / HTTP/1.1\r\nX: y\r\n\r\n"), 400);
    assert_eq!(status_of("Host: other"), 400);
    assert_eq!(status("GET / HTTP/1.0\r\nHost: a\r\nhost: a\r\n\r\n"), 400);
}

#[test]
fn content_length_refusals() {
    for value in [
        "+5",
        "-1",
        "0x5",
        "5 5",
        "",
        " ",
        "5a",
        "a",
        "5.0",
        "5,",
        ",5",
        "5,,5",
        "1e3",
        "18446744073709551616",
        "99999999999999999999999",
    ] {
        assert_eq!(
            status_of(&format!("Content-Length: {value}")),
            400,
            "{value:?}"
        );
    }
    assert_eq!(status_of("Content-Length: 5, 6"), 400);
    assert_eq!(status_of("Content-Length: 5|Content-Length: 6"), 400);
    assert_eq!(
        status_of("Content-Length: 5|Transfer-Encoding: chunked"),
        400
    );
    assert_eq!(
        status_of("Transfer-Encoding: chunked|Content-Length: 0"),
        400
    );
    let over = format!("Content-Length: {}", crate::limits::DEFAULT_MAX_BODY + 1);
    assert_eq!(status_of(&over), 413);
    assert_eq!(status_of("Content-Length: 18446744073709551615"), 413);
    let l = Limits {
        max_header_bytes: 1000,
        ..small()
    };
    assert_eq!(
        err_with(get(&field("Content-Length: 1001")), &l),
        PayloadTooLarge
    );
}

#[test]
fn transfer_encoding_refusals() {
    for value in [
        "gzip",
        "chunked, gzip",
        "chunked, chunked",
        "chunked;a=b",
        "identity",
        "",
        ",",
        "x y, chunked",
        "chunked, \u{e9}",
    ] {
        assert_eq!(
            status_of(&format!("Transfer-Encoding: {value}")),
            400,
            "{value:?}"
        );
    }
    assert_eq!(
        status_of("Transfer-Encoding: chunked|Transfer-Encoding: chunked"),
        400
    );
    assert_eq!(
        status_of("Transfer-Encoding: chunked|Transfer-Encoding: gzip"),
        400
    );
    assert_eq!(status_of("Transfer-Encoding: gzip, chunked"), 501);
    assert_eq!(
        status_of("Transfer-Encoding: gzip;q=1, deflate, chunked"),
        501
    );
    assert_eq!(
        status_of("Transfer-Encoding: gzip|Transfer-Encoding: chunked"),
        501
    );
    assert_eq!(
        status("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
        400
    );
}

// ---- the incremental machinery ----
