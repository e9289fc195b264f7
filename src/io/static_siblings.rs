//! Which static files have no precompressed siblings (`name.br`, `name.gz`), remembered per
//! file and checked against the directory that holds them, so that the common file without
//! siblings costs one `stat` of its directory instead of two failed opens per request.
//!
//! Why it is safe: creating, renaming or removing any name in a directory changes that
//! directory's change time (`st_ctime`, which unlike the modification time no program can set
//! back: `rsync -t` or `touch -d` restoring a directory's mtime after adding a sibling must
//! not hide it), so a sibling that appears after an entry was recorded changes the
//! directory's `(inode, ctime)` and the entry no longer matches. A directory changed within
//! the last `SETTLED_SECS` is never trusted (as git treats "racy" index entries): timestamps
//! are coarse (a kernel tick), so a name created in the same tick as the record could leave
//! the time unchanged. Not seen at once: a sibling that is a
//! dangling symlink whose target appears later (the directory itself does not change); it is
//! seen once anything in the directory changes, or after a restart.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::fd::RawFd;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// A directory changed more recently than this, in seconds, is not trusted (see the module
/// doc).
const SETTLED_SECS: i64 = 2;
/// Paths up to this long are made NUL-terminated on the stack (`with_c_path`), longer ones in
/// a new allocation.
const STACK_PATH_MAX: usize = 256;
/// Files remembered per mount at most; past it the table starts again empty (a bound on
/// memory, not on correctness: a file not in the table is looked up as before).
const ENTRIES_MAX: usize = 4096;

/// Call `f` with `path` NUL-terminated (None if it holds a NUL), without an allocation for a
/// short path (a directory is named this way per request).
fn with_c_path<T>(path: &[u8], f: impl FnOnce(&CStr) -> T) -> Option<T> {
    if path.len() < STACK_PATH_MAX {
        let mut buf = [0u8; STACK_PATH_MAX];
        buf[..path.len()].copy_from_slice(path);
        let c = CStr::from_bytes_with_nul(&buf[..=path.len()]).ok()?;
        return Some(f(c));
    }
    Some(f(&CString::new(path).ok()?))
}

/// A directory's identity and change time: what a recorded absence is valid for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DirStamp {
    ino: u64,
    ctime_secs: i64,
    ctime_nanos: i64,
}

/// Per mount: file (relative path) → the stamp of its directory when it had no siblings.
#[derive(Default)]
pub struct SiblingCache {
    known: Mutex<HashMap<Vec<u8>, DirStamp>>,
}

impl SiblingCache {
    /// The stamp of the directory holding `rel` (a path under the mount's directory `dir`), if
    /// it can be read and is settled (not changed within `SETTLED_SECS`).
    pub fn stamp(dir: RawFd, rel: &[u8]) -> Option<DirStamp> {
        let parent = match rel.iter().rposition(|&b| b == b'/') {
            Some(i) => &rel[..i],
            None => b".".as_slice(),
        };
        // SAFETY: an all-zero stat is a valid out-parameter.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let found = with_c_path(parent, |c| {
            // SAFETY: dir is an open directory fd, c a valid relative path, st a valid
            // out-pointer.
            unsafe { libc::fstatat(dir, c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) == 0 }
        });
        if found != Some(true) {
            return None;
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs() as i64;
        if st.st_ctime > now - SETTLED_SECS {
            return None;
        }
        Some(DirStamp {
            ino: st.st_ino,
            ctime_secs: st.st_ctime,
            ctime_nanos: st.st_ctime_nsec,
        })
    }

    /// Was `rel` recorded without siblings while its directory had this stamp?
    pub fn none_known(&self, rel: &[u8], stamp: DirStamp) -> bool {
        let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        known.get(rel) == Some(&stamp)
    }

    /// Record that `rel` had no siblings while its directory had this stamp.
    pub fn record_none(&self, rel: &[u8], stamp: DirStamp) {
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        if known.len() >= ENTRIES_MAX {
            known.clear();
        }
        known.insert(rel.to_vec(), stamp);
    }

    /// Forget `rel` (it has siblings now).
    pub fn forget(&self, rel: &[u8]) {
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        known.remove(rel);
    }
}
