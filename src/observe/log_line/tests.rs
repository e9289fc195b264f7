//! Unit tests of the access log line: escaping of every byte (text and JSON), the named
//! headers found in one pass, the JSON line's fields in order, templates, the named formats
//! against allowed_values.txt, and the cut of a line too long for one pipe write.

use super::*;
use crate::observe::timings::{End, Timings};

#[test]
fn every_byte_is_escaped_or_printable() {
    let all: Vec<u8> = (0..=255u8).collect();
    let mut out = Vec::new();
    push_escaped(&mut out, &all);
    assert!(out.iter().all(|b| (0x20..=0x7e).contains(b)));
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("\\x00") && text.contains("\\x0a") && text.contains("\\xff"));
    assert!(text.contains("\\\"") && !text.replace("\\\"", "").contains('"'));
}

#[test]
fn json_strings_are_valid_utf8_for_every_byte() {
    let all: Vec<u8> = (0..=255u8).collect();
    let mut out = Vec::new();
    push_json_string(&mut out, &all);
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with('"') && text.ends_with('"'));
    assert!(text.contains("\\u0000") && text.contains("\\u001f") && text.contains("\\\""));
    assert!(text.contains('ÿ') && text.contains("\\u0085") && text.contains("\\u007f"));
}

#[test]
fn json_strings_carry_each_byte_as_its_latin1_character() {
    for b in 0..=255u8 {
        let mut out = Vec::new();
        push_json_string(&mut out, &[b'a', b, b'z']);
        let text = String::from_utf8(out).unwrap();
        let inner = &text[2..text.len() - 2];
        let expect = match b {
            b'"' => "\\\"".to_string(),
            b'\\' => "\\\\".to_string(),
            0x20..=0x7e | 0xa0..=0xff => char::from(b).to_string(),
            _ => format!("\\u{:04x}", b),
        };
        assert_eq!(inner, expect, "byte {b:#x}");
    }
}

#[test]
fn named_headers_are_found_in_one_pass_first_value_wins() {
    let wire = b"GET / HTTP/1.1\r\nHost: h\r\nUser-Agent: a\r\nREFERER: r\r\n\
                 user-agent: b\r\nX-Request-Id: 7\r\n\r\n";
    let (head, _) = sluicegate_proto::h1::HeadParser::new()
        .parse(wire, &sluicegate_proto::Limits::default())
        .unwrap()
        .unwrap();
    let n = NamedHeaders::of(&head);
    assert_eq!(n.user_agent, Some(&b"a"[..]));
    assert_eq!(n.referer, Some(&b"r"[..]));
    assert_eq!(n.request_id, Some(&b"7"[..]));
}

#[test]
fn a_json_line_has_every_field_in_order() {
    let wire = b"GET /a?b=1 HTTP/1.1\r\nHost: h\r\nUser-Agent: \"x\"\r\n\r\n";
    let (head, _) = sluicegate_proto::h1::HeadParser::new()
        .parse(wire, &sluicegate_proto::Limits::default())
        .unwrap()
        .unwrap();
    let client = Some("10.100.255.0".parse().unwrap());
    let e = Entry {
        head: &head,
        client,
        status: 200,
        body_bytes: 13,
        timings: Timings::default(),
        end: End::Ok,
        inline: Some(true),
        extras: None,
    };
    let mut line = Vec::new();
    push_json(&mut line, &e, &NamedHeaders::of(&head), 42);
    let text = String::from_utf8(line).unwrap();
    let mut at = 0;
    for (name, _) in FIELDS {
        let key = format!("\"{name}\":");
        let found = text[at..]
            .find(&key)
            .unwrap_or_else(|| panic!("{name} in {text}"));
        at += found + key.len();
    }
    assert!(text.starts_with("{\"client\":\"10.100.255.0\",") && text.ends_with("\"inline\"}"));
    assert!(text.contains("\"user_agent\":\"\\\"x\\\"\"") && text.contains("\"query\":\"b=1\""));
}

#[test]
fn templates_name_known_fields() {
    assert!(
        matches!(parse_format("{client} {status} {app_us}us"), Ok(Format::Template(p)) if p.len() == 6)
    );
    assert!(parse_format("{nope}")
        .unwrap_err()
        .contains("unknown field {nope}"));
    assert!(parse_format("{client").unwrap_err().contains("unclosed"));
    assert!(matches!(parse_format("json"), Ok(Format::Json)));
}

/// One named format per name `allowed_values.txt` gives `access_log_format`, each meaning
/// the format in its place: a name renamed or moved there fails here until this follows.
#[test]
fn the_named_formats_are_those_of_allowed_values() {
    assert_eq!(
        allowed_values("access_log_format").len(),
        named_formats().len()
    );
    assert!(matches!(parse_format("combined"), Ok(Format::Combined)));
    assert!(matches!(parse_format("common"), Ok(Format::Common)));
}

#[test]
fn a_line_too_long_for_a_pipe_write_is_cut_field_by_field_and_stays_json() {
    let ua = vec![0x85u8; 20_000]; // each byte escaped to 6: 120 KB of JSON
    let mut wire = b"GET /a?b=1 HTTP/1.1\r\nHost: h\r\nUser-Agent: ".to_vec();
    wire.extend_from_slice(&ua);
    wire.extend_from_slice(b"\r\nReferer: r\r\n\r\n");
    let limits = sluicegate_proto::Limits {
        max_header_bytes: 1 << 20,
        ..Default::default()
    };
    let (head, _) = sluicegate_proto::h1::HeadParser::new()
        .parse(&wire, &limits)
        .unwrap()
        .unwrap();
    let e = Entry {
        head: &head,
        client: None,
        status: 200,
        body_bytes: 1,
        timings: Timings::default(),
        end: End::Ok,
        inline: None,
        extras: None,
    };
    for format in [Format::Json, Format::Combined] {
        let mut line = Vec::new();
        format.make_line_within(&mut line, &e, 1, 4096);
        let text = String::from_utf8(line).unwrap();
        assert!(text.len() <= 4096 && text.ends_with('\n'), "{}", text.len());
        assert!(
            text.contains("\\u0085...\"") || text.contains("\\x85...\""),
            "{text}"
        );
        assert!(
            text.contains("\"r\""),
            "short fields are kept whole: {text}"
        );
    }
    let mut short = Vec::new();
    Format::Json.make_line_within(&mut short, &e, 1, 1 << 20);
    assert!(short.len() > 100_000, "no cap when the line fits");
}

#[test]
fn numbers() {
    let mut v = Vec::new();
    push_num(&mut v, 0);
    v.push(b' ');
    push_num(&mut v, 1234567890123);
    assert_eq!(v, b"0 1234567890123");
}
