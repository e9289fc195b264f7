//! A response body that is a file the app handed over (`wsgi.file_wrapper` over a regular
//! file): the system calls that make it ready for `sendfile(2)` (is it a regular file, where
//! does it stand, our own descriptor for it). The bridge asks the app's file object for its
//! `fileno()` and `tell()` (Python); the descriptor work is here, in the I/O layer. A small
//! body is sent from the app's own descriptor while the call runs (`OutQueue::write_with_file`),
//! with no descriptor of our own: [`RegularFile::range_from`]'s `dup` (and its `close`) is made
//! only for what the socket did not take then, which must outlive the app's `close()`. When the
//! process is out of descriptors for that, [`RegularFile::read_at`] reads the rest from the app's.

use std::fs::File;
use std::os::fd::{FromRawFd, RawFd};

/// A regular file, by the app's descriptor (which stays the app's).
pub struct RegularFile {
    fd: RawFd,
    size: u64,
}

impl RegularFile {
    /// `fd` if it is open on a regular file (not a pipe, a socket, a device).
    pub fn of(fd: RawFd) -> Option<RegularFile> {
        // SAFETY: an all-zero stat is a valid out-parameter; fstat fills it or fails.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat on any descriptor value is safe (a closed one fails); st is a valid
        // out-pointer.
        if unsafe { libc::fstat(fd, &mut st) } != 0 || (st.st_mode & libc::S_IFMT) != libc::S_IFREG
        {
            return None;
        }
        Some(RegularFile {
            fd,
            size: st.st_size as u64,
        })
    }

    /// The app's descriptor (valid until the app's file object is closed).
    pub fn fd(&self) -> RawFd {
        self.fd
    }

    /// The position `pos` clamped to the file's size, and the bytes from there to the end.
    pub fn span_from(&self, pos: u64) -> (u64, u64) {
        (pos.min(self.size), self.size.saturating_sub(pos))
    }

    /// The descriptor's own position (when the file object cannot say, with no `tell()`).
    pub fn position(&self) -> Option<u64> {
        // SAFETY: lseek on a descriptor, no memory involved.
        u64::try_from(unsafe { libc::lseek(self.fd, 0, libc::SEEK_CUR) }).ok()
    }

    /// `len` bytes of the file from `offset`, read with `pread` on the app's descriptor (for
    /// when no descriptor of our own can be had: see `range_from`). A file shorter than that
    /// is an error (`UnexpectedEof`), as it would be for `sendfile`.
    pub fn read_at(&self, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
        // SAFETY: the descriptor stays the app's: ManuallyDrop never closes it.
        let file = std::mem::ManuallyDrop::new(unsafe { File::from_raw_fd(self.fd) });
        read_block(&file, offset, len)
    }

    /// Our own descriptor for the file (close-on-exec), the position `pos` clamped to its size,
    /// and the bytes from there to the end: what the output queue's file segment needs.
    pub fn range_from(&self, pos: u64) -> Option<(File, u64, u64)> {
        // SAFETY: dup of a descriptor; the result is checked and owned by the File below.
        let dup = unsafe { libc::fcntl(self.fd, libc::F_DUPFD_CLOEXEC, 0) };
        if dup < 0 {
            let errno = std::io::Error::last_os_error().raw_os_error();
            if matches!(errno, Some(libc::EMFILE) | Some(libc::ENFILE)) {
                descriptors_ran_out();
            }
            return None;
        }
        // SAFETY: `dup` is a fresh descriptor that nothing else owns.
        let file = unsafe { File::from_raw_fd(dup) };
        let (offset, len) = self.span_from(pos);
        Some((file, offset, len))
    }
}

/// Tell stderr, once per process, that a file body could not have a descriptor of our own (the
/// process is out of them: EMFILE/ENFILE) and is read from the app's instead: a sign that the
/// descriptor limit is too low. Once, not per response: a process out of descriptors would
/// otherwise write a line per request.
fn descriptors_ran_out() {
    static TOLD: std::sync::Once = std::sync::Once::new();
    TOLD.call_once(|| {
        eprintln!(
            "sluicegate: no file descriptor to be had (EMFILE/ENFILE): wsgi.file_wrapper bodies \
             are read from the app's descriptor in blocks meanwhile (raise the descriptor limit)"
        );
    });
}

/// `len` bytes of `file` from `offset` (`pread`); a file shorter than that is an error
/// (`UnexpectedEof`).
pub fn read_block(file: &File, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    std::os::unix::fs::FileExt::read_exact_at(file, &mut buf, offset)?;
    Ok(buf)
}
