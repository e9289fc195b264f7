//! Deterministic robustness test: thousands of pseudo-random and mutated inputs through the
//! head parser and the body decoder, in plain `cargo test` (the fuzz targets in `fuzz/` do the
//! same open-endedly but need nightly). Each input must parse or be refused without panicking,
//! and whole, byte-by-byte and split feeding must agree (habit 6). A tiny xorshift keeps it
//! reproducible without a crate: a failure prints the case number to replay.

use crate::h1::{BodyDecoder, HeadParser};
use crate::testing::{feed_decoder, Fed};
use crate::{BodyFraming, Limits, ProtoError};

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        // xorshift64* (Vigna): good enough to drive mutations, and tiny.
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Bytes that matter to HTTP/1 framing, picked more often than others.
const INTERESTING: &[u8] = b"\r\n\r\n \t:;,=\"\\/?*#%0159aAfFgGxX\x00\x01\x7f\x80\xff-+_";

const HEAD_SEEDS: &[&[u8]] = &[
    b"GET / HTTP/1.1\r\nHost: h\r\n\r\n",
    b"\r\nGET /a%20b?x=1 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n",
    b"POST /f HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello",
    b"POST /f HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    b"GET http://h:80/p?q HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    b"OPTIONS * HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nX: caf\xe9\r\n\r\n",
    b"HEAD / HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 5\r\nConnection: close\r\n\r\n",
];

const CHUNKED_SEEDS: &[&[u8]] = &[
    b"5\r\nhello\r\n0\r\n\r\n",
    b"3;a=b\r\nabc\r\n2;q=\"x;y\"\r\nde\r\n0\r\nX-T: 1\r\n\r\n",
    b"A\r\n0123456789\r\n0;last\r\n\r\n",
    b"0\r\n\r\n",
];

fn mutate(rng: &mut XorShift, seed: &[u8], seeds: &[&[u8]]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let i = rng.below(v.len() + 1);
        let byte = if rng.below(3) == 0 {
            rng.next() as u8
        } else {
            INTERESTING[rng.below(INTERESTING.len())]
        };
        match rng.below(7) {
            0 if i < v.len() => v[i] = byte,
            1 => v.insert(i, byte),
            2 if i < v.len() => {
                v.remove(i);
            }
            3 => {
                let j = i + rng.below(v.len() + 1 - i);
                let copy = v[i..j].to_vec();
                v.splice(i..i, copy);
            }
            4 => v.truncate(i),
            5 => {
                let other = seeds[rng.below(seeds.len())];
                let k = rng.below(other.len());
                v.splice(i.., other[k..].iter().copied());
            }
            _ => {
                let digits = format!("{:x}", rng.next() >> rng.below(64));
                v.splice(i..i, digits.bytes());
            }
        }
    }
    v
}

fn random_bytes(rng: &mut XorShift, max_len: usize) -> Vec<u8> {
    (0..rng.below(max_len))
        .map(|_| INTERESTING[rng.below(INTERESTING.len())])
        .collect()
}

type HeadOutcome = Result<Option<(String, usize, BodyFraming)>, ProtoError>;

fn parse_once(p: &mut HeadParser, buf: &[u8], limits: &Limits) -> HeadOutcome {
    p.parse(buf, limits)
        .map(|o| o.map(|(h, n)| (format!("{h:?}"), n, h.body)))
}

/// Whole, byte by byte and with a pipelined request appended must agree. Returns the outcome.
fn check_head(input: &[u8], limits: &Limits, case: usize) -> HeadOutcome {
    let whole = parse_once(&mut HeadParser::new(), input, limits);
    let mut p = HeadParser::new();
    let mut trickled = Ok(None);
    for i in 0..=input.len() {
        trickled = parse_once(&mut p, &input[..i], limits);
        if !matches!(trickled, Ok(None)) {
            break;
        }
    }
    assert_eq!(
        trickled, whole,
        "case {case}: byte by byte, input {input:?}"
    );
    if !matches!(whole, Ok(None)) {
        let mut piped = input.to_vec();
        piped.extend_from_slice(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        let with_next = parse_once(&mut HeadParser::new(), &piped, limits);
        assert_eq!(
            with_next, whole,
            "case {case}: trailing bytes, input {input:?}"
        );
    }
    whole
}

type BodyOutcome = Fed;

fn decode_pieces(framing: BodyFraming, pieces: &[&[u8]]) -> BodyOutcome {
    feed_decoder(BodyDecoder::new(framing, 1 << 20, 512), pieces)
}

fn check_body(rng: &mut XorShift, framing: BodyFraming, input: &[u8], case: usize) {
    let whole = decode_pieces(framing, &[input]);
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(
        decode_pieces(framing, &bytes),
        whole,
        "case {case}: bytes, {input:?}"
    );
    let a = rng.below(input.len() + 1);
    let b = a + rng.below(input.len() + 1 - a);
    let split = decode_pieces(framing, &[&input[..a], &input[a..b], &input[b..]]);
    assert_eq!(split, whole, "case {case}: split at {a},{b}, {input:?}");
}

#[test]
fn random_and_mutated_inputs_never_panic_and_feeding_modes_agree() {
    let mut rng = XorShift(0x5eed_1e55_c0ff_ee00);
    let small = Limits {
        max_request_line: 24,
        max_header_bytes: 64,
        max_headers: 3,
        max_body: 100,
        max_field_bytes: usize::MAX,
    };
    let mut outcomes = [0usize; 3]; // need more, head, refused
    for case in 0..10_000 {
        let input = if case % 5 == 4 {
            random_bytes(&mut rng, 80)
        } else {
            let seed = HEAD_SEEDS[rng.below(HEAD_SEEDS.len())];
            mutate(&mut rng, seed, HEAD_SEEDS)
        };
        let limits = if case % 3 == 0 {
            small
        } else {
            Limits::default()
        };
        match check_head(&input, &limits, case) {
            Ok(None) => outcomes[0] += 1,
            Ok(Some((_, n, framing))) => {
                outcomes[1] += 1;
                check_body(&mut rng, framing, &input[n..], case);
            }
            Err(_) => outcomes[2] += 1,
        }
    }
    // The mutations must reach all three outcomes, or this test tests little.
    assert!(outcomes.iter().all(|&n| n > 500), "{outcomes:?}");

    let mut done = 0;
    for case in 0..10_000 {
        let input = if case % 5 == 4 {
            random_bytes(&mut rng, 40)
        } else {
            let seed = CHUNKED_SEEDS[rng.below(CHUNKED_SEEDS.len())];
            mutate(&mut rng, seed, CHUNKED_SEEDS)
        };
        check_body(&mut rng, BodyFraming::Chunked, &input, case);
        done += usize::from(matches!(
            decode_pieces(BodyFraming::Chunked, &[&input]),
            Ok((_, _, true))
        ));
        let length = BodyFraming::Length(rng.below(64) as u64 + 1);
        check_body(&mut rng, length, &input, case);
    }
    assert!(done > 500, "{done} complete chunked bodies");
}
