//! Request path → a relative path under a mount, or a refusal. This is the security boundary of
//! static serving: everything that could name a file outside the mount (`..`, encoded dots and
//! slashes, backslashes, NUL) is refused here, on bytes, before any syscall.
//!
//! The raw (still percent-encoded) path is split on `/` *first* and each segment is decoded
//! *once* afterwards, so an encoded `/` can never create a segment boundary, and
//! `%252e%252e` stays the literal name `%2e%2e` (it is never decoded a second time, by us or
//! by the file system). Symlinks and file types are the I/O layer's (see the module docs in
//! `files/mod.rs`).

use crate::path::percent_decode;

use super::MountOptions;

/// Longest raw request path (prefix included) a mount accepts, bytes: Linux's PATH_MAX. No real
/// asset path is longer; refusing early bounds the decoding work per request.
pub const MAX_PATH_BYTES: usize = 4096;
/// Most segments after the prefix (empty ones not counted): bounds the `openat` walk the I/O
/// layer does per request.
pub const MAX_PATH_SEGMENTS: usize = 64;
/// Longest decoded segment, bytes: Linux's NAME_MAX (the kernel would refuse it anyway).
pub const MAX_SEGMENT_BYTES: usize = 255;

/// Outcome of [`resolve`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// The path is not under this mount's prefix (try the next mount, or the app).
    NotMounted,
    /// Under the mount, but no file may be served for it: answer 404 (see [`Refusal`]).
    Refused(Refusal),
    /// A relative path to open under the mount's directory.
    File(ResolvedPath),
}

/// Why a path under a mount was refused. Every refusal is answered 404, never 403, so a
/// client cannot tell which rule fired or whether a hidden file exists; the reason is for the
/// log. With `--static-fallthrough` the request may go to the app instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A `.` or `..` segment, raw or encoded (`%2e%2e`, `.%2E`).
    DotSegment,
    /// A path separator inside a segment: `%2f`, a raw or encoded (`%5c`) backslash.
    Separator,
    /// NUL or another control byte (0x00-0x1F, 0x7F), raw or encoded.
    ControlByte,
    /// A segment that is not valid UTF-8 after decoding (this also refuses overlong forms such
    /// as `%c0%ae` that some decoders turn into `.`). Asset names are UTF-8 in practice.
    InvalidUtf8,
    /// A dotfile or dot-directory (`.git`, `.env`) while `allow_dotfiles` is off.
    Hidden,
    /// Longer than [`MAX_PATH_BYTES`], more than [`MAX_PATH_SEGMENTS`] segments, or a segment
    /// longer than [`MAX_SEGMENT_BYTES`].
    TooLong,
    /// A path ending in `/` (a directory) and the mount has no index file.
    DirectoryWithoutIndex,
}

impl Refusal {
    /// Always 404 (see the type's docs).
    pub fn status(&self) -> u16 {
        404
    }
    /// A short description for the log.
    pub fn detail(&self) -> &'static str {
        match self {
            Refusal::DotSegment => "dot segment in static path",
            Refusal::Separator => "encoded slash or backslash in static path",
            Refusal::ControlByte => "control byte in static path",
            Refusal::InvalidUtf8 => "static path is not UTF-8",
            Refusal::Hidden => "dotfile in static path",
            Refusal::TooLong => "static path too long",
            Refusal::DirectoryWithoutIndex => "directory without index file",
        }
    }
}

/// A validated path relative to the mount's directory: one or more segments, each non-empty,
/// decoded, UTF-8, without `/`, `\`, control bytes, and not `.` or `..`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// Segments joined with `/`; no leading or trailing `/`; never empty.
    rel: Vec<u8>,
    /// The URL named a directory (it ended in `/`, or was the mount prefix itself) and the last
    /// segment is the mount's index file name.
    pub wants_directory: bool,
}

impl ResolvedPath {
    /// The relative path, segments joined with `/` (for logs; open it with [`Self::segments`]).
    pub fn as_bytes(&self) -> &[u8] {
        &self.rel
    }
    /// The segments, in order, to open one by one under the mount's directory fd.
    pub fn segments(&self) -> impl Iterator<Item = &[u8]> {
        self.rel.split(|&b| b == b'/')
    }
    /// The last segment: the file's name (content type and sibling names derive from it).
    pub fn file_name(&self) -> &[u8] {
        let start = memchr::memrchr(b'/', &self.rel).map_or(0, |i| i + 1);
        &self.rel[start..]
    }
}

/// Map the raw request path (percent-encoded, no query) to a file under the mount `prefix`.
///
/// `prefix` is compared byte for byte with the raw path, at a segment boundary: `/static`
/// matches `/static`, `/static/` and `/static/x`, not `/staticfoo` nor `/st%61tic/x`. A
/// trailing `/` on the prefix is ignored, so `/` mounts everything. Empty segments are
/// collapsed (`a//b` is `a/b`). See [`Refusal`] for what is refused.
pub fn resolve(prefix: &[u8], raw_path: &[u8], opts: &MountOptions) -> Resolved {
    let prefix = trim_trailing_slashes(prefix);
    if raw_path.first() != Some(&b'/') {
        return Resolved::NotMounted; // "*" or anything else that is no origin-form path
    }
    let rest = match raw_path.strip_prefix(prefix) {
        Some(rest) if rest.is_empty() || rest[0] == b'/' => rest,
        _ => return Resolved::NotMounted,
    };
    if raw_path.len() > MAX_PATH_BYTES {
        return Resolved::Refused(Refusal::TooLong);
    }
    match relative_path(rest, opts) {
        Ok(path) => Resolved::File(path),
        Err(refusal) => Resolved::Refused(refusal),
    }
}

fn trim_trailing_slashes(mut prefix: &[u8]) -> &[u8] {
    while let [head @ .., b'/'] = prefix {
        prefix = head;
    }
    prefix
}

fn relative_path(rest: &[u8], opts: &MountOptions) -> Result<ResolvedPath, Refusal> {
    let mut rel = Vec::with_capacity(rest.len() + 16);
    let mut segments = 0;
    for raw in rest.split(|&b| b == b'/').filter(|s| !s.is_empty()) {
        segments += 1;
        if segments > MAX_PATH_SEGMENTS {
            return Err(Refusal::TooLong);
        }
        // Decoded once, after splitting: `%2f` cannot add a boundary and is caught below.
        let seg = percent_decode(raw);
        check_segment(&seg, opts.allow_dotfiles)?;
        if !rel.is_empty() {
            rel.push(b'/');
        }
        rel.extend_from_slice(&seg);
    }
    let wants_directory = rel.is_empty() || rest.ends_with(b"/");
    if wants_directory {
        let index = opts
            .index
            .as_deref()
            .ok_or(Refusal::DirectoryWithoutIndex)?;
        // validate() checks this at startup; a bad name here still serves nothing.
        if index.is_empty() || check_segment(index, opts.allow_dotfiles).is_err() {
            return Err(Refusal::DirectoryWithoutIndex);
        }
        if !rel.is_empty() {
            rel.push(b'/');
        }
        rel.extend_from_slice(index);
    }
    Ok(ResolvedPath {
        rel,
        wants_directory,
    })
}

/// Check one decoded, non-empty segment.
pub(super) fn check_segment(seg: &[u8], allow_dotfiles: bool) -> Result<(), Refusal> {
    if seg.len() > MAX_SEGMENT_BYTES {
        return Err(Refusal::TooLong);
    }
    if seg == b"." || seg == b".." {
        return Err(Refusal::DotSegment);
    }
    for &b in seg {
        match b {
            b'/' | b'\\' => return Err(Refusal::Separator),
            0x00..=0x1f | 0x7f => return Err(Refusal::ControlByte),
            _ => {}
        }
    }
    if seg.first() == Some(&b'.') && !allow_dotfiles {
        return Err(Refusal::Hidden);
    }
    if std::str::from_utf8(seg).is_err() {
        return Err(Refusal::InvalidUtf8);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> MountOptions {
        MountOptions {
            index: Some(b"index.html"[..].into()),
            ..Default::default()
        }
    }

    fn res(path: &str) -> Resolved {
        resolve(b"/static", path.as_bytes(), &opts())
    }

    /// The relative path a request resolves to (panics if refused).
    fn file(path: &str) -> String {
        match res(path) {
            Resolved::File(p) => String::from_utf8(p.as_bytes().to_vec()).unwrap(),
            other => panic!("{path:?}: expected a file, got {other:?}"),
        }
    }

    fn refused(path: &[u8]) -> Refusal {
        match resolve(b"/static", path, &opts()) {
            Resolved::Refused(r) => {
                assert_eq!(r.status(), 404);
                r
            }
            other => panic!("{:?}: expected a refusal, got {other:?}", show(path)),
        }
    }

    fn show(b: &[u8]) -> String {
        String::from_utf8_lossy(b).into_owned()
    }

    #[test]
    fn plain_paths() {
        assert_eq!(file("/static/app.js"), "app.js");
        assert_eq!(file("/static/css/site.css"), "css/site.css");
        assert_eq!(file("/static/a%20b.txt"), "a b.txt");
        assert_eq!(file("/static/caf%C3%A9.png"), "café.png");
        assert_eq!(
            file("/static/100%"),
            "100%",
            "invalid escape kept literally"
        );
        assert_eq!(file("/static/a..b"), "a..b", "dots inside a name are fine");
        assert_eq!(
            file("/static/a."),
            "a.",
            "a trailing dot is part of a Linux name"
        );
        let Resolved::File(p) = res("/static/css/site.css") else {
            unreachable!()
        };
        assert_eq!(p.segments().collect::<Vec<_>>(), [&b"css"[..], b"site.css"]);
        assert_eq!(p.file_name(), b"site.css");
        assert!(!p.wants_directory);
    }

    #[test]
    fn prefix_matches_at_a_segment_boundary() {
        assert_eq!(res("/staticfoo"), Resolved::NotMounted);
        assert_eq!(res("/staticx/a.js"), Resolved::NotMounted);
        assert_eq!(res("/stati"), Resolved::NotMounted);
        assert_eq!(res("/other/static/a.js"), Resolved::NotMounted);
        assert_eq!(res("/st%61tic/a.js"), Resolved::NotMounted, "raw compare");
        assert_eq!(res("/STATIC/a.js"), Resolved::NotMounted, "case-sensitive");
        assert_eq!(res("*"), Resolved::NotMounted);
        assert_eq!(res(""), Resolved::NotMounted);
        assert_eq!(res("static/a.js"), Resolved::NotMounted);
        // A trailing slash on the prefix is ignored; "/" mounts everything.
        for prefix in [&b"/static/"[..], b"/static//"] {
            let got = resolve(prefix, b"/static/a.js", &opts());
            assert!(matches!(got, Resolved::File(_)), "{got:?}");
            assert_eq!(resolve(prefix, b"/staticx", &opts()), Resolved::NotMounted);
        }
        for prefix in [&b"/"[..], b""] {
            let Resolved::File(p) = resolve(prefix, b"/a/b.txt", &opts()) else {
                panic!("root mount")
            };
            assert_eq!(p.as_bytes(), b"a/b.txt");
        }
    }

    #[test]
    fn directories_get_the_index_or_nothing() {
        for dir in ["/static", "/static/", "/static//", "/static///"] {
            assert_eq!(file(dir), "index.html", "{dir}");
        }
        assert_eq!(file("/static/docs/"), "docs/index.html");
        assert_eq!(file("/static/docs//"), "docs/index.html");
        let Resolved::File(p) = res("/static/docs/") else {
            unreachable!()
        };
        assert!(p.wants_directory);
        assert_eq!(p.file_name(), b"index.html");

        let no_index = MountOptions::default();
        for dir in [&b"/static"[..], b"/static/", b"/static/docs/"] {
            assert_eq!(
                resolve(b"/static", dir, &no_index),
                Resolved::Refused(Refusal::DirectoryWithoutIndex)
            );
        }
        let bad_index = MountOptions {
            index: Some(b"../secret"[..].into()),
            ..Default::default()
        };
        assert_eq!(
            resolve(b"/static", b"/static/", &bad_index),
            Resolved::Refused(Refusal::DirectoryWithoutIndex)
        );
    }

    #[test]
    fn empty_segments_collapse() {
        assert_eq!(file("/static//a//b"), "a/b");
        assert_eq!(file("/static///etc/passwd"), "etc/passwd", "stays relative");
    }

    /// Every way of naming something outside the mount, or hidden inside it.
    #[test]
    fn traversal_vectors_are_refused() {
        use Refusal::*;
        let vectors: &[(&[u8], Refusal)] = &[
            // Raw dot segments.
            (b"/static/../etc/passwd", DotSegment),
            (b"/static/..", DotSegment),
            (b"/static/../", DotSegment),
            (b"/static/a/../../etc/passwd", DotSegment),
            (b"/static/a/..", DotSegment),
            (b"/static/./a.js", DotSegment),
            (b"/static/a/.", DotSegment),
            (b"/static/.", DotSegment),
            // Encoded dot segments, every case mix.
            (b"/static/%2e%2e/etc/passwd", DotSegment),
            (b"/static/%2E%2E/etc/passwd", DotSegment),
            (b"/static/%2E%2e/etc/passwd", DotSegment),
            (b"/static/.%2e/etc/passwd", DotSegment),
            (b"/static/%2e./etc/passwd", DotSegment),
            (b"/static/%2e/a.js", DotSegment),
            (b"/static/a/%2e%2e", DotSegment),
            (b"/static/%2e%2e%2f%2e%2e%2fetc%2fpasswd", Separator),
            // Encoded slashes.
            (b"/static/..%2fetc%2fpasswd", Separator),
            (b"/static/a%2fb", Separator),
            (b"/static/a%2Fb", Separator),
            (b"/static/%2f", Separator),
            (b"/static/%2F..%2F..%2Fetc", Separator),
            // Backslashes, raw and encoded.
            (b"/static/..\\..\\etc\\passwd", Separator),
            (b"/static/a\\b", Separator),
            (b"/static/..%5c..%5cetc", Separator),
            (b"/static/..%5Cetc", Separator),
            // NUL and other control bytes, raw and encoded.
            (b"/static/a.js%00.png", ControlByte),
            (b"/static/a.js\0.png", ControlByte),
            (b"/static/%00", ControlByte),
            (b"/static/a%0d%0aSet-Cookie:x", ControlByte),
            (b"/static/a%09b", ControlByte),
            (b"/static/a%7fb", ControlByte),
            (b"/static/a\x01b", ControlByte),
            // Overlong UTF-8 dots and slash (decoded to '.' or '/' by broken decoders).
            (b"/static/%c0%ae%c0%ae/etc/passwd", InvalidUtf8),
            (b"/static/%c0%af", InvalidUtf8),
            (b"/static/%e0%80%ae", InvalidUtf8),
            (b"/static/%ff", InvalidUtf8),
            (b"/static/a\xffb", InvalidUtf8),
            // Dotfiles and dot-directories.
            (b"/static/.env", Hidden),
            (b"/static/.git/config", Hidden),
            (b"/static/a/.htpasswd", Hidden),
            (b"/static/%2egit/config", Hidden),
            (b"/static/%2Eenv", Hidden),
            (b"/static/...", Hidden),
            (b"/static/..;/etc/passwd", Hidden),
            (b"/static/.%2e%2e", Hidden),
        ];
        for (path, want) in vectors {
            assert_eq!(refused(path), *want, "{:?}", show(path));
        }
        assert!(vectors.len() >= 30);
    }

    #[test]
    fn double_encoding_is_decoded_once() {
        // `%252e%252e` is the literal name `%2e%2e`: a harmless file name that never becomes
        // `..`, because nothing decodes it a second time.
        assert_eq!(file("/static/%252e%252e/etc/passwd"), "%2e%2e/etc/passwd");
        assert_eq!(file("/static/%252f"), "%2f");
        assert_eq!(file("/static/%255c"), "%5c");
        assert_eq!(file("/static/%2500"), "%00");
    }

    #[test]
    fn unicode_lookalikes_are_literal_names() {
        // Fullwidth full stop, one dot leader, division slash, fullwidth solidus: valid UTF-8,
        // no normalisation on Linux, so they are plain names, never `.`, `..` or `/`.
        assert_eq!(file("/static/%EF%BC%8E%EF%BC%8E/x"), "．．/x");
        assert_eq!(file("/static/%E2%80%A4%E2%80%A4/x"), "․․/x");
        assert_eq!(file("/static/a%E2%88%95b"), "a∕b");
        assert_eq!(file("/static/a%EF%BC%8Fb"), "a／b");
    }

    #[test]
    fn dotfiles_when_allowed() {
        let o = MountOptions {
            allow_dotfiles: true,
            ..opts()
        };
        let ok = |p: &[u8]| match resolve(b"/static", p, &o) {
            Resolved::File(p) => p.as_bytes().to_vec(),
            other => panic!("{:?}: {other:?}", show(p)),
        };
        assert_eq!(ok(b"/static/.well-known/acme"), b".well-known/acme");
        assert_eq!(ok(b"/static/%2eenv"), b".env");
        assert_eq!(ok(b"/static/..;"), b"..;", "a literal name on Linux");
        // `.` and `..` stay refused.
        for p in [&b"/static/.."[..], b"/static/%2e%2e/x", b"/static/./x"] {
            assert_eq!(
                resolve(b"/static", p, &o),
                Resolved::Refused(Refusal::DotSegment),
                "{:?}",
                show(p)
            );
        }
    }

    #[test]
    fn length_limits() {
        let at_limit = format!("/static/{}", "a".repeat(MAX_PATH_BYTES - 8));
        assert_eq!(at_limit.len(), MAX_PATH_BYTES);
        // Long but within bytes: refused by the segment length, not the path length.
        assert_eq!(refused(at_limit.as_bytes()), Refusal::TooLong);
        let over = format!("/static/{}", "a/".repeat(MAX_PATH_BYTES));
        assert_eq!(refused(over.as_bytes()), Refusal::TooLong);

        let seg = "s".repeat(MAX_SEGMENT_BYTES);
        assert_eq!(file(&format!("/static/{seg}")), seg);
        assert_eq!(
            refused(format!("/static/{seg}s").as_bytes()),
            Refusal::TooLong
        );
        // The limit is on the decoded segment.
        let encoded = "%61".repeat(MAX_SEGMENT_BYTES);
        assert_eq!(file(&format!("/static/{encoded}")), "a".repeat(255));

        let deep = "/d".repeat(MAX_PATH_SEGMENTS);
        assert_eq!(
            file(&format!("/static{deep}")).len(),
            2 * MAX_PATH_SEGMENTS - 1
        );
        assert_eq!(
            refused(format!("/static{deep}/d").as_bytes()),
            Refusal::TooLong
        );
        // Empty segments are not counted (but the byte limit still holds).
        assert_eq!(file(&format!("/static{}/a", "/".repeat(1000))), "a");
    }

    #[test]
    fn refusals_have_details() {
        use Refusal::*;
        for r in [
            DotSegment,
            Separator,
            ControlByte,
            InvalidUtf8,
            Hidden,
            TooLong,
            DirectoryWithoutIndex,
        ] {
            assert_eq!(r.status(), 404);
            assert!(!r.detail().is_empty());
        }
    }
}
