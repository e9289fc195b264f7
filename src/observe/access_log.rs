//! The access log's writer: one line per request (made by `observe::log_line`), written to the
//! descriptor the Python front opened, without ever making a request wait for the disk.
//!
//! Lines are made on the thread that finishes the request and appended, under a lock held for a
//! copy, to a buffer of at most [`BUFFER_MAX`] bytes; a writer thread writes what piled up every
//! [`FLUSH_EVERY`] (sooner past [`FLUSH_AT`]), so a request costs no system call and no wake-up,
//! and a slow disk never stalls the event loop or an app thread: when the buffer is full the
//! line is dropped and counted (`dropped`), never waited for. (A channel with a wake-up per line
//! cost 5.8 µs of CPU per request and halved S6's throughput.) `USR1` replaces the descriptor in
//! place; the server flushes what is left when it stops.
//!
//! Lines stay whole when several workers share one pipe (`--access-log -` under Docker or
//! systemd): the kernel keeps a pipe write whole only up to `PIPE_BUF` (4,096 bytes), so to a
//! pipe a batch goes out in writes of at most [`PIPE_BUF`] that end on a line's end, and a line
//! that would be longer is made again with the fields the client wrote cut short
//! (`Format::make_line_within`), so it fits one write. A write that fails (a full
//! disk, a closed pipe) drops its lines: they are counted in `dropped`, and the first failure of
//! a run is told once on stderr.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::log_line::{parse_format, Entry, Format, LINE_KEEP};

/// Bytes of lines waiting for the writer thread at most; more are dropped (and counted).
pub const BUFFER_MAX: usize = 4 * 1024 * 1024;
/// The writer writes what piled up this often...
pub const FLUSH_EVERY: Duration = Duration::from_millis(10);
/// ...or as soon as this much is waiting.
pub const FLUSH_AT: usize = 256 * 1024;
/// The most a write to a pipe may carry and stay whole beside other writers' (POSIX's
/// `PIPE_BUF`; Linux's value).
pub const PIPE_BUF: usize = libc::PIPE_BUF;

pub struct AccessLog {
    format: Format,
    pending: Arc<Pending>,
    pid: u32,
}

/// Lines not yet written, shared with the writer thread.
struct Pending {
    fd: RawFd,
    buf: Mutex<Vec<u8>>,
    wake: Condvar,
    /// Set when the log goes away: the writer writes what is left and ends.
    closed: AtomicBool,
    /// Held from taking a batch to having written it, so batches keep their order.
    writing: Mutex<()>,
    /// Lines dropped: the buffer was full, or their write failed.
    dropped: AtomicU64,
    /// The last write failed (the next failure is not told again).
    failing: AtomicBool,
    /// The descriptor is a pipe (as of the last batch): lines are made to fit one write.
    to_pipe: AtomicBool,
}

impl Pending {
    fn write_out(&self) {
        let _order = self.writing.lock().unwrap();
        let batch = std::mem::take(&mut *self.buf.lock().unwrap());
        if batch.is_empty() {
            return;
        }
        // Asked on each batch, not once: USR1 may put a file where a pipe was.
        let to_pipe = is_pipe(self.fd);
        self.to_pipe.store(to_pipe, Ordering::Relaxed);
        let result = if to_pipe {
            write_whole_lines(self.fd, &batch)
        } else {
            write_all(self.fd, &batch).map_err(|(e, at)| (e, &batch[at..]))
        };
        match result {
            Ok(()) => self.failing.store(false, Ordering::Relaxed),
            Err((e, unwritten)) => {
                let lines = unwritten.iter().filter(|&&b| b == b'\n').count() as u64;
                self.dropped.fetch_add(lines.max(1), Ordering::Relaxed);
                if !self.failing.swap(true, Ordering::Relaxed) {
                    eprintln!(
                        "sluicegate: the access log cannot be written ({e}): {lines} line(s) \
                         dropped, and lines are dropped until a write succeeds \
                         (sluicegate_access_log_dropped_total)"
                    );
                }
            }
        }
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        self.pending.closed.store(true, Ordering::Release);
        self.pending.wake.notify_one();
    }
}

impl AccessLog {
    /// `None` when the log is off (fd < 0). Starts the writer thread.
    pub fn new(fd: i32, format: &str) -> Result<Option<AccessLog>, String> {
        let format = parse_format(format)?;
        if fd < 0 {
            return Ok(None);
        }
        let pending = Arc::new(Pending {
            fd,
            buf: Mutex::new(Vec::with_capacity(FLUSH_AT * 2)),
            wake: Condvar::new(),
            closed: AtomicBool::new(false),
            writing: Mutex::new(()),
            dropped: AtomicU64::new(0),
            failing: AtomicBool::new(false),
            to_pipe: AtomicBool::new(is_pipe(fd)),
        });
        let p = Arc::clone(&pending);
        std::thread::Builder::new()
            .name("sluicegate-accesslog".into())
            .spawn(move || loop {
                {
                    let g = p.buf.lock().unwrap();
                    if g.len() < FLUSH_AT && !p.closed.load(Ordering::Acquire) {
                        let _ = p.wake.wait_timeout(g, FLUSH_EVERY).unwrap();
                    }
                }
                p.write_out();
                if p.closed.load(Ordering::Acquire) {
                    p.write_out();
                    return;
                }
            })
            .map_err(|e| format!("cannot start the access log writer: {e}"))?;
        Ok(Some(AccessLog {
            pending,
            pid: std::process::id(),
            format,
        }))
    }

    /// Lines dropped so far: the writer fell behind, or a write failed.
    pub fn dropped(&self) -> u64 {
        self.pending.dropped.load(Ordering::Relaxed)
    }

    /// Make `e`'s line and hand it to the writer thread (or count it dropped).
    pub fn write(&self, e: &Entry<'_>) {
        // One line buffer per thread, reused: a request's line costs no allocation.
        thread_local! {
            static LINE: std::cell::RefCell<Vec<u8>> =
                std::cell::RefCell::new(Vec::with_capacity(LINE_KEEP));
        }
        LINE.with(|cell| {
            let mut line = cell.borrow_mut();
            line.clear();
            if self.pending.to_pipe.load(Ordering::Relaxed) {
                self.format
                    .make_line_within(&mut line, e, self.pid, PIPE_BUF);
            } else {
                self.format.make_line(&mut line, e, self.pid);
            }
            self.append(&line);
            if line.capacity() > 16 * LINE_KEEP {
                // A line with huge headers: do not keep its buffer.
                *line = Vec::with_capacity(LINE_KEEP);
            }
        });
    }

    /// Append a made line to what the writer thread takes, or drop and count it when full.
    fn append(&self, line: &[u8]) {
        let mut buf = self.pending.buf.lock().unwrap();
        if buf.len() + line.len() > BUFFER_MAX {
            drop(buf);
            self.pending.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        buf.extend_from_slice(line);
        let full = buf.len() >= FLUSH_AT;
        drop(buf);
        if full {
            self.pending.wake.notify_one();
        }
    }

    /// Write what is waiting now, on this thread (the server stopping: the process may leave
    /// without waiting for the writer).
    pub fn flush(&self) {
        self.pending.write_out();
    }
}

fn is_pipe(fd: RawFd) -> bool {
    // SAFETY: fstat fills a zeroed stat struct we own; fd is the log descriptor.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above: a valid out-pointer for the duration of the call.
    let r = unsafe { libc::fstat(fd, &mut st) };
    r == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFIFO
}

/// Write `batch` (whole lines) to a pipe in writes of at most [`PIPE_BUF`] that each end on a
/// line's end, so that no other writer's bytes land inside a line. On failure: the error and
/// what was not written.
fn write_whole_lines(fd: RawFd, batch: &[u8]) -> Result<(), (std::io::Error, &[u8])> {
    let mut rest = batch;
    while !rest.is_empty() {
        let window = &rest[..rest.len().min(PIPE_BUF)];
        let take = if window.len() == rest.len() {
            rest.len()
        } else {
            match window.iter().rposition(|&b| b == b'\n') {
                Some(i) => i + 1,
                // One line longer than PIPE_BUF: alone, whatever its length.
                None => rest
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(rest.len(), |i| i + 1),
            }
        };
        write_all(fd, &rest[..take]).map_err(|(e, at)| (e, &rest[at..]))?;
        rest = &rest[take..];
    }
    Ok(())
}

/// Write all of `bytes`, or fail with the error and how much was written.
fn write_all(fd: RawFd, bytes: &[u8]) -> Result<(), (std::io::Error, usize)> {
    let mut done = 0;
    while done < bytes.len() {
        let rest = &bytes[done..];
        // SAFETY: `rest` is a valid readable slice; fd is the log descriptor owned by the
        // Python front for the server's lifetime.
        let n = unsafe { libc::write(fd, rest.as_ptr() as *const libc::c_void, rest.len()) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err((e, done));
        }
        if n == 0 {
            return Err((std::io::ErrorKind::WriteZero.into(), done));
        }
        done += n as usize;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_to_a_pipe_are_cut_at_line_ends_within_pipe_buf() {
        let mut fds = [0; 2];
        // SAFETY: a valid array of two descriptors for pipe(2) to fill.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let line = [b'x'; 999]
            .iter()
            .chain(b"\n")
            .copied()
            .collect::<Vec<u8>>();
        let batch: Vec<u8> = line.repeat(10);
        write_whole_lines(fds[1], &batch).unwrap();
        let mut got = vec![0u8; 20_000];
        // SAFETY: reads into a buffer we own; the pipe holds 10,000 bytes (< its 64 KiB).
        let n = unsafe { libc::read(fds[0], got.as_mut_ptr() as *mut libc::c_void, got.len()) };
        assert_eq!(n as usize, batch.len());
        assert!(is_pipe(fds[1]));
        // SAFETY: closing the two descriptors made above, once.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
    }
}
