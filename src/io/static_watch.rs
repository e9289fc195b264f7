//! The inotify instance behind `static_cache`: watches on the directories a kept file's path
//! goes through and on the file itself, and the events that say one of them changed. Only the
//! system calls are here; what an event means for the kept files is `static_cache`'s.
//!
//! A directory is watched for changes of its names (created, deleted, renamed from or to) and
//! of itself (deleted, moved, its attributes); a file for writes, truncation, attribute changes
//! (permissions, links), and being deleted or moved. The kernel queues an event before the
//! system call that caused it returns, so an event is in the queue before any request sent
//! after the change can be read.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// What a watched directory reports: its names and itself.
const DIR_MASK: u32 = libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_ATTRIB
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR
    | libc::IN_DONT_FOLLOW;
/// What a watched file reports: its content and itself.
const FILE_MASK: u32 = libc::IN_MODIFY
    | libc::IN_CLOSE_WRITE
    | libc::IN_ATTRIB
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_DONT_FOLLOW;

/// The watch descriptor of the queue-overflow event (events were lost).
pub const OVERFLOW: i32 = -1;

/// One event: the watch it came from, what happened (`IN_*` bits), and the name in a watched
/// directory it is about (empty: the watched directory or file itself).
pub struct Event<'a> {
    pub wd: i32,
    pub mask: u32,
    pub name: &'a [u8],
}

impl Event<'_> {
    /// The kernel removed the watch (its inode is gone, or its file system unmounted).
    pub fn watch_gone(&self) -> bool {
        self.mask & libc::IN_IGNORED != 0
    }
}

/// Events are read this many bytes at a time (each is 16 bytes and its padded name).
const READ_BYTES: usize = 4096;

/// One inotify instance (non-blocking, close-on-exec).
pub struct Watcher {
    fd: OwnedFd,
}

impl Watcher {
    /// A new instance; None where the kernel refuses one (then nothing is kept in memory).
    pub fn new() -> Option<Watcher> {
        // SAFETY: inotify_init1 takes flags only; the result is checked and owned below.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        // SAFETY: fd is a fresh descriptor nothing else owns.
        Some(Watcher {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Watch `rel` under the directory `dir` (empty: `dir` itself) as a directory.
    pub fn add_dir(&self, dir: RawFd, rel: &[u8]) -> Option<i32> {
        // "." after the descriptor's link: the link itself is followed, the directory is
        // watched (IN_DONT_FOLLOW only concerns the last name).
        let path = if rel.is_empty() { b".".as_slice() } else { rel };
        self.add(dir, path, DIR_MASK)
    }

    /// Watch the file `rel` under the directory `dir`.
    pub fn add_file(&self, dir: RawFd, rel: &[u8]) -> Option<i32> {
        self.add(dir, rel, FILE_MASK)
    }

    fn add(&self, dir: RawFd, rel: &[u8], mask: u32) -> Option<i32> {
        // inotify has no *at form: the directory is named through its descriptor's link.
        let mut path = format!("/proc/self/fd/{dir}/").into_bytes();
        path.extend_from_slice(rel);
        let c = CString::new(path).ok()?;
        // SAFETY: an open inotify descriptor and a valid NUL-terminated path.
        let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), c.as_ptr(), mask) };
        (wd >= 0).then_some(wd)
    }

    /// Stop watching `wd`.
    pub fn remove(&self, wd: i32) {
        // SAFETY: inotify_rm_watch on our descriptor; an unknown wd only fails.
        unsafe { libc::inotify_rm_watch(self.fd.as_raw_fd(), wd) };
    }

    /// Hand every queued event to `f`, until the queue is empty.
    pub fn drain(&self, mut f: impl FnMut(Event<'_>)) {
        // Not zeroed: the queue is read per request and is almost always empty, and only
        // the bytes the kernel wrote are looked at.
        let mut buf = std::mem::MaybeUninit::<[u8; READ_BYTES]>::uninit();
        loop {
            // SAFETY: read into our own buffer of READ_BYTES bytes.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast::<libc::c_void>(),
                    READ_BYTES,
                )
            };
            if n <= 0 {
                return;
            }
            let n = n as usize;
            // SAFETY: the kernel wrote the first n bytes of the buffer (n <= READ_BYTES).
            let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), n) };
            let mut at = 0;
            while at + 16 <= n {
                let word = |i: usize| {
                    u32::from_ne_bytes(bytes[at + 4 * i..at + 4 * i + 4].try_into().unwrap())
                };
                let (wd, mask, len) = (word(0) as i32, word(1), word(3) as usize);
                let name = &bytes[(at + 16).min(n)..(at + 16 + len).min(n)];
                let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
                f(Event {
                    wd,
                    mask,
                    name: &name[..end],
                });
                at += 16 + len;
            }
        }
    }
}
