//! `--static-expires "REGEX SECONDS"` and `--static-expires-uri "REGEX SECONDS"`: uWSGI's
//! static-expires and static-expires-uri, an `Expires` header of now + SECONDS on a static
//! file's answer (200 or 206) when its file path (the mount's directory joined with the file's
//! path under it) or the request's URI (the target as sent, query included, uWSGI's
//! REQUEST_URI) matches REGEX.
//!
//! Matched here, in the event loop, because static answers never reach Python. The patterns
//! are uWSGI's PCRE ones; the `regex` crate takes the ones configurations use (alternations,
//! classes, anchors, `.*`) and matches in time linear in the path, so no pattern can make a
//! static answer slow; one it cannot take (lookaround, backreferences) is a start error naming
//! it. Path rules are tried first, in the order given, then URI rules; the first match decides,
//! and one `Expires` is added (uWSGI could add one of each kind; two `Expires` fields are not
//! valid HTTP). The date is formatted once per answer that matches, nothing is done for one
//! that does not, and nothing at all without these options.

use regex::bytes::{Regex, RegexBuilder};

use crate::config::ExpiresConfig;

/// One rule, compiled.
struct Rule {
    pattern: Regex,
    seconds: u64,
    on_uri: bool,
}

/// Every `--static-expires` and `--static-expires-uri` rule, path rules first.
pub struct StaticExpires {
    rules: Vec<Rule>,
}

impl StaticExpires {
    /// Compile the rules; an error names the pattern and why.
    pub fn new(rules: &[ExpiresConfig]) -> Result<StaticExpires, String> {
        let mut out = Vec::with_capacity(rules.len());
        for on_uri in [false, true] {
            for r in rules.iter().filter(|r| r.on_uri == on_uri) {
                // Byte by byte, as PCRE without its UTF mode: `.` is one byte (a file name
                // need not be UTF-8), `\w` and `\d` are ASCII.
                let pattern = RegexBuilder::new(&r.pattern)
                    .unicode(false)
                    .build()
                    .map_err(|e| {
                        let flag = if r.on_uri {
                            "--static-expires-uri"
                        } else {
                            "--static-expires"
                        };
                        format!(
                            "{flag} {:?}: not a pattern sluicegate can match: {e}",
                            r.pattern
                        )
                    })?;
                out.push(Rule {
                    pattern,
                    seconds: r.seconds,
                    on_uri,
                });
            }
        }
        Ok(StaticExpires { rules: out })
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The seconds of the first rule that matches `file` (path rules) or `uri` (URI rules).
    /// `file` is made only when a path rule exists (`file()` is called at most once).
    pub fn seconds(&self, file: impl FnOnce() -> Vec<u8>, uri: &[u8]) -> Option<u64> {
        let mut file = Some(file);
        let mut path: Vec<u8> = Vec::new();
        for r in &self.rules {
            let subject = if r.on_uri {
                uri
            } else {
                if let Some(make) = file.take() {
                    path = make();
                }
                &path
            };
            if r.pattern.is_match(subject) {
                return Some(r.seconds);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(list: &[(&str, u64, bool)]) -> StaticExpires {
        let configs: Vec<ExpiresConfig> = list
            .iter()
            .map(|&(p, s, u)| ExpiresConfig {
                pattern: p.to_string(),
                seconds: s,
                on_uri: u,
            })
            .collect();
        StaticExpires::new(&configs).unwrap()
    }

    #[test]
    fn path_rules_come_first_then_uri_rules_in_order() {
        let r = rules(&[
            ("\\?v=", 60, true),
            (".*\\.(css|js)$", 3600, false),
            ("^/static/", 10, true),
            ("\\.png$", 7, false),
        ]);
        let file = |p: &'static str| move || p.as_bytes().to_vec();
        assert_eq!(
            r.seconds(file("/srv/a.css"), b"/static/a.css?v=1"),
            Some(3600)
        );
        assert_eq!(r.seconds(file("/srv/a.png"), b"/x"), Some(7));
        assert_eq!(r.seconds(file("/srv/a.txt"), b"/x?v=2"), Some(60));
        assert_eq!(r.seconds(file("/srv/a.txt"), b"/static/a.txt"), Some(10));
        assert_eq!(r.seconds(file("/srv/a.txt"), b"/other"), None);
    }

    #[test]
    fn a_path_that_is_not_utf8_is_matched_byte_by_byte() {
        let r = rules(&[("caf.\\.css$", 5, false)]);
        assert_eq!(r.seconds(|| b"/srv/caf\xe9.css".to_vec(), b"/"), Some(5));
    }

    #[test]
    fn a_non_ascii_letter_in_a_pattern_matches_its_utf8_bytes() {
        let r = rules(&[("café\\.css$", 5, false), ("^/\\w+$", 6, true)]);
        assert_eq!(r.seconds(|| "/srv/café.css".into(), b"/"), Some(5));
        // `\w` is ASCII, as in PCRE without its UTF mode.
        assert_eq!(r.seconds(|| b"/x".to_vec(), "/é".as_bytes()), None);
        assert_eq!(r.seconds(|| b"/x".to_vec(), b"/e"), Some(6));
    }

    #[test]
    fn without_path_rules_the_path_is_never_made() {
        let r = rules(&[("^/", 5, true)]);
        assert_eq!(r.seconds(|| unreachable!(), b"/a"), Some(5));
    }

    #[test]
    fn a_pattern_regex_cannot_take_is_a_start_error_naming_it() {
        let configs = [ExpiresConfig {
            pattern: "(?<=a)b".into(),
            seconds: 1,
            on_uri: false,
        }];
        let e = StaticExpires::new(&configs).err().unwrap();
        assert!(e.starts_with("--static-expires \"(?<=a)b\": "), "{e}");
    }
}
