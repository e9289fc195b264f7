//! The uwsgi packet parser's tests: nginx's packets read into the same head as HTTP, every
//! refusal, packets fed in pieces, and arbitrary bytes that never panic.

use super::*;
use crate::ProtoError::*;

/// One uwsgi request packet (modifiers 0) holding `vars` in order.
pub(super) fn packet(vars: &[(&str, &str)]) -> Vec<u8> {
    packet_bytes(
        &vars
            .iter()
            .map(|(k, v)| (k.as_bytes(), v.as_bytes()))
            .collect::<Vec<_>>(),
    )
}

fn packet_bytes(vars: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut data = Vec::new();
    for (k, v) in vars {
        for s in [k, v] {
            data.extend_from_slice(&(s.len() as u16).to_le_bytes());
            data.extend_from_slice(s);
        }
    }
    let mut out = vec![0];
    out.extend_from_slice(&(data.len() as u16).to_le_bytes());
    out.push(0);
    out.extend_from_slice(&data);
    out
}

type Parsed = (RequestHead, UwsgiFacts, usize);

fn parse(input: &[u8]) -> Result<Option<Parsed>, ProtoError> {
    parse_packet(input, &Limits::default())
}

/// A packet that must parse, using all of `input`.
pub(super) fn ok(input: &[u8]) -> (RequestHead, UwsgiFacts) {
    match parse(input) {
        Ok(Some((head, facts, n))) => {
            assert_eq!(n, input.len());
            (head, facts)
        }
        other => panic!("expected a head, got {other:?}"),
    }
}

fn err(input: &[u8]) -> ProtoError {
    match parse(input) {
        Err(e) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

/// What `include uwsgi_params` sends for a GET, before any request headers.
const NGINX_GET: &[(&str, &str)] = &[
    ("QUERY_STRING", "a=1&b=%20"),
    ("REQUEST_METHOD", "GET"),
    ("CONTENT_TYPE", ""),
    ("CONTENT_LENGTH", ""),
    ("REQUEST_URI", "/app/x%20y?a=1&b=%20"),
    ("PATH_INFO", "/app/x y"),
    ("DOCUMENT_ROOT", "/usr/share/nginx/html"),
    ("SERVER_PROTOCOL", "HTTP/1.1"),
    ("REQUEST_SCHEME", "http"),
    ("REMOTE_ADDR", "203.0.113.7"),
    ("REMOTE_PORT", "51234"),
    ("SERVER_PORT", "80"),
    ("SERVER_NAME", "example.com"),
];

fn nginx_get_with(extra: &[(&'static str, &'static str)]) -> Vec<u8> {
    let mut vars = NGINX_GET.to_vec();
    vars.extend_from_slice(extra);
    packet(&vars)
}

fn headers(head: &RequestHead) -> Vec<(String, String)> {
    head.headers()
        .map(|(n, v)| {
            (
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            )
        })
        .collect()
}

#[test]
fn uwsgi_typical_nginx_get() {
    let input = nginx_get_with(&[
        ("HTTP_HOST", "example.com"),
        ("HTTP_USER_AGENT", "curl/8.5.0"),
        ("HTTP_X_FORWARDED_FOR", "198.51.100.1"),
        ("HTTP_ACCEPT", "*/*"),
    ]);
    let (head, facts) = ok(&input);
    assert_eq!(head.method(), b"GET");
    assert_eq!(head.target(), b"/app/x%20y?a=1&b=%20");
    assert_eq!(head.path(), b"/app/x%20y");
    assert_eq!(head.query(), b"a=1&b=%20");
    assert!(!head.has_absolute_target());
    assert_eq!(
        headers(&head),
        [
            ("Host", "example.com"),
            ("User-Agent", "curl/8.5.0"),
            ("X-Forwarded-For", "198.51.100.1"),
            ("Accept", "*/*"),
        ]
        .map(|(n, v)| (n.to_string(), v.to_string()))
    );
    assert_eq!(head.header(b"host"), Some(&b"example.com"[..]));
    assert_eq!(head.host(), Some(&b"example.com"[..]));
    assert_eq!(head.header_count(), 4);
    assert_eq!(head.version, Version::Http11);
    assert_eq!(head.body, BodyFraming::None);
    assert!(!head.keep_alive);
    assert!(!head.expect_continue);
    assert!(!head.is_head);
    assert_eq!(
        facts,
        UwsgiFacts::new(
            Some(b"203.0.113.7"),
            Some(b"51234"),
            Some(b"example.com"),
            Some(b"80"),
            Some("http"),
        )
    );
}

#[test]
fn uwsgi_post_leaves_the_body_after_the_packet() {
    let mut input = packet(&[
        ("REQUEST_METHOD", "POST"),
        ("CONTENT_TYPE", "application/x-www-form-urlencoded"),
        ("CONTENT_LENGTH", "5"),
        ("REQUEST_URI", "/form"),
        ("HTTP_HOST", "h"),
        ("HTTP_CONTENT_TYPE", "application/x-www-form-urlencoded"),
        ("HTTP_CONTENT_LENGTH", "5"),
        ("HTTP_TRANSFER_ENCODING", "chunked"),
    ]);
    let packet_len = input.len();
    input.extend_from_slice(b"hello");
    let (head, _, n) = parse(&input).unwrap().unwrap();
    assert_eq!(n, packet_len);
    assert_eq!(&input[n..], b"hello");
    assert_eq!(head.body, BodyFraming::Length(5));
    // The packet's CONTENT_* give the fields; their HTTP_* copies and the (already
    // removed) chunked coding are not passed on.
    assert_eq!(
        headers(&head),
        [
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Content-Length", "5"),
            ("Host", "h"),
        ]
        .map(|(n, v)| (n.to_string(), v.to_string()))
    );
    assert_eq!(head.query(), b"");
}

#[test]
fn uwsgi_every_prefix_needs_more() {
    let input = nginx_get_with(&[("HTTP_HOST", "example.com")]);
    for i in 0..input.len() {
        assert_eq!(
            parse(&input[..i]).map(|o| o.is_none()),
            Ok(true),
            "prefix {i}"
        );
    }
    assert!(parse(&input).unwrap().is_some());
}

#[test]
fn uwsgi_variable_running_past_the_packet() {
    let runs_past = BadRequest("uwsgi: variable runs past the packet");
    // Key size says 10, only 3 key bytes inside datasize (the rest would be body bytes).
    let mut input = vec![0, 5, 0, 0, 10, 0, b'a', b'b', b'c'];
    input.extend_from_slice(b"more bytes after the packet");
    assert_eq!(err(&input), runs_past);
    // A value size past the end.
    let input = [0, 8, 0, 0, 1, 0, b'K', 9, 0, b'v', b'v', b'v'];
    assert_eq!(err(&input), runs_past);
    // One stray byte where a size should be.
    let mut input = packet(&[("REQUEST_METHOD", "GET"), ("REQUEST_URI", "/")]);
    input.push(0);
    input[1] += 1;
    assert_eq!(err(&input), runs_past);
}

#[test]
fn uwsgi_bad_modifier() {
    let mut input = packet(&[("REQUEST_METHOD", "GET"), ("REQUEST_URI", "/")]);
    input[0] = 5;
    assert_eq!(err(&input), BadRequest("uwsgi: unsupported modifier"));
    // Decided from the 4-byte header alone.
    assert_eq!(err(&input[..4]), BadRequest("uwsgi: unsupported modifier"));
    let mut input = packet(&[("REQUEST_METHOD", "GET"), ("REQUEST_URI", "/")]);
    input[3] = 1;
    assert_eq!(err(&input), BadRequest("uwsgi: unsupported modifier"));
    // An HTTP request sent to the uwsgi socket.
    assert_eq!(
        err(b"GET / HTTP/1.1\r\n\r\n"),
        BadRequest("uwsgi: unsupported modifier")
    );
}

#[test]
fn uwsgi_datasize_over_the_limit_is_refused_from_the_header() {
    let limits = Limits {
        max_header_bytes: 100,
        ..Limits::default()
    };
    assert_eq!(
        parse_packet(&[0, 101, 0, 0], &limits).map(|o| o.is_some()),
        Err(HeadersTooLarge)
    );
    assert_eq!(
        parse_packet(&[0, 100, 0, 0], &limits).map(|o| o.is_some()),
        Ok(false)
    );
}

#[test]
fn uwsgi_request_method_is_required_and_a_token() {
    assert_eq!(
        err(&packet(&[("REQUEST_URI", "/")])),
        BadRequest("uwsgi: no REQUEST_METHOD")
    );
    for method in ["", "G T", "GET\r", "G:T"] {
        assert_eq!(
            err(&packet(&[("REQUEST_METHOD", method), ("REQUEST_URI", "/")])),
            BadRequest("uwsgi: invalid REQUEST_METHOD"),
            "{method:?}"
        );
    }
    let (head, _) = ok(&packet(&[("REQUEST_METHOD", "HEAD"), ("REQUEST_URI", "/")]));
    assert!(head.is_head);
}

#[test]
fn uwsgi_target_from_path_info_and_query_string() {
    let (head, _) = ok(&packet(&[
        ("REQUEST_METHOD", "GET"),
        ("PATH_INFO", "/a/b"),
        ("QUERY_STRING", "x=1&y"),
    ]));
    assert_eq!(head.target(), b"/a/b?x=1&y");
    assert_eq!(head.path(), b"/a/b");
    assert_eq!(head.query(), b"x=1&y");

    // No query: no '?'. An empty REQUEST_URI counts as missing.
    let (head, _) = ok(&packet(&[
        ("REQUEST_METHOD", "GET"),
        ("REQUEST_URI", ""),
        ("PATH_INFO", "/only"),
        ("QUERY_STRING", ""),
    ]));
    assert_eq!(head.target(), b"/only");
    assert_eq!(head.query(), b"");

    // PATH_INFO is decoded: re-encoded so that decoding the path gives it back.
    let (head, _) = ok(&packet(&[
        ("REQUEST_METHOD", "GET"),
        ("PATH_INFO", "/a b/100%/?#/caf\u{e9}"),
    ]));
    assert_eq!(head.path(), b"/a%20b/100%25/%3F%23/caf%C3%A9");
    assert_eq!(
        crate::path::percent_decode(head.path()).as_ref(),
        "/a b/100%/?#/caf\u{e9}".as_bytes()
    );

    assert_eq!(
        err(&packet(&[("REQUEST_METHOD", "GET"), ("QUERY_STRING", "x")])),
        BadRequest("uwsgi: no REQUEST_URI or PATH_INFO")
    );
}

#[test]
fn uwsgi_scheme_from_https_and_scheme_variables() {
    let base = [("REQUEST_METHOD", "GET"), ("REQUEST_URI", "/")];
    let scheme = |extra: &[(&str, &str)]| {
        let mut vars = base.to_vec();
        vars.extend_from_slice(extra);
        ok(&packet(&vars)).1.scheme
    };
    assert_eq!(scheme(&[]), None);
    assert_eq!(scheme(&[("HTTPS", "on")]), Some("https"));
    assert_eq!(scheme(&[("HTTPS", "ON")]), Some("https"));
    assert_eq!(scheme(&[("HTTPS", "1")]), Some("https"));
    assert_eq!(scheme(&[("HTTPS", "off")]), Some("http"));
    assert_eq!(scheme(&[("HTTPS", "")]), None);
    assert_eq!(scheme(&[("REQUEST_SCHEME", "http")]), Some("http"));
    assert_eq!(scheme(&[("REQUEST_SCHEME", "HTTPS")]), Some("https"));
    assert_eq!(scheme(&[("UWSGI_SCHEME", "https")]), Some("https"));
    assert_eq!(
        scheme(&[("REQUEST_SCHEME", "http"), ("HTTPS", "on")]),
        Some("https")
    );
    assert_eq!(scheme(&[("REQUEST_SCHEME", "gopher")]), None);
}

#[test]
fn uwsgi_control_bytes_in_header_values_are_refused() {
    for value in ["a\rb", "a\nb", "a\0b", "a\x01b", "a\x7fb"] {
        let input = packet(&[
            ("REQUEST_METHOD", "GET"),
            ("REQUEST_URI", "/"),
            ("HTTP_X_EVIL", value),
        ]);
        assert!(matches!(err(&input), BadRequest(_)), "{value:?}");
    }
    assert!(matches!(
        err(&packet(&[
            ("REQUEST_METHOD", "POST"),
            ("REQUEST_URI", "/"),
            ("CONTENT_TYPE", "text/plain\r\nX: y"),
        ])),
        BadRequest(_)
    ));
    // obs-text and HTAB are fine, as in HTTP; surrounding whitespace is trimmed.
    let input = packet_bytes(&[
        (b"REQUEST_METHOD", b"GET"),
        (b"REQUEST_URI", b"/"),
        (b"HTTP_X_NAME", b" caf\xe9\tx "),
    ]);
    let (head, _) = ok(&input);
    assert_eq!(head.header(b"x-name"), Some(&b"caf\xe9\tx"[..]));
}

#[test]
fn uwsgi_content_length() {
    let with_length = |cl: &str| {
        parse(&packet(&[
            ("REQUEST_METHOD", "POST"),
            ("REQUEST_URI", "/"),
            ("CONTENT_LENGTH", cl),
        ]))
        .map(|o| o.map(|(h, _, _)| h.body))
    };
    assert_eq!(with_length(""), Ok(Some(BodyFraming::None)));
    assert_eq!(with_length("0"), Ok(Some(BodyFraming::None)));
    assert_eq!(with_length("42"), Ok(Some(BodyFraming::Length(42))));
    for garbage in [
        "abc",
        "+5",
        "-1",
        " 5",
        "5 ",
        "0x10",
        "1,1",
        "99999999999999999999999",
    ] {
        assert!(
            matches!(with_length(garbage), Err(BadRequest(_))),
            "{garbage:?}"
        );
    }
    let over = (Limits::default().max_body + 1).to_string();
    assert_eq!(with_length(&over), Err(PayloadTooLarge));
    // Missing altogether: no body.
    let (head, _) = ok(&packet(&[("REQUEST_METHOD", "POST"), ("REQUEST_URI", "/")]));
    assert_eq!(head.body, BodyFraming::None);
    // Repeated: same value is one field; different values are refused.
    let (head, _) = ok(&packet(&[
        ("REQUEST_METHOD", "POST"),
        ("REQUEST_URI", "/"),
        ("CONTENT_LENGTH", "3"),
        ("CONTENT_LENGTH", "3"),
    ]));
    assert_eq!(head.body, BodyFraming::Length(3));
    assert_eq!(head.header_count(), 1);
    assert_eq!(
        err(&packet(&[
            ("REQUEST_METHOD", "POST"),
            ("REQUEST_URI", "/"),
            ("CONTENT_LENGTH", "3"),
            ("CONTENT_LENGTH", "4"),
        ])),
        BadRequest("uwsgi: conflicting CONTENT_LENGTH variables")
    );
}

#[test]
fn uwsgi_server_protocol() {
    let version = |p: &str| {
        parse(&packet(&[
            ("REQUEST_METHOD", "GET"),
            ("REQUEST_URI", "/"),
            ("SERVER_PROTOCOL", p),
        ]))
        .map(|o| o.map(|(h, _, _)| h.version))
    };
    assert_eq!(version("HTTP/1.0"), Ok(Some(Version::Http10)));
    assert_eq!(version("HTTP/1.1"), Ok(Some(Version::Http11)));
    assert_eq!(version("HTTP/2.0"), Ok(Some(Version::Http11)));
    assert_eq!(version("HTTP/3.0"), Ok(Some(Version::Http11)));
    assert_eq!(version("HTTP/1.2"), Err(VersionNotSupported));
    assert_eq!(
        version("SPDY"),
        Err(BadRequest("uwsgi: invalid SERVER_PROTOCOL"))
    );
    let (head, _) = ok(&packet(&[("REQUEST_METHOD", "GET"), ("REQUEST_URI", "/")]));
    assert_eq!(head.version, Version::Http11);
}

#[test]
fn uwsgi_raw_target_is_kept_byte_exact() {
    let uri: &[u8] = b"/files/a%2Fb/caf\xc3\xa9/\xff?q=\xe4&r=%2F";
    let input = packet_bytes(&[(b"REQUEST_METHOD", b"GET"), (b"REQUEST_URI", uri)]);
    let (head, _) = ok(&input);
    assert_eq!(head.target(), uri);
    assert_eq!(head.path(), b"/files/a%2Fb/caf\xc3\xa9/\xff");
    assert_eq!(head.query(), b"q=\xe4&r=%2F");
}

#[test]
fn uwsgi_target_rules() {
    let target = |method: &str, uri: &str| {
        parse(&packet(&[("REQUEST_METHOD", method), ("REQUEST_URI", uri)]))
            .map(|o| o.map(|(h, _, _)| (h.path().to_vec(), h.query().to_vec())))
    };
    assert_eq!(
        target("OPTIONS", "*"),
        Ok(Some((b"*".to_vec(), Vec::new())))
    );
    assert!(matches!(target("GET", "*"), Err(BadRequest(_))));
    for uri in ["x", "http://h/", "/a b", "/a#f", "/a\tb", "/\x7f"] {
        assert!(matches!(target("GET", uri), Err(BadRequest(_))), "{uri:?}");
    }
    assert_eq!(target("GET", "/?"), Ok(Some((b"/".to_vec(), Vec::new()))));

    let limits = Limits {
        max_request_line: 8,
        ..Limits::default()
    };
    let at = |uri: &str| {
        parse_packet(
            &packet(&[("REQUEST_METHOD", "GET"), ("REQUEST_URI", uri)]),
            &limits,
        )
        .map(|o| o.is_some())
    };
    assert_eq!(at("/1234567"), Ok(true));
    assert_eq!(at("/12345678"), Err(UriTooLong));
}

#[test]
fn uwsgi_header_names_and_counts() {
    let (head, _) = ok(&packet(&[
        ("REQUEST_METHOD", "GET"),
        ("REQUEST_URI", "/"),
        ("HTTP_WWW_AUTHENTICATE", "x"),
        ("HTTP_DNT", "1"),
        ("HTTP_x_lower", "y"),
        ("HTTP_COOKIE", "a=1; b=2"),
        ("DOCUMENT_ROOT", "/srv"),
    ]));
    let names: Vec<String> = headers(&head).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["Www-Authenticate", "Dnt", "X-Lower", "Cookie"]);

    for key in ["HTTP_", "HTTP_A:B", "HTTP_A B"] {
        assert_eq!(
            err(&packet(&[
                ("REQUEST_METHOD", "GET"),
                ("REQUEST_URI", "/"),
                (key, "v"),
            ])),
            BadRequest("uwsgi: invalid header variable name"),
            "{key:?}"
        );
    }
    assert_eq!(
        err(&packet(&[("", "v"), ("REQUEST_METHOD", "GET")])),
        BadRequest("uwsgi: empty variable name")
    );

    let limits = Limits {
        max_headers: 2,
        ..Limits::default()
    };
    let with_headers = |n: usize| {
        let keys: Vec<String> = (0..n).map(|i| format!("HTTP_X_{i}")).collect();
        let mut vars = vec![("REQUEST_METHOD", "GET"), ("REQUEST_URI", "/")];
        vars.extend(keys.iter().map(|k| (k.as_str(), "v")));
        parse_packet(&packet(&vars), &limits).map(|o| o.is_some())
    };
    assert_eq!(with_headers(2), Ok(true));
    assert_eq!(with_headers(3), Err(HeadersTooLarge));
}

#[test]
fn uwsgi_later_variables_override_earlier_ones() {
    let (head, facts) = ok(&packet(&[
        ("REQUEST_METHOD", "GET"),
        ("SERVER_NAME", "first"),
        ("CONTENT_TYPE", "text/plain"),
        ("REQUEST_URI", "/"),
        ("HTTP_HOST", "h"),
        ("SERVER_NAME", "second"),
        ("CONTENT_TYPE", "text/html"),
    ]));
    assert_eq!(facts.server_name(), Some(&b"second"[..]));
    assert_eq!(
        headers(&head),
        [("Content-Type", "text/html"), ("Host", "h")].map(|(n, v)| (n.to_string(), v.to_string()))
    );
}

#[test]
fn uwsgi_arbitrary_bytes_never_panic() {
    // xorshift64*: reproducible pseudo-random mutations of a valid packet, every prefix.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let seed = nginx_get_with(&[("HTTP_HOST", "h"), ("CONTENT_LENGTH", "3")]);
    let tiny = crate::testing::tiny_limits();
    for _ in 0..2000 {
        let mut input = seed.clone();
        for _ in 0..(next() % 4 + 1) {
            let i = (next() % input.len() as u64) as usize;
            input[i] = next() as u8;
        }
        for limits in [Limits::default(), tiny] {
            for end in 0..=input.len() {
                let _ = parse_packet(&input[..end], &limits);
            }
        }
    }
}

/// nginx passes the client's Host on as HTTP_HOST: a malformed IP-literal is refused as on
/// HTTP/1.1 and HTTP/2 (it reached the app as HTTP_HOST).
#[test]
fn uwsgi_malformed_host_is_refused() {
    for bad in ["[::1", "[::1]x", "a]b", "[zz]"] {
        let input = nginx_get_with(&[("HTTP_HOST", bad)]);
        assert!(matches!(parse(&input), Err(BadRequest(_))), "{bad}");
    }
    for ok in ["[::1]", "[::1]:8000", "example.com"] {
        let input = nginx_get_with(&[("HTTP_HOST", ok)]);
        assert!(parse(&input).unwrap().is_some(), "{ok}");
    }
}
