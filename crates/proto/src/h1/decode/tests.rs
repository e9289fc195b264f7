//! The request body decoder's tests: Content-Length and chunked bodies fed whole and byte by
//! byte, chunk extensions and trailers, and every refusal.

use super::*;
use crate::testing::feed_decoder;
use crate::ProtoError::*;

/// A pipelined request after the body: must never be consumed.
const NEXT: &[u8] = b"GET /next HTTP/1.1\r\nHost: n\r\n\r\n";
const MAX_TRAILER: usize = 256;

/// (body data, bytes consumed, done)
type Out = Result<(Vec<u8>, usize, bool), ProtoError>;

/// Play the I/O layer (the crate's one feeding helper, shared with the fuzz targets).
fn feed(framing: BodyFraming, max_body: u64, pieces: &[&[u8]]) -> Out {
    feed_decoder(BodyDecoder::new(framing, max_body, MAX_TRAILER), pieces)
}

/// Decode `input` whole, one byte per feed, split in two at every offset, and followed by
/// a pipelined request; all must agree. Returns the whole-input outcome.
fn decode3(framing: BodyFraming, max_body: u64, input: &[u8]) -> Out {
    let whole = feed(framing, max_body, &[input]);
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(feed(framing, max_body, &bytes), whole, "byte by byte");
    for k in 0..=input.len() {
        let split = feed(framing, max_body, &[&input[..k], &input[k..]]);
        assert_eq!(split, whole, "split at {k}");
    }
    let mut piped = input.to_vec();
    piped.extend_from_slice(NEXT);
    let with_next = feed(framing, max_body, &[&piped]);
    match (&whole, &with_next) {
        (Ok((_, _, true)), _) | (Err(_), _) => assert_eq!(with_next, whole, "with trailing"),
        // An incomplete body simply goes on into the appended bytes.
        (Ok((_, _, false)), _) => {}
    }
    whole
}

/// A complete chunked body: its data. Must consume exactly `input`.
fn chunked(input: impl AsRef<[u8]>) -> Vec<u8> {
    let input = input.as_ref();
    match decode3(BodyFraming::Chunked, 1 << 20, input) {
        Ok((data, consumed, true)) => {
            assert_eq!(consumed, input.len());
            data
        }
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(input)),
    }
}
/// A refused chunked body: the error.
fn chunked_err(input: impl AsRef<[u8]>) -> ProtoError {
    chunked_err_max(input, 1 << 20)
}
fn chunked_err_max(input: impl AsRef<[u8]>, max_body: u64) -> ProtoError {
    let input = input.as_ref();
    match decode3(BodyFraming::Chunked, max_body, input) {
        Err(e) => e,
        other => panic!(
            "{:?}: expected an error, got {other:?}",
            String::from_utf8_lossy(input)
        ),
    }
}

#[test]
fn no_body_is_done_at_once() {
    for framing in [BodyFraming::None, BodyFraming::Length(0)] {
        let mut d = BodyDecoder::new(framing, 10, 10);
        assert!(d.is_done());
        assert_eq!((d.remaining(), d.received()), (Some(0), 0));
        assert_eq!(
            d.decode(NEXT),
            Ok(DecodeStep {
                consumed: 0,
                data: &[],
                done: true
            })
        );
    }
}

#[test]
fn content_length_bodies() {
    assert_eq!(
        decode3(BodyFraming::Length(5), 0, b"hello"),
        Ok((b"hello".to_vec(), 5, true))
    );
    assert_eq!(
        decode3(BodyFraming::Length(5), 0, b"hel"),
        Ok((b"hel".to_vec(), 3, false))
    );
    assert_eq!(
        decode3(BodyFraming::Length(3), 0, b"\r\n\0"),
        Ok((b"\r\n\0".to_vec(), 3, true))
    );
    let mut d = BodyDecoder::new(BodyFraming::Length(5), 0, 0);
    assert_eq!(d.remaining(), Some(5));
    assert_eq!(
        d.decode(b"he").unwrap(),
        DecodeStep {
            consumed: 2,
            data: b"he",
            done: false
        }
    );
    assert_eq!((d.remaining(), d.received()), (Some(3), 2));
    assert_eq!(
        d.decode(b"").unwrap(),
        DecodeStep {
            consumed: 0,
            data: b"",
            done: false
        }
    );
    assert_eq!(
        d.decode(b"lloGET").unwrap(),
        DecodeStep {
            consumed: 3,
            data: b"llo",
            done: true
        }
    );
    assert_eq!(
        (d.remaining(), d.received(), d.is_done()),
        (Some(0), 5, true)
    );
    assert_eq!(
        d.decode(b"GET").unwrap(),
        DecodeStep {
            consumed: 0,
            data: b"",
            done: true
        }
    );
}

#[test]
fn chunked_bodies() {
    assert_eq!(chunked("5\r\nhello\r\n0\r\n\r\n"), b"hello");
    assert_eq!(chunked("0\r\n\r\n"), b"");
    assert_eq!(
        chunked("3\r\nabc\r\n2\r\nde\r\n1\r\n\n\r\n0\r\n\r\n"),
        b"abcde\n"
    );
    assert_eq!(
        chunked("A\r\n0123456789\r\na\r\n0123456789\r\n0\r\n\r\n"),
        b"01234567890123456789"
    );
    assert_eq!(chunked("005\r\nhello\r\n0000\r\n\r\n"), b"hello");
    assert_eq!(
        chunked("2\r\n\r\n\r\n0\r\n\r\n"),
        b"\r\n",
        "data is not framing"
    );
}

#[test]
fn chunk_extensions_are_accepted_and_discarded() {
    for ext in [
        ";foo",
        ";foo=bar",
        ";a;b=c;d",
        " ; foo = bar ; baz",
        "\t;\tfoo\t=\tbar",
        ";foo=\"quoted ; value = x\"",
        ";a=\"esc \\\" \\\\ q\"",
        ";a=\"obs \u{e9}\"",
        ";a=\"\" ;b",
        ";a=\"x\";b=\"y\"",
        ";!#$%&'*+-.^_`|~=!#$%&'*+-.^_`|~",
    ] {
        assert_eq!(
            chunked(format!("5{ext}\r\nhello\r\n0{ext}\r\n\r\n")),
            b"hello",
            "{ext:?}"
        );
    }
}

#[test]
fn trailers_are_accepted_and_discarded() {
    assert_eq!(
        chunked("1\r\nx\r\n0\r\nX-Sum: abc\r\nY:\r\nZ: \t a b\t\r\n\r\n"),
        b"x"
    );
    assert_eq!(chunked(b"0\r\nX: caf\xe9\r\n\r\n"), b"");
}

#[test]
fn invalid_chunk_sizes_are_400() {
    for size in [
        "z", "5_0", "0x5", "", " 5", "5 ", "-5", "+5", ";a", "5\t", "g", "5z",
    ] {
        let e = chunked_err(format!("{size}\r\nhello\r\n0\r\n\r\n"));
        assert_eq!(e.status(), 400, "{size:?}");
    }
    // 2^64 overflows u64: malformed (400), whatever the body limit.
    assert_eq!(
        chunked_err_max("10000000000000000\r\n", u64::MAX).status(),
        400
    );
    assert_eq!(chunked_err("10000000000000000\r\n").status(), 400);
    assert_eq!(chunked_err("ffffffffffffffffff\r\n").status(), 400);
}

#[test]
fn size_line_length_is_bounded() {
    let ext = format!("1;{}", "a".repeat(MAX_CHUNK_SIZE_LINE - 2));
    assert_eq!(chunked(format!("{ext}\r\nx\r\n0\r\n\r\n")), b"x");
    let e = chunked_err(format!("{ext}a\r\nx\r\n0\r\n\r\n"));
    assert_eq!(e.status(), 400);
    let zeros = "0".repeat(MAX_CHUNK_SIZE_LINE + 1);
    assert_eq!(chunked_err(format!("{zeros}1\r\nx\r\n")).status(), 400);
}

#[test]
fn malformed_extensions_are_400() {
    for ext in [
        ";",
        ";=b",
        ";a=",
        ";a=\"open",
        ";a b",
        ";a=b c",
        ";a=\"x\"y",
        ";a=\x01",
        ";a\x01",
        ";a=\"\x00\"",
        ";a=b\x7f",
        ";a=\"\\\x01\"",
        ";(a)",
        ";a=(b)",
        ";a=\"x\" ",
        ";a ",
    ] {
        let e = chunked_err(format!("5{ext}\r\nhello\r\n0\r\n\r\n"));
        assert_eq!(e.status(), 400, "{ext:?}");
    }
}

#[test]
fn missing_or_bare_line_ends_are_400() {
    for input in [
        "5\r\nhelloX\r\n0\r\n\r\n",
        "5\r\nhello\n0\r\n\r\n",
        "5\r\nhello\rX0\r\n\r\n",
        "5\r\nhello0\r\n\r\n",
        "5\nhello\r\n0\r\n\r\n",
        "5\rhello\r\n0\r\n\r\n",
        "5\r\nhello\r\n0\n\r\n",
        "5\r\nhello\r\n0\r\n\n",
        "5\r\nhello\r\n0\r\n\rX",
        "5;a\nhello\r\n0\r\n\r\n",
        "5;a=\"b\"\nhello\r\n0\r\n\r\n",
    ] {
        assert_eq!(chunked_err(input).status(), 400, "{input:?}");
    }
}

#[test]
fn malformed_trailers_are_400() {
    for trailer in [
        "X: a\r\n b\r\n",
        "X: a\r\n\tb\r\n",
        ": a\r\n",
        "X : a\r\n",
        "X\t: a\r\n",
        "X: a\0\r\n",
        "X: a\x7f\r\n",
        "X: a\x1b\r\n",
        "X: a\n",
        "X: a\rb\r\n",
        "XYZ\r\n",
        "X(y): a\r\n",
        " X: a\r\n",
    ] {
        let e = chunked_err(format!("0\r\n{trailer}\r\n"));
        assert_eq!(e.status(), 400, "{trailer:?}");
    }
}

#[test]
fn trailer_section_is_bounded() {
    let fits = format!("0\r\nX: {}\r\n\r\n", "a".repeat(MAX_TRAILER - 5));
    assert_eq!(chunked(&fits), b"");
    let over = format!("0\r\nX: {}\r\n\r\n", "a".repeat(MAX_TRAILER - 4));
    assert_eq!(chunked_err(over), HeadersTooLarge);

    let three = b"0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
    let mut d = BodyDecoder::new(BodyFraming::Chunked, 100, 100).with_max_trailer_fields(3);
    assert!(d.decode(three).unwrap().done);
    let mut d = BodyDecoder::new(BodyFraming::Chunked, 100, 100).with_max_trailer_fields(2);
    assert_eq!(d.decode(three), Err(HeadersTooLarge));
}

#[test]
fn max_body_is_413_as_soon_as_the_declared_sizes_exceed_it() {
    assert_eq!(
        decode3(BodyFraming::Chunked, 5, b"5\r\nhello\r\n0\r\n\r\n"),
        Ok((b"hello".to_vec(), 15, true))
    );
    assert_eq!(
        chunked_err_max("6\r\nhello!\r\n0\r\n\r\n", 5),
        PayloadTooLarge
    );
    assert_eq!(
        chunked_err_max("3\r\nabc\r\n3\r\nabc\r\n", 5),
        PayloadTooLarge
    );
    // Refused at the size line, before any of the chunk's data arrives.
    let mut d = BodyDecoder::new(BodyFraming::Chunked, 1 << 30, 0);
    assert_eq!(d.decode(b"40000001\r\n"), Err(PayloadTooLarge));
}

#[test]
fn state_is_kept_across_feeds() {
    let mut d = BodyDecoder::new(BodyFraming::Chunked, 100, 100);
    assert_eq!(d.remaining(), None);
    assert_eq!(
        d.decode(b"1").unwrap(),
        DecodeStep {
            consumed: 1,
            data: b"",
            done: false
        }
    );
    assert_eq!(d.decode(b"0;x=\"a").unwrap().consumed, 6);
    assert_eq!(d.decode(b"\"\r\n").unwrap().consumed, 3);
    let step = d.decode(b"0123456789abcdefXYZ").unwrap();
    assert_eq!(
        step,
        DecodeStep {
            consumed: 16,
            data: b"0123456789abcdef",
            done: false
        }
    );
    assert_eq!(d.received(), 16);
    assert_eq!(
        d.decode(b"\r\n0\r\n\r\nGET").unwrap(),
        DecodeStep {
            consumed: 7,
            data: b"",
            done: true
        }
    );
    assert!(d.is_done());
    assert_eq!(d.remaining(), None);
}

#[test]
fn errors_are_sticky() {
    let mut d = BodyDecoder::new(BodyFraming::Chunked, 100, 100);
    assert_eq!(d.decode(b"zz"), Err(BadRequest("invalid chunk size")));
    assert_eq!(
        d.decode(b"5\r\nhello\r\n0\r\n\r\n"),
        Err(BadRequest("invalid chunk size"))
    );
    assert!(!d.is_done());
    let mut d = BodyDecoder::new(BodyFraming::Chunked, 4, 100);
    assert_eq!(d.decode(b"5\r"), Err(PayloadTooLarge));
    assert_eq!(d.decode(b"\nhello"), Err(PayloadTooLarge));
}

#[test]
fn one_step_returns_at_most_one_chunk_of_data() {
    let input = b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
    let mut d = BodyDecoder::new(BodyFraming::Chunked, 100, 100);
    let s1 = d.decode(input).unwrap();
    assert_eq!((s1.consumed, s1.data), (6, &b"abc"[..]));
    let s2 = d.decode(&input[6..]).unwrap();
    assert_eq!((s2.consumed, s2.data), (7, &b"de"[..]));
    let s3 = d.decode(&input[13..]).unwrap();
    assert_eq!((s3.consumed, s3.data, s3.done), (7, &b""[..], true));
}
