//! What one static mount is configured with: dotfile policy, index file, Cache-Control. Built
//! once from the validated config (the Python front checks it with [`MountOptions::validate`]
//! at startup, so a bad index name is a config error, not a per-request surprise).

use super::StackBuf;

/// `max-age` used when `immutable` is set without `max_age`: one year, the conventional value
/// for content-hashed assets (RFC 8246 `immutable` only means something with a freshness
/// lifetime).
pub const IMMUTABLE_DEFAULT_MAX_AGE: u32 = 31_536_000;

/// Options of one mount.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MountOptions {
    /// Serve names starting with `.` (e.g. `.well-known`). Off by default: `.git`, `.env` and
    /// editor droppings in a static directory are a classic leak. `.` and `..` are refused
    /// whatever this says.
    pub allow_dotfiles: bool,
    /// File served for a path ending in `/` (e.g. `index.html`); `None`: such a path is 404.
    /// Must be one valid segment (see [`MountOptions::validate`]). Never a directory listing.
    pub index: Option<Box<[u8]>>,
    /// `Cache-Control: public, max-age=N`; `None`: no Cache-Control header.
    pub max_age: Option<u32>,
    /// Add `, immutable` (for content-hashed file names). Without `max_age`, implies
    /// `max-age=`[`IMMUTABLE_DEFAULT_MAX_AGE`].
    pub immutable: bool,
}

impl MountOptions {
    /// Check the options once at startup: the index name must be a single segment that
    /// [`super::resolve`] would accept in a URL (no `/`, `\`, control bytes, not `.`/`..`,
    /// valid UTF-8, not hidden unless dotfiles are allowed).
    pub fn validate(&self) -> Result<(), &'static str> {
        match &self.index {
            Some(name) if name.is_empty() => Err("index file name is empty"),
            Some(name) => super::resolve::check_segment(name, self.allow_dotfiles)
                .map_err(|_| "index file name must be a single plain file name"),
            None => Ok(()),
        }
    }

    /// The Cache-Control value, if any: `public, max-age=N[, immutable]`.
    pub(super) fn cache_control(&self) -> Option<StackBuf<48>> {
        let max_age = match (self.max_age, self.immutable) {
            (Some(n), _) => n,
            (None, true) => IMMUTABLE_DEFAULT_MAX_AGE,
            (None, false) => return None,
        };
        let mut v = StackBuf::new();
        v.push(b"public, max-age=");
        v.push_dec(u64::from(max_age));
        if self.immutable {
            v.push(b", immutable");
        }
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cc(max_age: Option<u32>, immutable: bool) -> Option<String> {
        let o = MountOptions {
            max_age,
            immutable,
            ..Default::default()
        };
        o.cache_control()
            .map(|v| String::from_utf8(v.as_bytes().to_vec()).unwrap())
    }

    #[test]
    fn cache_control_values() {
        assert_eq!(cc(None, false), None);
        assert_eq!(cc(Some(0), false).unwrap(), "public, max-age=0");
        assert_eq!(cc(Some(3600), false).unwrap(), "public, max-age=3600");
        assert_eq!(
            cc(Some(u32::MAX), true).unwrap(),
            "public, max-age=4294967295, immutable"
        );
        assert_eq!(
            cc(None, true).unwrap(),
            "public, max-age=31536000, immutable"
        );
    }

    #[test]
    fn index_name_validation() {
        let with = |name: &[u8], dot: bool| MountOptions {
            index: Some(name.into()),
            allow_dotfiles: dot,
            ..Default::default()
        };
        assert!(MountOptions::default().validate().is_ok());
        assert!(with(b"index.html", false).validate().is_ok());
        assert!(with("índice.html".as_bytes(), false).validate().is_ok());
        assert!(with(b".index", true).validate().is_ok());
        for bad in [
            &b""[..],
            b".",
            b"..",
            b"a/b",
            b"a\\b",
            b"a\0",
            b"\xff",
            b".index",
        ] {
            assert!(with(bad, false).validate().is_err(), "{bad:?}");
        }
    }
}
