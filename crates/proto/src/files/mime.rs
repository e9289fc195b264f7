//! Content-Type from a file name's extension: a compact table of what web sites actually
//! serve, no mime database lookup at runtime. Text types carry `; charset=utf-8` (browsers
//! otherwise guess, and guess wrong for non-ASCII CSS and JS). Types whose format defines its
//! own encoding (JSON is always UTF-8, XML declares it) carry no charset.

/// For unknown extensions and names without one: the browser downloads rather than sniffs.
pub const DEFAULT_CONTENT_TYPE: &str = "application/octet-stream";

/// Longest extension in the table ("webmanifest"); longer ones are unknown without lookup.
const MAX_EXTENSION: usize = 11;

/// The Content-Type for a file name (the last path segment), by its extension, compared
/// case-insensitively. A leading dot is no extension (`.profile`); `x.tar.gz` is
/// `application/gzip` (the last extension wins). Precompressed siblings are typed by the
/// original's name, not `.gz`: the caller passes the name the client asked for.
pub fn content_type(file_name: &[u8]) -> &'static str {
    let ext = match memchr::memrchr(b'.', file_name) {
        Some(dot) if dot > 0 => &file_name[dot + 1..],
        _ => return DEFAULT_CONTENT_TYPE,
    };
    if ext.is_empty() || ext.len() > MAX_EXTENSION {
        return DEFAULT_CONTENT_TYPE;
    }
    let mut lower = [0u8; MAX_EXTENSION];
    for (dst, &b) in lower.iter_mut().zip(ext) {
        *dst = b.to_ascii_lowercase();
    }
    match &lower[..ext.len()] {
        // Text (charset added).
        b"html" | b"htm" => "text/html; charset=utf-8",
        b"css" => "text/css; charset=utf-8",
        b"js" | b"mjs" | b"cjs" => "text/javascript; charset=utf-8", // RFC 9239
        b"txt" | b"text" => "text/plain; charset=utf-8",
        b"csv" => "text/csv; charset=utf-8",
        b"md" | b"markdown" => "text/markdown; charset=utf-8",
        b"vtt" => "text/vtt; charset=utf-8",
        b"ics" => "text/calendar; charset=utf-8",
        // Structured text that defines its own encoding.
        b"json" | b"map" => "application/json",
        b"jsonld" => "application/ld+json",
        b"webmanifest" => "application/manifest+json",
        b"xml" => "application/xml",
        b"xhtml" => "application/xhtml+xml",
        b"rss" => "application/rss+xml",
        b"atom" => "application/atom+xml",
        b"yaml" | b"yml" => "application/yaml", // RFC 9512
        b"wasm" => "application/wasm",
        b"pdf" => "application/pdf",
        // Images.
        b"svg" | b"svgz" => "image/svg+xml",
        b"png" => "image/png",
        b"jpg" | b"jpeg" => "image/jpeg",
        b"gif" => "image/gif",
        b"webp" => "image/webp",
        b"avif" => "image/avif",
        b"ico" => "image/x-icon",
        b"bmp" => "image/bmp",
        b"tif" | b"tiff" => "image/tiff",
        // Fonts.
        b"woff" => "font/woff",
        b"woff2" => "font/woff2",
        b"ttf" => "font/ttf",
        b"otf" => "font/otf",
        b"eot" => "application/vnd.ms-fontobject",
        // Audio and video.
        b"mp4" | b"m4v" => "video/mp4",
        b"webm" => "video/webm",
        b"ogv" => "video/ogg",
        b"mov" => "video/quicktime",
        b"mp3" => "audio/mpeg",
        b"m4a" => "audio/mp4",
        b"ogg" | b"oga" | b"opus" => "audio/ogg",
        b"wav" => "audio/wav",
        b"flac" => "audio/flac",
        // Archives.
        b"zip" => "application/zip",
        b"gz" | b"tgz" => "application/gzip",
        b"tar" => "application/x-tar",
        b"bz2" => "application/x-bzip2",
        b"xz" => "application/x-xz",
        b"zst" => "application/zstd",
        b"7z" => "application/x-7z-compressed",
        _ => DEFAULT_CONTENT_TYPE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ct(name: &str) -> &'static str {
        content_type(name.as_bytes())
    }

    #[test]
    fn common_types() {
        assert_eq!(ct("index.html"), "text/html; charset=utf-8");
        assert_eq!(ct("a.htm"), "text/html; charset=utf-8");
        assert_eq!(ct("site.css"), "text/css; charset=utf-8");
        assert_eq!(ct("app.js"), "text/javascript; charset=utf-8");
        assert_eq!(ct("mod.mjs"), "text/javascript; charset=utf-8");
        assert_eq!(ct("data.json"), "application/json");
        assert_eq!(ct("app.js.map"), "application/json");
        assert_eq!(ct("robots.txt"), "text/plain; charset=utf-8");
        assert_eq!(ct("feed.xml"), "application/xml");
        assert_eq!(ct("logo.svg"), "image/svg+xml");
        assert_eq!(ct("a.png"), "image/png");
        assert_eq!(ct("a.jpg"), "image/jpeg");
        assert_eq!(ct("a.jpeg"), "image/jpeg");
        assert_eq!(ct("a.gif"), "image/gif");
        assert_eq!(ct("a.webp"), "image/webp");
        assert_eq!(ct("a.avif"), "image/avif");
        assert_eq!(ct("favicon.ico"), "image/x-icon");
        assert_eq!(ct("f.woff"), "font/woff");
        assert_eq!(ct("f.woff2"), "font/woff2");
        assert_eq!(ct("f.ttf"), "font/ttf");
        assert_eq!(ct("f.otf"), "font/otf");
        assert_eq!(ct("f.eot"), "application/vnd.ms-fontobject");
        assert_eq!(ct("doc.pdf"), "application/pdf");
        assert_eq!(ct("a.zip"), "application/zip");
        assert_eq!(ct("a.tar.gz"), "application/gzip");
        assert_eq!(ct("m.wasm"), "application/wasm");
        assert_eq!(ct("v.mp4"), "video/mp4");
        assert_eq!(ct("v.webm"), "video/webm");
        assert_eq!(ct("s.mp3"), "audio/mpeg");
        assert_eq!(ct("s.ogg"), "audio/ogg");
        assert_eq!(ct("s.wav"), "audio/wav");
        assert_eq!(ct("t.csv"), "text/csv; charset=utf-8");
        assert_eq!(ct("README.md"), "text/markdown; charset=utf-8");
        assert_eq!(ct("c.yaml"), "application/yaml");
        assert_eq!(ct("c.yml"), "application/yaml");
        assert_eq!(ct("site.webmanifest"), "application/manifest+json");
    }

    #[test]
    fn case_insensitive_and_edge_names() {
        assert_eq!(ct("INDEX.HTML"), "text/html; charset=utf-8");
        assert_eq!(ct("Photo.JpEg"), "image/jpeg");
        for name in [
            "",
            "Makefile",
            ".profile",
            ".html",
            "a.",
            "a.unknownext",
            "a.webmanifests",
            "a.exe",
            "archive.tar.gz.",
        ] {
            assert_eq!(ct(name), DEFAULT_CONTENT_TYPE, "{name:?}");
        }
        assert_eq!(ct(".config.json"), "application/json");
        assert_eq!(content_type(b"a.\xff\xfe"), DEFAULT_CONTENT_TYPE);
    }

    #[test]
    fn every_text_type_has_a_charset_and_others_none() {
        for name in ["a.html", "a.css", "a.js", "a.txt", "a.csv", "a.md", "a.vtt"] {
            assert!(ct(name).starts_with("text/"));
            assert!(ct(name).ends_with("; charset=utf-8"), "{name}");
        }
        for name in ["a.json", "a.png", "a.svg", "a.woff2", "a.bin"] {
            assert!(!ct(name).contains("charset"), "{name}");
        }
    }
}
