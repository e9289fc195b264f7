//! Small static files kept in memory, so that a hot file's answer is its head and its bytes in
//! one `writev`, with no open, `fstat`, `sendfile` or close: per request, one `stat` of the
//! file's path and one of its directory (`static_siblings`) say whether the copy is still the
//! file on disk.
//!
//! What is kept: a regular file of at most `FILE_MAX` bytes without precompressed siblings,
//! per mount and relative path, with the file's identity and times (`FileStamp`) and its
//! directory's (`DirStamp`); at most `TOTAL_MAX` bytes in all (the bytes of the files, plus
//! `ENTRY_OVERHEAD` per file), the least recently served dropped first. Larger files, files
//! with siblings and files changed within the last `SETTLED_SECS` are served from disk as
//! before (`static_files`).
//!
//! Why a changed file is seen on the very next request: writing a file changes its change time
//! (`st_ctime`, which no program can set back), replacing it (rename) or deleting it changes
//! what its path names (another inode, or none), and adding a `.br`/`.gz` sibling changes the
//! directory's change time. Every one of those makes the request's `stat`s differ from the
//! recorded ones, and the file is opened again. A copy is only made of a file whose change
//! time is at least `SETTLED_SECS` old (timestamps are coarse: a write within the same tick as
//! the copy could leave the time unchanged), and only if the file's `fstat` after reading it
//! equals the one before (nothing wrote to it meanwhile).
//!
//! The path is looked up without `openat2`'s confinement: a name that now leads out of the
//! mount (a directory replaced by a symlink) leads to another inode, so no stamp matches and
//! the file is opened, confined, as on a first request.

use std::collections::HashMap;
use std::ffi::CStr;
use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use sluicegate_proto::files::FileMeta;

use super::out_queue::SharedBytes;
use super::static_siblings::{with_c_path, DirStamp, SiblingCache, SETTLED_SECS};
use crate::observe::table::StaticCacheReadings;

/// Largest file kept in memory: a page's scripts, styles and icons, not its media. A larger
/// file goes out with `sendfile`, where memory stays flat whatever its size.
pub const FILE_MAX: u64 = 64 * 1024;
/// Most memory the kept files take, per process (see the module doc for what counts).
pub const TOTAL_MAX: usize = 4 * 1024 * 1024;
/// What one kept file costs beside its bytes (its key, its entry, the shared buffer's
/// counts), counted so that many empty files are bounded as well.
const ENTRY_OVERHEAD: usize = 128;
/// When the bound is reached, the least recently served files are dropped until the kept
/// files take at most this share of `TOTAL_MAX` (in quarters), so that a stream of new files
/// sorts the table once per several insertions, not at each.
const AFTER_EVICTION_QUARTERS: usize = 3;

/// What a file's `stat` says about its identity and content: the same stamp, the same bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FileStamp {
    dev: u64,
    ino: u64,
    size: i64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileStamp {
    /// The stamp of a regular file's `stat`, None for anything else.
    pub fn of(st: &libc::stat) -> Option<FileStamp> {
        ((st.st_mode & libc::S_IFMT) == libc::S_IFREG).then_some(FileStamp {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size,
            mtime: (st.st_mtime, st.st_mtime_nsec),
            ctime: (st.st_ctime, st.st_ctime_nsec),
        })
    }

    /// The stamp of what `rel` names under the directory `dir` now (symlinks followed).
    fn at(dir: RawFd, rel: &[u8]) -> Option<FileStamp> {
        with_c_path(rel, |c: &CStr| {
            // SAFETY: an all-zero stat is a valid out-parameter.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: dir is an open directory fd, c a valid NUL-terminated relative path,
            // st a valid out-pointer.
            if unsafe { libc::fstatat(dir, c.as_ptr(), &mut st, 0) } != 0 {
                return None;
            }
            FileStamp::of(&st)
        })?
    }

    /// The stamp of an open file.
    pub fn of_file(f: &File) -> Option<FileStamp> {
        // SAFETY: an all-zero stat is a valid out-parameter.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: f is open; st is a valid out-pointer.
        if unsafe { libc::fstat(f.as_raw_fd(), &mut st) } != 0 {
            return None;
        }
        FileStamp::of(&st)
    }

    /// Unchanged for `SETTLED_SECS` at least (see the module doc).
    fn settled(&self) -> bool {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        self.ctime.0 <= now - SETTLED_SECS
    }
}

/// A kept file: its metadata for the head (ETag, Last-Modified, size) and its bytes.
#[derive(Clone)]
pub struct Cached {
    pub meta: FileMeta,
    pub body: Arc<[u8]>,
    file: FileStamp,
    dir: DirStamp,
}

impl Cached {
    /// `len` bytes of the body from `offset`, as an output queue segment (no copy).
    pub fn slice(&self, offset: u64, len: u64) -> Box<dyn SharedBytes> {
        Box::new(BodySlice {
            body: Arc::clone(&self.body),
            start: offset as usize,
            end: (offset + len) as usize,
        })
    }
}

/// A range of a kept file's bytes, queued for writing.
struct BodySlice {
    body: Arc<[u8]>,
    start: usize,
    end: usize,
}

impl SharedBytes for BodySlice {
    fn bytes(&self) -> &[u8] {
        &self.body[self.start..self.end]
    }
}

struct Entry {
    cached: Cached,
    /// When it was last served, in `Table::tick`s.
    used: u64,
}

impl Entry {
    fn cost(&self) -> usize {
        self.cached.body.len() + ENTRY_OVERHEAD
    }
}

/// Per mount: relative path → entry; and the bytes they take.
#[derive(Default)]
struct Table {
    mounts: Vec<HashMap<Box<[u8]>, Entry>>,
    tick: u64,
    bytes: usize,
}

impl Table {
    fn remove(&mut self, mount: usize, rel: &[u8]) {
        if let Some(e) = self.mounts[mount].remove(rel) {
            self.bytes -= e.cost();
        }
    }

    /// Drop the least recently served entries until `room` more bytes fit under the bound,
    /// with a margin (`AFTER_EVICTION_QUARTERS`).
    fn make_room(&mut self, room: usize) {
        if self.bytes + room <= TOTAL_MAX {
            return;
        }
        let target = (TOTAL_MAX / 4 * AFTER_EVICTION_QUARTERS).saturating_sub(room);
        let mut by_age: Vec<(u64, usize, Box<[u8]>)> = self
            .mounts
            .iter()
            .enumerate()
            .flat_map(|(m, t)| t.iter().map(move |(k, e)| (e.used, m, k.clone())))
            .collect();
        by_age.sort_unstable_by_key(|(used, _, _)| *used);
        for (_, m, k) in by_age {
            if self.bytes <= target {
                break;
            }
            self.remove(m, &k);
        }
    }
}

/// The kept files of all mounts, and what `stats()` reads of them.
pub struct FileCache {
    table: Mutex<Table>,
    files: AtomicU64,
    bytes: AtomicU64,
    hits: AtomicU64,
}

impl FileCache {
    pub fn new(mounts: usize) -> FileCache {
        let table = Table {
            mounts: (0..mounts).map(|_| HashMap::new()).collect(),
            ..Table::default()
        };
        FileCache {
            table: Mutex::new(table),
            files: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            hits: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Publish the table's size for `readings` (under the lock, so the two agree).
    fn publish(&self, t: &Table) {
        let files = t.mounts.iter().map(HashMap::len).sum::<usize>();
        self.files.store(files as u64, Ordering::Relaxed);
        self.bytes.store(t.bytes as u64, Ordering::Relaxed);
    }

    /// The kept copy of `rel` (under the mount `mount`, whose directory is `dir`), if the
    /// file and its directory are as they were when it was made; a stale copy is dropped.
    pub fn lookup(&self, mount: usize, dir: RawFd, rel: &[u8]) -> Option<Cached> {
        let cached = {
            let mut t = self.lock();
            t.tick += 1;
            let tick = t.tick;
            let e = t.mounts[mount].get_mut(rel)?;
            e.used = tick;
            e.cached.clone()
        };
        let current = FileStamp::at(dir, rel) == Some(cached.file)
            && SiblingCache::stamp(dir, rel) == Some(cached.dir);
        if !current {
            let mut t = self.lock();
            t.remove(mount, rel);
            self.publish(&t);
            return None;
        }
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(cached)
    }

    /// Keep a copy of the open `file` (`rel` under the mount `mount`; `before` is its
    /// `fstat`), if it is small and settled and its directory's stamp `dir` is known: read
    /// whole, and kept only if its `fstat` after the read is `before`.
    pub fn fill(
        &self,
        mount: usize,
        rel: &[u8],
        file: &File,
        (meta, before): (FileMeta, FileStamp),
        dir: Option<DirStamp>,
    ) -> Option<Cached> {
        let dir = dir?;
        if meta.size > FILE_MAX || !before.settled() || before.size as u64 != meta.size {
            return None;
        }
        let mut body = vec![0u8; meta.size as usize];
        file.read_exact_at(&mut body, 0).ok()?;
        if FileStamp::of_file(file)? != before {
            return None;
        }
        let cached = Cached {
            meta,
            body: body.into(),
            file: before,
            dir,
        };
        let entry = Entry {
            cached: cached.clone(),
            used: 0,
        };
        let mut t = self.lock();
        t.remove(mount, rel);
        t.make_room(entry.cost());
        t.tick += 1;
        let entry = Entry {
            used: t.tick,
            ..entry
        };
        t.bytes += entry.cost();
        t.mounts[mount].insert(rel.into(), entry);
        self.publish(&t);
        Some(cached)
    }

    pub fn readings(&self) -> StaticCacheReadings {
        StaticCacheReadings {
            files: self.files.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            hits: self.hits.load(Ordering::Relaxed),
        }
    }
}
