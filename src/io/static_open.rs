//! Opening a static file beneath its mount's directory, the ways the static path needs: as a
//! request names it (`open_beneath`: `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` from
//! the mount's directory descriptor, so neither `..` nor a symlink can leave it; a mount with
//! `follow-symlinks` opens with plain `openat`, symlinks may then point anywhere), and with no
//! symlink at all on the way (`open_plain`, for the copies `static_cache` keeps, whose
//! watched directories must be the path). Kernels without openat2 open segment by segment with
//! O_NOFOLLOW, which follows no symlink at all.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The mount's directory, as an `O_PATH` descriptor every file is opened beneath.
pub fn open_dir(path: &str) -> std::io::Result<OwnedFd> {
    let c = CString::new(path).map_err(|_| std::io::ErrorKind::InvalidInput)?;
    // SAFETY: a valid NUL-terminated path; the result is checked and owned below.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Flags for every file the static path opens: read-only, and O_NONBLOCK so a FIFO planted in a
/// mount cannot block the event loop (it is then refused as not a regular file).
const OPEN_FLAGS: i32 = libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY;

/// Open `rel` (segments joined with '/') under `dir`, never leaving it.
pub fn open_beneath(dir: RawFd, rel: &[u8], follow_symlinks: bool) -> Option<File> {
    let c = CString::new(rel).ok()?;
    let fd = if follow_symlinks {
        // SAFETY: dir is an open directory fd, c a valid relative path.
        unsafe { libc::openat(dir, c.as_ptr(), OPEN_FLAGS) }
    } else {
        let fd = openat2(dir, &c, libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS);
        if fd < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
            return open_nofollow_walk(dir, rel);
        }
        fd
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: fd is a fresh descriptor nothing else owns.
    Some(unsafe { File::from_raw_fd(fd) })
}

/// Fallback for kernels without openat2: open each segment with O_NOFOLLOW, so no symlink is
/// followed at all.
fn open_nofollow_walk(dir: RawFd, rel: &[u8]) -> Option<File> {
    let segments: Vec<&[u8]> = rel.split(|&b| b == b'/').collect();
    let mut current: Option<OwnedFd> = None;
    for (i, seg) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        let c = CString::new(*seg).ok()?;
        let base = current.as_ref().map_or(dir, |f| f.as_raw_fd());
        let flags = if last {
            OPEN_FLAGS | libc::O_NOFOLLOW
        } else {
            libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC
        };
        // SAFETY: base is an open directory fd, c a single path segment.
        let fd = unsafe { libc::openat(base, c.as_ptr(), flags) };
        if fd < 0 {
            return None;
        }
        // SAFETY: fd is a fresh descriptor nothing else owns.
        current = Some(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    current.map(File::from)
}

/// Open `rel` under `dir` with no symlink anywhere on the path, never leaving `dir`.
pub fn open_plain(dir: RawFd, rel: &[u8]) -> Option<File> {
    let c = CString::new(rel).ok()?;
    let resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    let fd = openat2(dir, &c, resolve);
    if fd < 0 {
        if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
            return open_nofollow_walk(dir, rel);
        }
        return None;
    }
    // SAFETY: fd is a fresh descriptor nothing else owns.
    Some(unsafe { File::from_raw_fd(fd) })
}

/// openat2(2) of `path` under `dir` with `OPEN_FLAGS` and these `RESOLVE_*` flags: the
/// descriptor, or -1 with errno set.
fn openat2(dir: RawFd, path: &CStr, resolve: u64) -> i32 {
    // SAFETY: open_how is plain data; all-zero is its documented default.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = OPEN_FLAGS as u64;
    how.resolve = resolve;
    // SAFETY: openat2 with a valid dir fd, path and a fully initialised open_how of the size
    // we pass.
    (unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir,
            path.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    }) as i32
}
