//! Reading a large request body ahead of the app, on a thread of its own.
//!
//! An app that works on what it reads (hashes it, parses it, writes it to disk) and reads the
//! socket only when it asks for more leaves the socket undrained meanwhile: the client stops
//! sending once the receive buffer is full, and the upload takes the app's time plus the
//! transfer's. A reader thread keeps draining the socket into blocks, up to [`AHEAD_MAX`]
//! bytes ahead of the app, so that the two overlap (granian does the same: its CPU time in S8
//! is above its wall time). It only starts for a body known to be large (`wsgi::body`
//! decides) and owns the socket's reading side until it is
//! stopped: [`ReadAhead`]'s drop stops and joins it, so the connection never goes back to the
//! event loop with a reader still on it. While it runs, the loop is not told of the arrivals
//! it drains (`LoopCtx::mute_reads`).
//!
//! A Content-Length body is read never past its end. A chunked body's end is only known by
//! decoding it: the reader runs a copy of the body's decoder over what it reads, and stops at
//! the block in which the body ends; the bytes after the end in that block (a pipelined
//! request) are given back to the connection's read buffer by `wsgi::body`.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use sluicegate_proto::h1::decode::BodyDecoder;

use sluicegate_proto::ProtoError;

use super::event_loop::LoopCtx;
use super::transport::Transport;
use crate::config::BodyPace;

/// Why reading the body stopped for good.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyFailure {
    /// The client closed or reset before the body was complete.
    Disconnected,
    /// No bytes for the read timeout.
    TimedOut,
    /// Slower than `--min-body-rate`, or longer than `--body-timeout`.
    TooSlow,
    /// Invalid framing or too large: the answer the server should give if it still can.
    Protocol(ProtoError),
}

/// Bytes read ahead of the app at most.
pub const AHEAD_MAX: usize = 1024 * 1024;
/// A waiting app is woken once this much is buffered (or the socket has nothing more for now,
/// or the body ended). An app faster than the upload (or than the reader, on a busy machine)
/// otherwise waits and is woken for every block or two: each hand-off is a condvar wake, a
/// mutex and the GIL taken back, and two context switches. Half of [`AHEAD_MAX`]: the app then
/// has that much to work through while the reader goes on, and waits about once per 512 KiB.
const WAKE_APP_AT: usize = AHEAD_MAX / 2;
/// A reader that stopped at [`AHEAD_MAX`] goes on once the app has taken the buffered bytes
/// down to this: it then reads several blocks per wake-up instead of one per block taken.
const RESUME_AT: usize = AHEAD_MAX / 2;
/// One read's block. Over loopback (a proxy or client on the same host), a read from a full
/// receive buffer opens the window, and the kernel sends the sender's waiting frames in the
/// reader's context: fewer, larger reads cost less per byte, and make fewer hand-offs to the
/// app.
const BLOCK: usize = 256 * 1024;
/// Blocks kept for the reader to use again: as many as can be ahead, and the one the app reads
/// from. Keeping fewer, a reader that had run `AHEAD_MAX` ahead allocated and zeroed fresh
/// blocks each time the app caught up (new pages faulted in, a block zeroed per block).
/// Memory stays within what the blocks ahead held already, and goes with the reader.
const SPARE_MAX: usize = AHEAD_MAX / BLOCK + 1;
/// The reader looks at its stop flag at least this often while it waits for the socket.
const STOP_CHECK: Duration = Duration::from_millis(50);

#[derive(Default)]
struct State {
    blocks: VecDeque<Vec<u8>>,
    /// Bytes in `blocks`.
    buffered: usize,
    /// How the reader ended: every byte of the body read, or the failure.
    end: Option<Result<(), BodyFailure>>,
    stop: bool,
    /// Blocks the app's side is done with, to read into again (no allocation, no fresh pages
    /// to fault in, per block).
    spare: Vec<Vec<u8>>,
    /// Each side says when it waits, and the other signals only then, once: a signal is a
    /// system call whether anybody waits or not, so the side that signals clears the flag (a
    /// woken side that is not yet running would otherwise be signalled again for every block
    /// added or taken meanwhile). A woken side that must wait on sets its flag again.
    app_waits: bool,
    reader_waits: bool,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when a block is added, the reader ends, room is made, or stop is asked.
    changed: Condvar,
}

/// What the pace and the read timeout need to judge the reader's progress.
pub struct Pacing {
    pub read_timeout: Duration,
    pub pace: BodyPace,
    pub started: Instant,
    /// Raw bytes of the body read before the reader started.
    pub read_before: u64,
}

/// Where the reader stops.
pub enum Until {
    /// After this many more bytes (a Content-Length body).
    Bytes(u64),
    /// At the end of the body as this decoder (a copy of the body's own, in the same state)
    /// finds it: a chunked body. A framing error stops the reader too; the body's decoder
    /// finds the same error in the same block.
    BodyEnd(Box<BodyDecoder>),
}

/// The connection's entry in the loop's epoll set (when it has one), muted for reading while
/// the reader runs.
pub struct LoopEntry {
    pub ctx: Arc<LoopCtx>,
    pub token: usize,
}

/// A running reader. Dropping it stops the reader and waits for it.
pub struct ReadAhead {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    transport: Transport,
    entry: Option<LoopEntry>,
}

/// What the app's side gets from [`ReadAhead::next_block`].
pub enum Next {
    Block(Vec<u8>),
    /// Every byte of the body was handed over.
    Done,
    Failed(BodyFailure),
    /// Nothing yet: wait ([`ReadAhead::wait`]) and ask again.
    Empty,
}

impl ReadAhead {
    /// Start reading the rest of the body from `transport`. None if no thread could be started
    /// (the caller reads as before).
    pub fn start(
        transport: Transport,
        until: Until,
        pacing: Pacing,
        entry: Option<LoopEntry>,
    ) -> Option<ReadAhead> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let s = Arc::clone(&shared);
        let reader = transport.clone();
        let thread = std::thread::Builder::new()
            .name("sg-readahead".into())
            .spawn(move || {
                let end = read_body(&reader, until, &pacing, &s);
                let mut st = s.state.lock().unwrap();
                if let Some(end) = end {
                    st.end = Some(end);
                }
                s.changed.notify_all();
            })
            .ok()?;
        if let Some(e) = &entry {
            e.ctx.mute_reads(transport.fd(), e.token, true);
        }
        Some(ReadAhead {
            shared,
            thread: Some(thread),
            transport,
            entry,
        })
    }

    /// The next block read, or why there is none. `used` is the block whose bytes the app's
    /// side has all taken (empty if none): the reader reads into it again (no allocation, no
    /// fresh pages to fault in, per block). One lock for both.
    pub fn next_block(&self, used: Vec<u8>) -> Next {
        let mut st = self.shared.state.lock().unwrap();
        if used.capacity() > 0 && st.spare.len() < SPARE_MAX {
            st.spare.push(used);
        }
        if let Some(block) = st.blocks.pop_front() {
            st.buffered -= block.len();
            if st.reader_waits && st.buffered <= RESUME_AT {
                st.reader_waits = false;
                // Signalled unlocked: the woken side takes the lock without waiting for it.
                drop(st);
                self.shared.changed.notify_all();
            }
            return Next::Block(block);
        }
        match st.end {
            Some(Ok(())) => Next::Done,
            Some(Err(f)) => Next::Failed(f),
            None => Next::Empty,
        }
    }

    /// Wait until a block comes or the reader ends (call without the GIL).
    pub fn wait(&self) {
        let mut st = self.shared.state.lock().unwrap();
        while st.blocks.is_empty() && st.end.is_none() {
            st.app_waits = true;
            st = self.shared.changed.wait(st).unwrap();
        }
        st.app_waits = false;
    }

    /// Stop the reader and take what it read and nobody took yet, with how it ended (None:
    /// stopped before the end, without a failure).
    pub fn finish(mut self) -> (Vec<Vec<u8>>, Option<Result<(), BodyFailure>>) {
        self.stop_and_join();
        let mut st = self.shared.state.lock().unwrap();
        let blocks = st.blocks.drain(..).collect();
        (blocks, st.end)
    }

    fn stop_and_join(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.shared.state.lock().unwrap().stop = true;
            self.shared.changed.notify_all();
            let _ = thread.join();
            if let Some(e) = self.entry.take() {
                e.ctx.mute_reads(self.transport.fd(), e.token, false);
            }
        }
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// The reader's loop: blocks of up to [`BLOCK`] bytes, until `until`, at most [`AHEAD_MAX`]
/// ahead. Returns how it ended, or None when it was stopped.
fn read_body(
    transport: &Transport,
    until: Until,
    pacing: &Pacing,
    shared: &Shared,
) -> Option<Result<(), BodyFailure>> {
    let (mut left, mut shadow) = match until {
        Until::Bytes(n) => (n, None),
        Until::BodyEnd(d) => (u64::MAX, Some(d)),
    };
    let mut read_total = pacing.read_before;
    let mut last_progress = Instant::now();
    let mut block = Vec::new();
    while left > 0 {
        {
            let mut st = shared.state.lock().unwrap();
            if st.buffered >= AHEAD_MAX {
                while st.buffered > RESUME_AT && !st.stop {
                    st.reader_waits = true;
                    st = shared.changed.wait(st).unwrap();
                }
                st.reader_waits = false;
            }
            if st.stop {
                return None;
            }
        }
        let want = usize::try_from(left).unwrap_or(usize::MAX).min(BLOCK);
        block.resize(want, 0);
        let n = loop {
            match transport.read_some(&mut block) {
                Ok(0) => return Some(Err(BodyFailure::Disconnected)),
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => return Some(Err(BodyFailure::Disconnected)),
            }
            // Nothing there: wait, in slices short enough to notice a stop, and judge the
            // wait as `wsgi::body` does (read timeout, and the body's pace).
            let now = Instant::now();
            let by_timeout = last_progress + pacing.read_timeout;
            let (deadline, failure) = match pacing.pace.deadline(pacing.started, read_total) {
                Some(d) if d < by_timeout => (d, BodyFailure::TooSlow),
                _ => (by_timeout, BodyFailure::TimedOut),
            };
            if now >= deadline {
                return Some(Err(failure));
            }
            {
                let mut st = shared.state.lock().unwrap();
                if st.stop {
                    return None;
                }
                if st.app_waits && st.buffered > 0 {
                    // Nothing more for now: the app takes what there is meanwhile.
                    st.app_waits = false;
                    drop(st);
                    shared.changed.notify_all();
                }
            }
            match transport.wait_readable((deadline - now).min(STOP_CHECK)) {
                Ok(_) => {}
                Err(_) => return Some(Err(BodyFailure::Disconnected)),
            }
        };
        block.truncate(n);
        read_total += n as u64;
        left -= n as u64;
        if let Some(d) = shadow.as_mut() {
            if body_ends_in(d, &block) {
                left = 0;
            }
        }
        last_progress = Instant::now();
        crate::observe::counters::BYTES_IN.fetch_add(n as u64, Ordering::Relaxed);
        // One lock per block: hand this one over and take a spare to read the next into.
        let mut st = shared.state.lock().unwrap();
        st.buffered += n;
        st.blocks.push_back(block);
        block = st.spare.pop().unwrap_or_default();
        if st.app_waits && (st.buffered >= WAKE_APP_AT || left == 0) {
            st.app_waits = false;
            drop(st);
            shared.changed.notify_all();
        }
    }
    Some(Ok(()))
}

/// Run `decoder` over `block`: true if the body ends in it (or its framing is wrong there).
fn body_ends_in(decoder: &mut BodyDecoder, block: &[u8]) -> bool {
    let mut at = 0;
    while at < block.len() && !decoder.is_done() {
        match decoder.decode(&block[at..]) {
            // Every call before the end consumes at least one byte.
            Ok(step) => at += step.consumed.max(1),
            Err(_) => return true,
        }
    }
    decoder.is_done()
}
