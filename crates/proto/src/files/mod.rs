//! Static files, the decisions half: which file a request names, which representation to send,
//! conditional requests, Range, and the response head. Everything here is pure (no syscalls):
//! the I/O layer opens, `fstat`s and `sendfile`s, and hands this module plain metadata, so every
//! security and RFC 9110 rule can be tested on byte strings in milliseconds.
//!
//! # The contract with the I/O layer
//!
//! 1. [`resolve`]`(prefix, req.path(), &opts)` for each mount (longest prefix first):
//!    - [`Resolved::NotMounted`]: not this mount; try the next one, then the app.
//!    - [`Resolved::Refused`]: answer [`plan_not_found`] (or, with `--static-fallthrough`,
//!      hand the request to the app: the static handler has touched no file).
//!    - [`Resolved::File`]: a relative path of validated segments.
//! 2. Open [`ResolvedPath::segments`] under the mount's directory fd, never by joining strings
//!    into an absolute path. What this module **cannot** check and the I/O layer **must**:
//!    - *Symlinks*: a segment may be a symlink that leaves the mount. Use
//!      `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` (symlinks inside the mount work,
//!      escapes fail with EXDEV), or `O_NOFOLLOW` per segment (no symlinks at all); only an
//!      explicit option may allow symlinks out of the mount. The dotfile rule sees only the
//!      names in the URL, not symlink targets.
//!    - *File type*: the final object must be a regular file (`S_ISREG` on the fd's `fstat`).
//!      A directory named without the trailing slash (e.g. `/static/docs`) gets a 301 to
//!      `/static/docs/` (as nginx does; relative links in its index then work), never a listing;
//!      a FIFO or device is 404 (opening a FIFO would block the loop: open with `O_NONBLOCK`).
//!    - *Errors*: ENOENT, ENOTDIR, ELOOP, EXDEV, EACCES, ENAMETOOLONG → [`plan_not_found`] (or
//!      the app with fallthrough). Never a 5xx or an error text that reveals the file system.
//! 3. Precompressed siblings: in the same directory, `file_name + Encoding::file_suffix()`
//!    (`x.js.br`, `x.js.gz`), same rules (regular file, no symlink escape); a sibling that is
//!    missing or not regular is absent. The original must exist: a lone `x.js.gz` serves nothing
//!    for `x.js`. Fill [`Representations`] from `fstat` of the fds you will send from (stat then
//!    open would let a file be swapped in between; if you do stat first, compare size, mtime and
//!    inode after opening and plan again on a mismatch).
//! 4. [`plan`] returns a [`StaticPlan`]: a protocol-neutral answer (`crate::answer`: status,
//!    fields, length; for 405/412/416 a short text body) for the protocol to frame
//!    (HTTP/1.1: `h1::response::encode_answer`, which also says whether the connection stays
//!    open), and, when its body is an `AnswerBody::File` range, which representation's file to
//!    send it from. The head promised exactly `len` bytes: if the file shrank and `sendfile`
//!    hits EOF early, close the connection.
//!
//! # Decisions (where RFC 9110 or the issue left a choice)
//!
//! - **Every refusal is 404**, never 403: `..`, encoded separators, NUL, dotfiles and a
//!   directory without an index all look like a missing file, so a client cannot probe which
//!   rule fired or whether a hidden file exists. [`Refusal`] keeps the reason for the log.
//! - **Several ranges → full 200** (RFC 9110 §14.2: a server MAY ignore Range), never
//!   multipart/byteranges: one code path, one `sendfile`, and no range-abuse amplification.
//!   Exactly one satisfiable range → 206; none → 416.
//! - **Nothing acceptable in Accept-Encoding → identity** rather than 406.
//! - **Zero-length files ignore Range** (200): no byte range of an empty file can be shown in a
//!   Content-Range.
//! - **A request with a body is answered with `Connection: close`**: the static path never reads
//!   request bodies, so the connection cannot be reused after one.

mod conditional;
mod fields;
mod mime;
mod mount;
mod negotiate;
mod plan;
mod range;
mod resolve;
mod validators;

pub use crate::answer::ServerFields;
pub use mime::{content_type, DEFAULT_CONTENT_TYPE};
pub use mount::{MountOptions, IMMUTABLE_DEFAULT_MAX_AGE};
pub use negotiate::{choose_encoding, Encoding};
pub use plan::{
    plan, plan_not_found, plan_redirect_to_slash, BodyRange, PlanScratch, Representations,
    StaticPlan,
};
pub use range::{evaluate_range, RangeDecision, MAX_RANGES};
pub use resolve::{
    resolve, Refusal, Resolved, ResolvedPath, MAX_PATH_BYTES, MAX_PATH_SEGMENTS, MAX_SEGMENT_BYTES,
};
pub use validators::{ETag, FileMeta};

/// A small fixed-capacity byte buffer for header values built per request (ETag,
/// Content-Range, Cache-Control), so that planning a response allocates only its output.
#[derive(Clone, Copy)]
struct StackBuf<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> StackBuf<N> {
    fn new() -> Self {
        StackBuf {
            buf: [0; N],
            len: 0,
        }
    }
    /// Append `bytes`. Callers size `N` for their longest value; exceeding it is a bug.
    fn push(&mut self, bytes: &[u8]) {
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }
    fn push_dec(&mut self, n: u64) {
        let mut digits = [0u8; crate::token::U64_DEC_LEN];
        self.push(crate::token::u64_to_dec(n, &mut digits));
    }
    /// Lowercase hex, no leading zeros ("0" for 0).
    fn push_hex(&mut self, n: u64) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let digits = ((u64::BITS - n.leading_zeros()).div_ceil(4)).max(1) as usize;
        for i in (0..digits).rev() {
            self.push(&[HEX[((n >> (4 * i)) & 0xf) as usize]]);
        }
    }
    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl<const N: usize> std::fmt::Debug for StackBuf<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

impl<const N: usize> PartialEq for StackBuf<N> {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}
impl<const N: usize> Eq for StackBuf<N> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::AnswerBody;
    use crate::date::format_http_date;

    /// xorshift64* (Vigna), as in `robustness.rs` (private there): reproducible inputs, no crate.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n as u64) as usize
        }
        /// A string of `max_parts` pieces drawn from `pieces`.
        fn compose(&mut self, pieces: &[&str], max_parts: usize) -> String {
            (0..self.below(max_parts + 1))
                .map(|_| pieces[self.below(pieces.len())])
                .collect()
        }
    }

    /// Random paths from traversal-prone pieces: whatever resolves satisfies every invariant
    /// the I/O layer relies on.
    #[test]
    fn resolved_paths_always_stay_inside_the_mount() {
        const PIECES: &[&str] = &[
            "/",
            "//",
            ".",
            "..",
            "%2e",
            "%2E",
            "%2f",
            "%2F",
            "%5c",
            "\\",
            "%00",
            "%25",
            "%",
            "a",
            "b.js",
            "%c0%ae",
            "%e2%80%a8",
            "\u{e9}",
            ";",
            "~",
            "%20",
            "%0a",
            "static",
        ];
        let mut rng = Rng(0x5eed_f11e);
        let (mut files, mut refused) = (0, 0);
        for case in 0..20_000 {
            let path = format!("/static{}", rng.compose(PIECES, 8));
            let opts = MountOptions {
                allow_dotfiles: case % 2 == 0,
                index: (case % 3 != 0).then(|| b"index.html"[..].into()),
                ..Default::default()
            };
            match resolve(b"/static", path.as_bytes(), &opts) {
                Resolved::File(p) => {
                    files += 1;
                    for seg in p.segments() {
                        assert!(!seg.is_empty() && seg != b"." && seg != b"..", "{path:?}");
                        assert!(!seg.iter().any(|&b| b == b'\\' || b < 0x20 || b == 0x7f));
                        assert!(std::str::from_utf8(seg).is_ok(), "{path:?}");
                        assert!(opts.allow_dotfiles || seg[0] != b'.', "{path:?}");
                    }
                    assert!(!p.as_bytes().starts_with(b"/") && !p.as_bytes().ends_with(b"/"));
                }
                Resolved::Refused(r) => {
                    refused += 1;
                    assert_eq!(r.status(), 404);
                }
                Resolved::NotMounted => assert!(!path[7..].starts_with('/') && path.len() > 7),
            }
        }
        assert!(files > 1_000 && refused > 1_000, "{files} {refused}");
    }

    /// The fields and the pieces of values `random_requests_plan_within_bounds` composes.
    const FIELDS: &[&str] = &[
        "Range: bytes=",
        "Range: ",
        "If-Range: ",
        "If-Match: ",
        "If-None-Match: ",
        "If-Modified-Since: ",
        "If-Unmodified-Since: ",
        "Accept-Encoding: ",
    ];
    const VALUES: &[&str] = &[
        "0",
        "1",
        "5",
        "99",
        "-",
        ",",
        " ",
        "=",
        "\"",
        "W/",
        "*",
        "\"6553f100.0-64-7\"",
        "br",
        "gzip",
        ";q=0",
        ";q=0.5",
        "identity",
        "Tue, 14 Nov 2023 22:13:20 GMT",
        "bytes",
        "18446744073709551616",
        "500-",
        "0-9",
    ];

    /// Random request fields through the whole plan: never a panic, the body always inside
    /// the chosen representation, no body for HEAD, and the head always one complete head.
    #[test]
    fn random_requests_plan_within_bounds() {
        let mut rng = Rng(0x00de_c1de);
        let mut seen = std::collections::BTreeSet::new();
        let date = format_http_date(1_700_000_100);
        let server = ServerFields {
            date: &date,
            server: b"s",
            extra: b"",
        };
        let meta = |size| FileMeta {
            size,
            mtime_secs: 1_700_000_000,
            mtime_nanos: 0,
            inode: 7,
        };
        for _ in 0..5_000 {
            let method = ["GET", "HEAD", "POST"][rng.below(3)];
            let mut raw = format!("{method} /a.js HTTP/1.1\r\nHost: h\r\n");
            for _ in 0..rng.below(4) {
                raw.push_str(FIELDS[rng.below(FIELDS.len())]);
                raw.push_str(rng.compose(VALUES, 6).trim());
                raw.push_str("\r\n");
            }
            raw.push_str("\r\n");
            let limits = crate::Limits::default();
            let Ok(Some((req, _))) = crate::h1::HeadParser::new().parse(raw.as_bytes(), &limits)
            else {
                continue;
            };
            let reps = Representations {
                identity: meta(rng.below(200) as u64),
                br: (rng.below(2) == 0).then(|| meta(rng.below(50) as u64)),
                gzip: (rng.below(2) == 0).then(|| meta(rng.below(50) as u64)),
            };
            let mut out = Vec::new();
            let mut scratch = PlanScratch::default();
            let plan = plan(
                &req,
                b"a.js",
                &reps,
                &MountOptions::default(),
                &date,
                &mut scratch,
            );
            crate::h1::response::encode_answer(&req, &plan.answer, &server, &mut out);
            let head_end = out
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .expect("a head");
            assert!(out.starts_with(b"HTTP/1.1 "));
            seen.insert(plan.answer.status);
            let size = reps.meta(plan.encoding).size;
            if let AnswerBody::File { range: b, encoding } = plan.answer.body {
                assert!(
                    method == "GET" && b.len > 0 && b.offset + b.len <= size,
                    "{raw:?}"
                );
                assert_eq!(encoding, plan.encoding);
                assert!(matches!(plan.answer.status, 200 | 206));
            }
            if method == "HEAD" {
                assert_eq!(head_end + 4, out.len(), "HEAD: nothing after the head");
            }
        }
        let all = [200, 206, 304, 405, 412, 416];
        assert_eq!(
            seen.into_iter().collect::<Vec<_>>(),
            all,
            "every outcome reached"
        );
    }

    #[test]
    fn random_range_fields_never_exceed_the_file() {
        const PIECES: &[&str] = &["bytes=", "0", "1", "9", "-", ",", " ", "\t", "=", "x"];
        let mut rng = Rng(0x00a1_10c8);
        for _ in 0..20_000 {
            let value = rng.compose(PIECES, 10);
            let size = rng.below(20) as u64;
            if let RangeDecision::Partial { offset, len } = evaluate_range(value.as_bytes(), size) {
                assert!(len > 0 && offset + len <= size, "{value:?} on {size}");
            }
        }
    }

    #[test]
    fn stack_buf_formats_decimal_and_hex() {
        let mut b = StackBuf::<64>::new();
        b.push(b"x");
        b.push_dec(0);
        b.push_hex(0);
        b.push(b"-");
        b.push_hex(0xdead_beef);
        b.push(b"-");
        b.push_hex(u64::MAX);
        b.push(b"-");
        b.push_dec(u64::MAX);
        assert_eq!(
            b.as_bytes(),
            b"x00-deadbeef-ffffffffffffffff-18446744073709551615"
        );
    }
}
