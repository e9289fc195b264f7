//! A connected client socket (TCP or unix), non-blocking, with the syscalls the server uses:
//! read, writev (sendmsg), sendfile, TCP_CORK, shutdown, and a bounded wait for readiness used
//! by app threads that own the connection for the duration of a request (they cannot use the
//! event loop's epoll). This is the one module that reads and writes client sockets: the
//! `*_fd` functions serve the threads that run a request, which reach them only through
//! `io::transport` (the bridge never holds a client descriptor).

use std::fs::File;
use std::io::{self, IoSlice, Read};
use std::net::Shutdown;
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use mio::event::Source;
use mio::net::{TcpStream, UnixStream};

/// A connected, non-blocking client socket.
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

// `Peer` is plain data (the floor below): re-exported for the files that name it here.
pub use crate::peer::Peer;

impl Stream {
    pub fn fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }

    pub fn source(&mut self) -> &mut dyn Source {
        match self {
            Stream::Tcp(s) => s,
            Stream::Unix(s) => s,
        }
    }

    /// One non-blocking read. `Ok(0)` is end of stream.
    #[inline(always)]
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let r = match self {
                Stream::Tcp(s) => (&*s).read(buf),
                Stream::Unix(s) => (&*s).read(buf),
            };
            match r {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return r,
            }
        }
    }

    /// Half-close: no more bytes from us (used before a lingering close).
    pub fn shutdown_write(&self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Write),
            Stream::Unix(s) => s.shutdown(Shutdown::Write),
        };
    }
}

/// One gathering write on a socket descriptor: `sendmsg` with MSG_NOSIGNAL, so a client that
/// went away gives EPIPE instead of a SIGPIPE. Retries on EINTR.
pub fn writev_fd(fd: RawFd, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
    writev_fd_flags(fd, bufs, 0)
}

/// `writev_fd` with extra send flags (MSG_MORE when a sendfile follows).
pub fn writev_fd_flags(fd: RawFd, bufs: &[IoSlice<'_>], flags: i32) -> io::Result<usize> {
    loop {
        // SAFETY: an all-zero msghdr is valid (no name, no control data).
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        // IoSlice is ABI-compatible with struct iovec (guaranteed by std on Unix).
        msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
        msg.msg_iovlen = bufs.len() as _;
        // SAFETY: msg points at `bufs.len()` valid iovecs that outlive the call.
        let n = unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL | flags) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// One read(2) from a socket an app thread borrowed for a request (the request body), retrying
/// on EINTR. `Ok(0)` is end of stream.
pub fn read_fd(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is valid writable memory for the duration of the call; read(2) writes
        // at most `buf.len()` bytes into it.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// One readv(2) into `bufs` in order, retrying on EINTR.
pub fn readv_fd(fd: RawFd, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
    let count = bufs.len().min(libc::UIO_MAXIOV as usize) as libc::c_int;
    loop {
        // SAFETY: `IoSliceMut` is ABI-compatible with `iovec`; each one is valid writable
        // memory for the duration of the call, and readv(2) writes at most their lengths.
        let n = unsafe { libc::readv(fd, bufs.as_mut_ptr() as *const libc::iovec, count) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// One read(2) into memory not initialized yet (an HTTP/2 connection's frame buffer: no
/// zeroing before each read), retrying on EINTR. Returns how many bytes it wrote.
pub fn read_fd_uninit(fd: RawFd, buf: &mut [std::mem::MaybeUninit<u8>]) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is valid writable memory for the duration of the call; read(2) writes
        // at most `buf.len()` bytes into it and never reads it.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Write all of `data` to a non-blocking socket an app thread borrowed, waiting (up to
/// `timeout` per stall) when it is full.
pub fn send_all_fd(fd: RawFd, mut data: &[u8], timeout: Duration) -> io::Result<()> {
    while !data.is_empty() {
        // SAFETY: `data` is a valid readable slice for the duration of the call.
        let n = unsafe {
            libc::send(
                fd,
                data.as_ptr() as *const libc::c_void,
                data.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n >= 0 {
            data = &data[n as usize..];
            continue;
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => {}
            io::ErrorKind::WouldBlock => {
                if !wait_fd(fd, true, timeout)? {
                    return Err(io::ErrorKind::TimedOut.into());
                }
            }
            _ => return Err(e),
        }
    }
    Ok(())
}

/// One sendfile(2) of `count` bytes of `file` at `offset` to the socket `fd`, retrying on
/// EINTR. A file shorter than announced (truncated while being sent) is an error.
pub fn sendfile_fd(fd: RawFd, file: &File, offset: u64, count: usize) -> io::Result<usize> {
    sendfile_raw(fd, file.as_raw_fd(), offset, count)
}

/// `sendfile_fd` from a descriptor the caller keeps open for the call (the app's own file).
pub fn sendfile_raw(fd: RawFd, file_fd: RawFd, offset: u64, count: usize) -> io::Result<usize> {
    let mut off = offset as libc::off_t;
    loop {
        // SAFETY: both descriptors are open for the duration of the call (the caller's
        // guarantee); `off` is a valid off_t the kernel updates.
        let n = unsafe { libc::sendfile(fd, file_fd, &mut off, count) };
        if n > 0 {
            return Ok(n as usize);
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "file shrank while being sent",
            ));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// TCP_CORK on or off (unix sockets ignore it: the error is irrelevant).
pub fn set_cork(fd: RawFd, on: bool) {
    set_tcp_flag(fd, libc::TCP_CORK, on);
}

/// SO_RCVBUF: the socket's receive buffer (the kernel doubles it and caps it at
/// `net.core.rmem_max`); false if refused. Setting it turns the kernel's autotuning off for
/// this socket.
pub fn set_receive_buffer(fd: RawFd, bytes: usize) -> bool {
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: setsockopt with a valid pointer to an int of the size given, for the call only.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

/// A boolean IPPROTO_TCP option (TCP_NODELAY, TCP_CORK) on a socket; false if refused.
pub fn set_tcp_flag(fd: RawFd, option: libc::c_int, on: bool) -> bool {
    let v: libc::c_int = on.into();
    // SAFETY: setsockopt with a valid pointer to an int of the size given, for the call only.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            option,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

/// poll(2) on one descriptor with a deadline, retrying on EINTR.
pub fn wait_fd(fd: RawFd, writable: bool, timeout: Duration) -> io::Result<bool> {
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ms = left.as_millis().min(i32::MAX as u128) as i32;
        let mut pfd = libc::pollfd {
            fd,
            events: if writable {
                libc::POLLOUT
            } else {
                libc::POLLIN
            },
            revents: 0,
        };
        // SAFETY: `pfd` is a valid, initialized pollfd that lives across the call; nfds is 1.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            if left.is_zero() {
                return Ok(false);
            }
            continue;
        }
        // POLLHUP/POLLERR also count as "ready": the next read/write reports what happened.
        return Ok(true);
    }
}
