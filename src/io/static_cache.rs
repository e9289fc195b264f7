//! Small static files kept in memory, so that a hot file's answer is its head and its bytes in
//! one `writev`, with no open, `fstat`, `sendfile` or close, and no `stat` either: inotify
//! (`static_watch`) says when a kept file or a directory on its path changes, and the one
//! system call a request adds is the read that finds the event queue empty.
//!
//! A kept file of `SENDFILE_FROM` bytes or more also gets a sealed copy in memory (`memfd`,
//! [`sealed_copy`]), and a plaintext HTTP/1.1 answer sends that with `sendfile` after the head
//! (MSG_MORE: one segment still): copying 21 KB into the socket was 40% of the server's CPU per
//! answer (`perf`), and `sendfile` hands the kernel the copy's pages instead. Not the file's
//! own descriptor: `sendfile` leaves references to the page cache's pages in the socket until
//! the client reads them, so a file rewritten or truncated on disk while a slow client read it
//! went out torn under the head's ETag and length (new bytes mixed with the old, or zeros). The
//! copy's seals forbid any write, shrink or growth: what goes out is the bytes the head
//! describes. TLS and HTTP/2 answers take the kept bytes.
//!
//! What is kept: a regular file of at most `FILE_MAX` bytes without precompressed siblings,
//! reached from its mount's directory with no symlink on the way, per mount and relative path;
//! at most `FILES_MAX` files and `TOTAL_MAX` bytes in all (the files' bytes, plus
//! `ENTRY_OVERHEAD` per file), the least recently served dropped first. Anything else is served
//! from disk as before (`static_files`).
//!
//! Why a change is seen on the very next request: every directory from the mount's down to
//! the file's is watched for its names, and the file for its content and attributes. Writing,
//! truncating or `chmod`ing the file, replacing it (rename over it), deleting it, renaming or
//! replacing a directory on its path, or adding its `.br`/`.gz` sibling each queues an event
//! before the system call that did it returns; a request for a kept file reads the queue
//! before it is answered, and an event about a kept file's path drops the file (two `stat`s
//! per request instead were 18% of the server's CPU per 21 KB answer:
//! `benchmarks/results/2026-11-25-static-cache/`). A copy is made under
//! the watches, and kept only if no event at all arrived while it was made (so nothing can
//! change between its check and its insertion unseen). A lost event (the queue overflowed)
//! drops every file.
//!
//! Not seen: writes through a shared memory mapping and changes made by another machine to a
//! network file system (inotify reports neither), and a file system mounted over a directory
//! of the path. A deployment that changes files that way restarts the server (with
//! `--workers`, `HUP` starts new workers), which starts with nothing kept.

use std::collections::HashMap;
use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use sluicegate_proto::files::FileMeta;

use super::out_queue::SharedBytes;
use super::static_open::open_plain;
use super::static_watch::{Event, Watcher, OVERFLOW};
use crate::observe::table::StaticCacheReadings;

/// Largest file kept in memory: a page's scripts, styles and icons, not its media. A larger
/// file goes out with `sendfile`, where memory stays flat whatever its size.
pub const FILE_MAX: u64 = 64 * 1024;
/// Smallest kept file whose descriptor is kept too, for `sendfile` (see the module doc). Below
/// it, one copy into the socket costs less than a second system call. At most
/// `TOTAL_MAX / SENDFILE_FROM` descriptors are kept.
pub const SENDFILE_FROM: u64 = 16 * 1024;
/// Most memory the kept files take, per process (see the module doc for what counts).
pub const TOTAL_MAX: usize = 4 * 1024 * 1024;
/// Most files kept, per process: a bound on the table and on the watches, whatever the sizes.
pub const FILES_MAX: usize = 4096;
/// What one kept file costs beside its bytes (its key, its entry, its place in its watches'
/// lists), counted so that many empty files are bounded as well.
const ENTRY_OVERHEAD: usize = 128;
/// When a bound is reached, the least recently served files are dropped until the kept files
/// take at most this share of each bound (in quarters), so that a stream of new files sorts
/// the table once per several insertions, not at each.
const AFTER_EVICTION_QUARTERS: usize = 3;

/// A file's watch that depends on the file itself, not on one of its names.
const WHOLE_FILE: u16 = u16::MAX;

/// A kept file: its metadata for the head (ETag, Last-Modified, size), its bytes, and from
/// `SENDFILE_FROM` bytes a sealed copy of them for `sendfile` ([`sealed_copy`]; the watches
/// drop both at any change of the file).
#[derive(Clone)]
pub struct Cached {
    pub meta: FileMeta,
    pub body: Arc<[u8]>,
    pub file: Option<Arc<File>>,
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
    /// Its watches: the mount's directory, each directory below it on the path, the file.
    wds: Vec<i32>,
}

impl Entry {
    fn cost(&self) -> usize {
        self.cached.body.len() + ENTRY_OVERHEAD
    }
}

/// A kept file that a watch's events can concern: by mount and path, and which name of the
/// path is in the watched directory (its index among the path's names; `WHOLE_FILE` for the
/// file's own watch).
struct Dependent {
    mount: usize,
    rel: Box<[u8]>,
    depth: u16,
}

impl Dependent {
    /// Does an event about `name` in the watched directory (empty: the directory or file
    /// itself) concern this file?
    fn concerned_by(&self, name: &[u8]) -> bool {
        if self.depth == WHOLE_FILE || name.is_empty() {
            return true;
        }
        let mut names = self.rel.split(|&b| b == b'/');
        let Some(own) = names.nth(self.depth as usize) else {
            return true;
        };
        if name == own {
            return true;
        }
        // The file's own directory: a precompressed sibling appearing changes the answer.
        let last = names.next().is_none();
        last && name.len() == own.len() + 3
            && name.starts_with(own)
            && matches!(&name[own.len()..], b".br" | b".gz")
    }
}

/// Per mount: relative path → entry; who depends on each watch; the sizes.
#[derive(Default)]
struct Table {
    mounts: Vec<HashMap<Box<[u8]>, Entry>>,
    watches: HashMap<i32, Vec<Dependent>>,
    tick: u64,
    bytes: usize,
    files: usize,
    /// Events read so far (any event: see `FileCache::fill`).
    events: u64,
}

impl Table {
    /// Drop these files, and the watches no kept file needs any more.
    fn remove(&mut self, watcher: &Watcher, keys: &[(usize, Box<[u8]>)]) {
        let mut touched = Vec::new();
        for (mount, rel) in keys {
            if let Some(e) = self.mounts[*mount].remove(rel) {
                self.bytes -= e.cost();
                self.files -= 1;
                touched.extend(e.wds);
            }
        }
        touched.sort_unstable();
        touched.dedup();
        for wd in touched {
            let Some(deps) = self.watches.get_mut(&wd) else {
                continue;
            };
            let mounts = &self.mounts;
            deps.retain(|d| mounts[d.mount].contains_key(&d.rel));
            if deps.is_empty() {
                self.watches.remove(&wd);
                watcher.remove(wd);
            }
        }
    }

    /// What one event drops.
    fn apply(&mut self, watcher: &Watcher, ev: Event<'_>) {
        self.events += 1;
        let keys: Vec<(usize, Box<[u8]>)> = if ev.wd == OVERFLOW {
            let all = self.mounts.iter().enumerate();
            all.flat_map(|(m, t)| t.keys().map(move |k| (m, k.clone())))
                .collect()
        } else {
            let Some(deps) = self.watches.get(&ev.wd) else {
                return;
            };
            let name = if ev.watch_gone() { &[][..] } else { ev.name };
            deps.iter()
                .filter(|d| d.concerned_by(name))
                .map(|d| (d.mount, d.rel.clone()))
                .collect()
        };
        if ev.watch_gone() {
            // The kernel removed it: nothing to remove any more.
            self.watches.remove(&ev.wd);
        }
        self.remove(watcher, &keys);
    }

    /// Drop the least recently served files until one more of `room` bytes fits under the
    /// bounds, with a margin (`AFTER_EVICTION_QUARTERS`).
    fn make_room(&mut self, watcher: &Watcher, room: usize) {
        if self.bytes + room <= TOTAL_MAX && self.files < FILES_MAX {
            return;
        }
        let bytes_target = (TOTAL_MAX / 4 * AFTER_EVICTION_QUARTERS).saturating_sub(room);
        let files_target = FILES_MAX / 4 * AFTER_EVICTION_QUARTERS;
        let mut by_age: Vec<(u64, usize, &[u8], usize)> = self
            .mounts
            .iter()
            .enumerate()
            .flat_map(|(m, t)| t.iter().map(move |(k, e)| (e.used, m, &k[..], e.cost())))
            .collect();
        by_age.sort_unstable_by_key(|(used, ..)| *used);
        let (mut bytes, mut files) = (self.bytes, self.files);
        let mut drop = Vec::new();
        for (_, m, k, cost) in by_age {
            if bytes <= bytes_target && files <= files_target {
                break;
            }
            drop.push((m, Box::<[u8]>::from(k)));
            bytes -= cost;
            files -= 1;
        }
        self.remove(watcher, &drop);
    }
}

/// The kept files of all mounts, and what `stats()` reads of them.
pub struct FileCache {
    /// None where the kernel gave no inotify instance: nothing is kept then.
    watcher: Option<Watcher>,
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
            watcher: Watcher::new(),
            table: Mutex::new(table),
            files: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            hits: AtomicU64::new(0),
        }
    }

    /// The table, with every event queued so far applied. Without a watch the queue is not
    /// read, unless `always` (a copy being made: its watches are not in the table yet).
    fn current(&self, watcher: &Watcher, always: bool) -> MutexGuard<'_, Table> {
        let mut t = self.lock();
        if always || !t.watches.is_empty() {
            self.apply_events(watcher, &mut t);
        }
        t
    }

    /// Apply every event queued so far.
    fn apply_events(&self, watcher: &Watcher, t: &mut Table) {
        watcher.drain(|ev| t.apply(watcher, ev));
        self.publish(t);
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Publish the table's size for `readings`.
    fn publish(&self, t: &Table) {
        self.files.store(t.files as u64, Ordering::Relaxed);
        self.bytes.store(t.bytes as u64, Ordering::Relaxed);
    }

    /// The kept copy of `rel` under the mount `mount`, if any (it is the file on disk now).
    pub fn lookup(&self, mount: usize, rel: &[u8]) -> Option<Cached> {
        let watcher = self.watcher.as_ref()?;
        let mut t = self.lock();
        // A file not kept costs no look at the event queue: events only ever drop files.
        if !t.mounts[mount].contains_key(rel) {
            return None;
        }
        self.apply_events(watcher, &mut t);
        t.tick += 1;
        let tick = t.tick;
        let e = t.mounts[mount].get_mut(rel)?;
        e.used = tick;
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(e.cached.clone())
    }

    /// Keep a copy of `rel` under the mount `mount` (whose directory is `dir`), if it is a
    /// small regular file without siblings reached with no symlink: watched first, then
    /// opened and read, and kept only if no event arrived meanwhile.
    pub fn fill(&self, mount: usize, dir: RawFd, rel: &[u8]) -> Option<Cached> {
        let watcher = self.watcher.as_ref()?;
        let seen = self.current(watcher, true).events;
        let mut wds = Vec::new();
        let made = watch_path(watcher, dir, rel, &mut wds).and_then(|()| read_whole(dir, rel));
        let mut t = self.current(watcher, true);
        let Some(cached) = made.filter(|_| t.events == seen) else {
            for wd in wds {
                if !t.watches.contains_key(&wd) {
                    watcher.remove(wd);
                }
            }
            return None;
        };
        let entry = Entry {
            cached: cached.clone(),
            used: 0,
            wds,
        };
        t.remove(watcher, &[(mount, rel.into())]);
        t.make_room(watcher, entry.cost());
        t.tick += 1;
        let last = entry.wds.len() - 1;
        for (i, &wd) in entry.wds.iter().enumerate() {
            let depth = if i == last { WHOLE_FILE } else { i as u16 };
            let rel = rel.into();
            t.watches
                .entry(wd)
                .or_default()
                .push(Dependent { mount, rel, depth });
        }
        t.bytes += entry.cost();
        t.files += 1;
        let used = t.tick;
        t.mounts[mount].insert(rel.into(), Entry { used, ..entry });
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

/// Watch the mount's directory, each directory on the way to `rel`, and `rel` itself, in that
/// order (into `wds`, also when one fails).
fn watch_path(watcher: &Watcher, dir: RawFd, rel: &[u8], wds: &mut Vec<i32>) -> Option<()> {
    wds.push(watcher.add_dir(dir, b"")?);
    for (i, _) in rel.iter().enumerate().filter(|(_, &b)| b == b'/') {
        wds.push(watcher.add_dir(dir, &rel[..i])?);
    }
    wds.push(watcher.add_file(dir, rel)?);
    Some(())
}

/// `rel` read whole, if it is a regular file of at most `FILE_MAX` bytes reached with no
/// symlink (so the watched directories are its path), and has no precompressed sibling.
fn read_whole(dir: RawFd, rel: &[u8]) -> Option<Cached> {
    let file = open_plain(dir, rel)?;
    // SAFETY: an all-zero stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: file is open; st is a valid out-pointer.
    if unsafe { libc::fstat(file.as_raw_fd(), &mut st) } != 0
        || st.st_mode & libc::S_IFMT != libc::S_IFREG
        || st.st_size as u64 > FILE_MAX
        || has_sibling(dir, rel, b".br")
        || has_sibling(dir, rel, b".gz")
    {
        return None;
    }
    let mut body = vec![0u8; st.st_size as usize];
    file.read_exact_at(&mut body, 0).ok()?;
    let copy = if st.st_size as u64 >= SENDFILE_FROM {
        Some(Arc::new(sealed_copy(&body)?))
    } else {
        None
    };
    Some(Cached {
        meta: FileMeta {
            size: st.st_size as u64,
            mtime_secs: st.st_mtime,
            mtime_nanos: st.st_mtime_nsec as u32,
            inode: st.st_ino,
        },
        body: body.into(),
        file: copy,
    })
}

/// `body` in a sealed memory file (`memfd_create`, then seals against any write, shrink or
/// growth, and against new seals): bytes nobody can change, that `sendfile` can send from.
/// None if the kernel refuses (then the file is not kept).
fn sealed_copy(body: &[u8]) -> Option<File> {
    let name = b"sluicegate-static\0";
    // SAFETY: `name` is NUL-terminated; the flags are valid for memfd_create.
    let fd = unsafe {
        libc::memfd_create(
            name.as_ptr() as *const libc::c_char,
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` was just created and is owned by nothing else.
    let copy = unsafe { File::from_raw_fd(fd) };
    copy.write_all_at(body, 0).ok()?;
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
    // SAFETY: fcntl on a descriptor we own, with valid seal flags.
    (unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, seals) } == 0).then_some(copy)
}

/// Is there a name `rel` + `suffix` (a file, or anything: a copy is then not made)?
fn has_sibling(dir: RawFd, rel: &[u8], suffix: &[u8]) -> bool {
    let Ok(c) = CString::new([rel, suffix].concat()) else {
        return true;
    };
    // SAFETY: an all-zero stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: dir is an open directory fd, c a valid relative path, st a valid out-pointer.
    unsafe { libc::fstatat(dir, c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dep(rel: &[u8], depth: u16) -> Dependent {
        Dependent {
            mount: 0,
            rel: rel.into(),
            depth,
        }
    }

    #[test]
    fn a_directory_event_concerns_the_files_below_the_name_it_is_about() {
        let d = dep(b"css/site.css", 0);
        assert!(d.concerned_by(b"css"));
        assert!(!d.concerned_by(b"js"));
        assert!(d.concerned_by(b""));
        let d = dep(b"css/site.css", 1);
        assert!(d.concerned_by(b"site.css"));
        assert!(d.concerned_by(b"site.css.gz"));
        assert!(d.concerned_by(b"site.css.br"));
        assert!(!d.concerned_by(b"site.css.map"));
        assert!(!d.concerned_by(b"other.css"));
        assert!(dep(b"css/site.css", WHOLE_FILE).concerned_by(b""));
    }
}
