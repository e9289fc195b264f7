//! The access log's writer: one line per request (made by `observe::log_line`), written to the
//! descriptor the Python front opened, without ever making a request wait for the disk.
//!
//! Lines are made on the thread that finishes the request and appended, under a lock held for a
//! copy, to a buffer of at most [`BUFFER_MAX`] bytes; a writer thread writes what piled up every
//! [`FLUSH_EVERY`] (sooner past [`FLUSH_AT`]), so a request costs no system call and no wake-up,
//! and a slow disk never stalls the event loop or an app thread: when the buffer is full the
//! line is dropped and counted (`dropped`), never waited for. (A channel with a wake-up per line
//! cost 5.8 µs of CPU per request and halved S6's throughput.) `USR1` replaces the descriptor in
//! place; the stop lets the writer write what is left (`finish`).
//!
//! Lines stay whole when several workers share one pipe (`--access-log -` under Docker or
//! systemd): the kernel keeps a pipe write whole only up to `PIPE_BUF` (4,096 bytes), so to a
//! pipe a batch goes out in writes of at most [`PIPE_BUF`] that end on a line's end, and a line
//! that would be longer is made again with the fields the client wrote cut short
//! (`Format::make_line_within`), so it fits one write. To a descriptor that keeps no write
//! whole (a unix stream socket, systemd's journal stream), each batch is written under a
//! record lock the workers share (`SharedWriteLock`). A write that fails (a full
//! disk, a closed pipe) drops its lines: they are counted in `dropped`, and the first failure of
//! a run is told once on stderr, as is a buffer found full.
//!
//! A stop never waits on the log's reader for longer than it may wait at all (`finish`): a
//! reader that takes no more lines (a pipe nobody reads, a stalled disk) blocks the writer
//! thread in `write`, and the stop used to wait for it behind the flush, for as long as the
//! reader liked. The stop now gives the writer what is left of the graceful timeout, then
//! leaves it: the lines it could not write are counted as dropped and told on stderr, and the
//! abandoned writer writes nothing more, even should its `write` return.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::log_line::{parse_format, Entry, Format, LINE_KEEP};
use super::log_when::When;
use super::statsd::StatsdLines;
use crate::config::Config;

/// Bytes of lines waiting for the writer thread at most; more are dropped (and counted).
pub const BUFFER_MAX: usize = 4 * 1024 * 1024;
/// The writer writes what piled up this often...
pub const FLUSH_EVERY: Duration = Duration::from_millis(10);
/// ...or as soon as this much is waiting.
pub const FLUSH_AT: usize = 256 * 1024;
/// The most a write to a pipe may carry and stay whole beside other writers' (POSIX's
/// `PIPE_BUF`; Linux's value).
pub const PIPE_BUF: usize = libc::PIPE_BUF;

/// Where the lines go instead of a descriptor: handed a batch of whole lines by the writer
/// thread (Python logging's `gunicorn.access` logger, when a logging configuration or
/// `--log-syslog` routes the access log there: see `server`). An error drops the batch.
pub type LineSink = Box<dyn Fn(&[u8]) -> Result<(), String> + Send + Sync>;

pub struct AccessLog {
    format: Format,
    /// `--access-log-when`: which requests get a line.
    when: When,
    /// The environ variables the format names (lowercased), read after the app's call.
    environ_names: Vec<String>,
    /// The access log's writer; None: the log is off (only statsd is on).
    pending: Option<Arc<Pending>>,
    /// `--statsd-host`: each request's metrics, and their writer (datagrams).
    statsd: Option<(StatsdLines, Arc<Pending>)>,
    pid: u32,
}

/// Lines not yet written, shared with the writer thread.
struct Pending {
    fd: RawFd,
    /// Set: batches go to it, not to `fd`.
    sink: Option<LineSink>,
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
    /// Lines of the batch being written not written yet (counted dropped if it is abandoned).
    unwritten: AtomicU64,
    /// The stop gave up on the writer: no more writes (the descriptor may be closed and its
    /// number reused by the time a blocked `write` returns).
    abandoned: AtomicBool,
    /// The writer thread has ended (with `ended`: its last batch written, or failed).
    over: Mutex<bool>,
    ended: Condvar,
    /// A full buffer was told on stderr (once, until a batch is written again).
    full_told: AtomicBool,
}

impl Pending {
    fn write_out(&self) {
        let _order = self.writing.lock().unwrap();
        let batch = std::mem::take(&mut *self.buf.lock().unwrap());
        if batch.is_empty() || self.abandoned.load(Ordering::Acquire) {
            return;
        }
        self.unwritten.store(lines_in(&batch), Ordering::Relaxed);
        // Asked on each batch, not once: USR1 may put a file where a pipe was.
        let to_pipe = self.sink.is_none() && is_pipe(self.fd);
        self.to_pipe.store(to_pipe, Ordering::Relaxed);
        let result = if let Some(sink) = &self.sink {
            sink(&batch).map_err(|e| (std::io::Error::other(e), &batch[..]))
        } else if to_pipe {
            write_whole_lines(self.fd, &batch, &self.unwritten, &self.abandoned)
        } else {
            // A socket, a terminal: no write is kept whole, so the batch is written under the
            // lock every process writing to this descriptor takes (see `SharedWriteLock`).
            let _shared = SharedWriteLock::take(self.fd);
            write_all(self.fd, &batch, &self.abandoned).map_err(|(e, at)| (e, &batch[at..]))
        };
        if self.abandoned.load(Ordering::Acquire) {
            return; // its lines were counted by `finish`
        }
        self.unwritten.store(0, Ordering::Relaxed);
        match result {
            Ok(()) => {
                self.failing.store(false, Ordering::Relaxed);
                self.full_told.store(false, Ordering::Relaxed);
            }
            Err((e, unwritten)) => {
                let lines = lines_in(unwritten);
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

/// The lines in `bytes` (each ends with a newline).
fn lines_in(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        for p in self
            .pending
            .iter()
            .chain(self.statsd.as_ref().map(|(_, p)| p))
        {
            p.closed.store(true, Ordering::Release);
            p.wake.notify_one();
        }
    }
}

impl Pending {
    /// A writer of batches to `fd` (or to `sink`), its thread started from `thread` (a
    /// builder with the thread's name).
    fn start(
        fd: RawFd,
        sink: Option<LineSink>,
        thread: std::thread::Builder,
    ) -> Result<Arc<Pending>, String> {
        let to_pipe = sink.is_none() && is_pipe(fd);
        let pending = Arc::new(Pending {
            fd,
            sink,
            buf: Mutex::new(Vec::with_capacity(FLUSH_AT * 2)),
            wake: Condvar::new(),
            closed: AtomicBool::new(false),
            writing: Mutex::new(()),
            dropped: AtomicU64::new(0),
            failing: AtomicBool::new(false),
            to_pipe: AtomicBool::new(to_pipe),
            unwritten: AtomicU64::new(0),
            abandoned: AtomicBool::new(false),
            over: Mutex::new(false),
            ended: Condvar::new(),
            full_told: AtomicBool::new(false),
        });
        let p = Arc::clone(&pending);
        thread
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
                    *p.over.lock().unwrap() = true;
                    p.ended.notify_all();
                    return;
                }
            })
            .map_err(|e| format!("cannot start the access log writer: {e}"))?;
        Ok(pending)
    }

    /// Append a made line to what the writer thread takes, or drop and count it when full.
    fn append(&self, line: &[u8]) {
        let mut buf = self.buf.lock().unwrap();
        if buf.len() + line.len() > BUFFER_MAX {
            drop(buf);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            if !self.full_told.swap(true, Ordering::Relaxed) {
                eprintln!(
                    "sluicegate: the access log falls behind ({} MiB wait for its reader or \
                     disk): lines are dropped until it catches up \
                     (sluicegate_access_log_dropped_total)",
                    BUFFER_MAX >> 20
                );
            }
            return;
        }
        buf.extend_from_slice(line);
        let full = buf.len() >= FLUSH_AT;
        drop(buf);
        if full {
            self.wake.notify_one();
        }
    }
}

impl AccessLog {
    /// `None` when the log is off (fd < 0 and no `sink`) and no `statsd`. Starts the writer
    /// threads.
    /// The config's `access_log_fd`, `access_log_format`, `access_log_when` and
    /// `access_log_forwarded_for` say where and what.
    pub fn new(
        config: &Config,
        sink: Option<LineSink>,
        statsd: Option<(StatsdLines, LineSink)>,
    ) -> Result<Option<AccessLog>, String> {
        let fd = config.access_log_fd;
        let mut format = parse_format(&config.access_log_format)?;
        if let Format::Uwsgi(u) = &mut format {
            u.forwarded_for = config.access_log_forwarded_for;
        }
        let when = When::parse(&config.access_log_when)?;
        let pending = if fd >= 0 || sink.is_some() {
            let thread = std::thread::Builder::new().name("sg-accesslog".into());
            Some(Pending::start(fd, sink, thread)?)
        } else {
            None
        };
        let statsd = match statsd {
            Some((lines, sink)) => {
                let thread = std::thread::Builder::new().name("sg-statsd".into());
                Some((lines, Pending::start(-1, Some(sink), thread)?))
            }
            None => None,
        };
        if pending.is_none() && statsd.is_none() {
            return Ok(None);
        }
        Ok(Some(AccessLog {
            when,
            environ_names: format.environ_names(),
            pending,
            statsd,
            pid: std::process::id(),
            format,
        }))
    }

    /// The format names a response header: the requests' ends keep their headers for it.
    pub fn wants_extras(&self) -> bool {
        self.pending.is_some() && self.format.names_extras()
    }

    /// The environ variables the format names, lowercased (gunicorn's `{name}e`).
    pub fn environ_names(&self) -> &[String] {
        if self.pending.is_some() {
            &self.environ_names
        } else {
            &[]
        }
    }

    /// Lines dropped so far: the writer fell behind, or a write failed.
    pub fn dropped(&self) -> u64 {
        self.pending
            .as_ref()
            .map_or(0, |p| p.dropped.load(Ordering::Relaxed))
    }

    /// Make `e`'s line (and its statsd metrics) and hand it to the writer thread (or count it
    /// dropped).
    pub fn write(&self, e: &Entry<'_>) {
        // One line buffer per thread, reused: a request's line costs no allocation.
        thread_local! {
            static LINE: std::cell::RefCell<Vec<u8>> =
                std::cell::RefCell::new(Vec::with_capacity(LINE_KEEP));
        }
        LINE.with(|cell| {
            let mut line = cell.borrow_mut();
            if let Some(pending) = self.pending.as_ref().filter(|_| self.when.logs(e)) {
                line.clear();
                if pending.to_pipe.load(Ordering::Relaxed) {
                    self.format
                        .make_line_within(&mut line, e, self.pid, PIPE_BUF);
                } else {
                    self.format.make_line(&mut line, e, self.pid);
                }
                pending.append(&line);
            }
            if let Some((lines, pending)) = &self.statsd {
                line.clear();
                lines.make_lines(&mut line, e);
                pending.append(&line);
            }
            if line.capacity() > 16 * LINE_KEEP {
                // A line with huge headers: do not keep its buffer.
                *line = Vec::with_capacity(LINE_KEEP);
            }
        });
    }

    /// The server stops: let the writer thread write what is waiting, for `within` at most,
    /// then leave it (see the module doc): what it could not write is counted as dropped and
    /// told on stderr. Returns the lines so dropped.
    pub fn finish(&self, within: Duration) -> u64 {
        if let Some((_, p)) = &self.statsd {
            p.finish(STATSD_LAST_SEND);
        }
        match &self.pending {
            Some(p) => p.finish(within),
            None => 0,
        }
    }
}

/// The most a stop waits for the last statsd datagrams (a datagram send does not block long).
const STATSD_LAST_SEND: Duration = Duration::from_millis(200);

impl Pending {
    fn finish(&self, within: Duration) -> u64 {
        let p = self;
        p.closed.store(true, Ordering::Release);
        p.wake.notify_one();
        let over = p.over.lock().unwrap();
        let (over, _) = p
            .ended
            .wait_timeout_while(over, within, |over| !*over)
            .unwrap();
        if *over {
            return 0;
        }
        drop(over);
        p.abandoned.store(true, Ordering::Release);
        let waiting = lines_in(&std::mem::take(&mut *p.buf.lock().unwrap()));
        let lost = waiting + p.unwritten.swap(0, Ordering::Relaxed);
        p.dropped.fetch_add(lost, Ordering::Relaxed);
        eprintln!(
            "sluicegate: the access log took no more lines for {:.1}s at the stop: {lost} \
             line(s) dropped (sluicegate_access_log_dropped_total {})",
            within.as_secs_f64(),
            p.dropped.load(Ordering::Relaxed)
        );
        lost
    }
}

/// A POSIX record lock on the whole of the log's descriptor, held while a batch is written to
/// a descriptor that is neither a pipe nor a regular file (a unix stream socket, as systemd's
/// journal gives a service for its standard output; a terminal). Such a descriptor keeps no
/// write whole: a large write goes out in pieces, and another worker's write could land
/// between two of them (two workers tore about one line in 300 under load). Record locks
/// belong to a process, so the workers, which all inherited the descriptor, exclude each other
/// (a lock on the shared open file description, `flock`, would not); the kernel drops the lock
/// of a process that dies. A regular file needs none (`O_APPEND` writes are not interleaved);
/// a descriptor that takes no lock is written without one.
struct SharedWriteLock {
    fd: Option<RawFd>,
}

impl SharedWriteLock {
    fn take(fd: RawFd) -> SharedWriteLock {
        if is_regular_file(fd) {
            return SharedWriteLock { fd: None };
        }
        let locked = loop {
            if record_lock(fd, libc::F_WRLCK) == 0 {
                break true;
            }
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                break false;
            }
        };
        SharedWriteLock {
            fd: locked.then_some(fd),
        }
    }
}

impl Drop for SharedWriteLock {
    fn drop(&mut self) {
        if let Some(fd) = self.fd {
            record_lock(fd, libc::F_UNLCK);
        }
    }
}

/// `fcntl(F_SETLKW)` of `kind` over the whole of `fd`; the call's result.
fn record_lock(fd: RawFd, kind: libc::c_int) -> libc::c_int {
    // SAFETY: a zeroed flock is a valid value; its fields are set below.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: fcntl with F_SETLKW reads the flock we own for the duration of the call; fd is
    // the log descriptor.
    unsafe { libc::fcntl(fd, libc::F_SETLKW, &lock) }
}

fn is_regular_file(fd: RawFd) -> bool {
    file_type(fd) == Some(libc::S_IFREG)
}

/// The `S_IFMT` bits of `fd`'s mode, None when `fstat` fails.
fn file_type(fd: RawFd) -> Option<libc::mode_t> {
    // SAFETY: fstat fills a zeroed stat struct we own; fd is the log descriptor.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above: a valid out-pointer for the duration of the call.
    let r = unsafe { libc::fstat(fd, &mut st) };
    (r == 0).then_some(st.st_mode & libc::S_IFMT)
}

fn is_pipe(fd: RawFd) -> bool {
    file_type(fd) == Some(libc::S_IFIFO)
}

/// Write `batch` (whole lines) to a pipe in writes of at most [`PIPE_BUF`] that each end on a
/// line's end, so that no other writer's bytes land inside a line. On failure: the error and
/// what was not written.
/// `unwritten` is lowered by each write's lines; `abandoned` stops the writes (see `Pending`).
fn write_whole_lines<'b>(
    fd: RawFd,
    batch: &'b [u8],
    unwritten: &AtomicU64,
    abandoned: &AtomicBool,
) -> Result<(), (std::io::Error, &'b [u8])> {
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
        write_all(fd, &rest[..take], abandoned).map_err(|(e, at)| (e, &rest[at..]))?;
        unwritten.fetch_sub(lines_in(&rest[..take]), Ordering::Relaxed);
        rest = &rest[take..];
    }
    Ok(())
}

/// Write all of `bytes`, or fail with the error and how much was written; nothing more once
/// `abandoned` is set.
fn write_all(
    fd: RawFd,
    bytes: &[u8],
    abandoned: &AtomicBool,
) -> Result<(), (std::io::Error, usize)> {
    let mut done = 0;
    while done < bytes.len() {
        if abandoned.load(Ordering::Acquire) {
            return Err((std::io::ErrorKind::Interrupted.into(), done));
        }
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
        let unwritten = AtomicU64::new(10);
        write_whole_lines(fds[1], &batch, &unwritten, &AtomicBool::new(false)).unwrap();
        assert_eq!(unwritten.load(Ordering::Relaxed), 0);
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
