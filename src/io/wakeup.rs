//! How threads wake each other and the server's waiting thread: eventfds (an app thread that
//! took the loop over says it is done; the release bell asks for deferred decrefs), the signal
//! pipe Python's `signal.set_wakeup_fd` writes to, and one `poll` over several of them. Kept
//! with the other descriptors in the I/O layer, so that no file above it makes a system call
//! on a descriptor.

use std::os::fd::RawFd;

/// A new eventfd (close-on-exec; non-blocking if asked), or -1.
pub fn eventfd(nonblocking: bool) -> RawFd {
    let flags = libc::EFD_CLOEXEC | if nonblocking { libc::EFD_NONBLOCK } else { 0 };
    // SAFETY: plain eventfd creation; the caller checks the result.
    unsafe { libc::eventfd(0, flags) }
}

/// Add one to an eventfd's counter, waking its reader. A full counter (EAGAIN) or a closed
/// descriptor changes nothing that matters to the callers (the reader is due anyway).
#[inline]
pub fn ring(fd: RawFd) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a valid u64 to an eventfd.
    unsafe { libc::write(fd, &one as *const u64 as *const libc::c_void, 8) };
}

/// Close an eventfd the caller owns, once.
pub fn close(fd: RawFd) {
    // SAFETY: the caller owns `fd` and closes it once.
    unsafe { libc::close(fd) };
}

/// Wait until one of `fds` is readable (a negative fd is ignored, as poll(2) does), at most
/// `timeout_ms` (-1: no limit). Returns which are.
pub fn wait_any<const N: usize>(fds: [RawFd; N], timeout_ms: i32) -> [bool; N] {
    let mut polls = fds.map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    loop {
        // SAFETY: `polls` holds N valid pollfd structs for the duration of the call.
        let r = unsafe { libc::poll(polls.as_mut_ptr(), N as libc::nfds_t, timeout_ms) };
        if r >= 0 {
            return polls.map(|p| p.revents != 0);
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return [false; N];
        }
    }
}

/// Read a non-blocking descriptor (the signal pipe, an eventfd) until it is empty.
pub fn drain(fd: RawFd) {
    let mut buf = [0u8; 256];
    loop {
        // SAFETY: reads into a valid stack buffer; fd is the non-blocking signal pipe or bell.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        if n <= 0 {
            return;
        }
    }
}
