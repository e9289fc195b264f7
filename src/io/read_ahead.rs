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
//!
//! The reader reads into buffers of its own ([`BLOCK`] bytes each), or into buffers the app's
//! side lends it ([`Lend`], for a Content-Length body only): those are the `bytes` objects the
//! app's next `read(n)`s return, filled in order, each whole before the next, by one vectored
//! read across several, so that the kernel's copy is the only one. The first is filled from
//! where one of those reads will start (a block of its own of the right size first, when
//! needed). What a lent buffer is, the reader does not know ([`LentBuf`]).

use std::collections::VecDeque;
use std::io::IoSliceMut;
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
pub const AHEAD_MAX: usize = 2 * 1024 * 1024;
/// A waiting app is woken once this much is buffered (or the socket has nothing more for now,
/// or the body ended). An app faster than the upload (or than the reader, on a busy machine)
/// otherwise waits and is woken for every block or two: each hand-off is a condvar wake, a
/// mutex and the GIL taken back, and two context switches. The app then has that much to work
/// through while the reader goes on, and waits about once per 512 KiB.
const WAKE_APP_AT: usize = 512 * 1024;
/// A reader that stopped at [`AHEAD_MAX`] goes on once the app has taken the buffered bytes
/// down to this: it then reads 1.5 MiB (a few vectored reads) per wake-up. An app slower than
/// the upload (S8's, which hashes what it reads) otherwise wakes the reader, and the reader
/// sleeps again, once per hysteresis: 1 MiB ahead resumed at 512 KiB measured 68.8 ms of
/// server CPU per 64 MiB upload, 2 MiB resumed at 512 KiB 63.8 ms, 4 MiB at 1 MiB 65.0.
const RESUME_AT: usize = 512 * 1024;
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

/// A buffer the app's side lends the reader: the reader fills it from its start, and what it
/// is (a `bytes` object of `wsgi::body`'s) the reader does not know.
pub trait LentBuf: Send + 'static {
    /// The whole buffer.
    fn as_slice(&self) -> &[u8];
    fn as_mut_slice(&mut self) -> &mut [u8];
}

/// A buffer the reader fills from its start: one of its own, or one the app's side lent (`L`).
pub enum AheadBuf<L> {
    Own(Vec<u8>),
    Lent(L),
}

impl<L: LentBuf> AheadBuf<L> {
    /// The whole buffer.
    pub fn as_slice(&self) -> &[u8] {
        match self {
            AheadBuf::Own(v) => v,
            AheadBuf::Lent(l) => l.as_slice(),
        }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        match self {
            AheadBuf::Own(v) => v,
            AheadBuf::Lent(l) => l.as_mut_slice(),
        }
    }
}

/// Buffers the app's side lends the reader ([`ReadAhead::next_block`]).
pub struct Lend<L> {
    /// To be filled in this order, each from its start (all of one size).
    pub bufs: Vec<L>,
    /// The body's bytes still to come where the app's next read starts: the reader starts
    /// filling lent buffers a whole number of their size after that point, so that each holds
    /// exactly what one read of that size returns.
    pub app_left: u64,
    /// The app reads another size now: the lent buffers not yet used are let go first.
    pub replace: bool,
}

/// A buffer and how much of it, from its start, holds body bytes.
pub struct Block<L> {
    pub buf: AheadBuf<L>,
    pub len: usize,
}

impl<L> Default for Block<L> {
    fn default() -> Block<L> {
        Block {
            buf: AheadBuf::Own(Vec::new()),
            len: 0,
        }
    }
}

impl<L: LentBuf> Block<L> {
    /// The bytes read into it.
    pub fn data(&self) -> &[u8] {
        &self.buf.as_slice()[..self.len]
    }

    fn room(&self) -> usize {
        self.buf.as_slice().len() - self.len
    }
}

struct State<L> {
    blocks: VecDeque<Block<L>>,
    /// Bytes in `blocks`.
    buffered: usize,
    /// How the reader ended: every byte of the body read, or the failure.
    end: Option<Result<(), BodyFailure>>,
    stop: bool,
    /// Blocks the app's side is done with, to read into again (no allocation, no fresh pages
    /// to fault in, per block).
    spare: Vec<Vec<u8>>,
    /// Buffers the app's side lent, to be filled in this order before any of the reader's own,
    /// and [`Lend::app_left`] of the latest lending.
    lent: VecDeque<L>,
    align_left: u64,
    /// Each side says when it waits, and the other signals only then, once: a signal is a
    /// system call whether anybody waits or not, so the side that signals clears the flag (a
    /// woken side that is not yet running would otherwise be signalled again for every block
    /// added or taken meanwhile). A woken side that must wait on sets its flag again.
    app_waits: bool,
    reader_waits: bool,
}

impl<L> State<L> {
    fn new() -> State<L> {
        State {
            blocks: VecDeque::new(),
            buffered: 0,
            end: None,
            stop: false,
            spare: Vec::new(),
            lent: VecDeque::new(),
            align_left: 0,
            app_waits: false,
            reader_waits: false,
        }
    }
}

struct Shared<L> {
    state: Mutex<State<L>>,
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
pub struct ReadAhead<L> {
    shared: Arc<Shared<L>>,
    thread: Option<JoinHandle<()>>,
    transport: Transport,
    entry: Option<LoopEntry>,
}

/// What the app's side gets from [`ReadAhead::next_block`].
pub enum Next<L> {
    Block(Block<L>),
    /// Every byte of the body was handed over.
    Done,
    Failed(BodyFailure),
    /// Nothing yet: wait ([`ReadAhead::wait`]) and ask again.
    Empty,
}

impl<L: LentBuf> ReadAhead<L> {
    /// Start reading the rest of the body from `transport`. None if no thread could be started
    /// (the caller reads as before).
    pub fn start(
        transport: Transport,
        until: Until,
        pacing: Pacing,
        entry: Option<LoopEntry>,
    ) -> Option<ReadAhead<L>> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new()),
            changed: Condvar::new(),
        });
        let s = Arc::clone(&shared);
        let reader = transport.clone();
        let thread = std::thread::Builder::new()
            .name("sg-readahead".into())
            .spawn(move || {
                let mut partial = None;
                let end = read_body(&reader, until, &pacing, &s, &mut partial);
                let mut st = s.state.lock().unwrap();
                // A lent buffer partly filled is read bytes like any other.
                if let Some(block) = partial.filter(|b| b.len > 0) {
                    st.buffered += block.len;
                    st.blocks.push_back(block);
                }
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

    /// The next block read, or why there is none. `used` is a buffer of the reader's own whose
    /// bytes the app's side has all taken: the reader reads into it again (no allocation, no
    /// fresh pages to fault in, per block). `lend`: buffers to read into next (Content-Length
    /// only). One lock for all.
    pub fn next_block(&self, used: Option<Vec<u8>>, lend: Lend<L>) -> Next<L> {
        let mut st = self.shared.state.lock().unwrap();
        if let Some(used) = used.filter(|u| u.capacity() > 0) {
            if st.spare.len() < SPARE_MAX {
                st.spare.push(used);
            }
        }
        if lend.replace {
            st.lent.clear();
        }
        if lend.replace || !lend.bufs.is_empty() {
            st.align_left = lend.app_left;
            st.lent.extend(lend.bufs);
        }
        if let Some(block) = st.blocks.pop_front() {
            st.buffered -= block.len;
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
    pub fn finish(mut self) -> (Vec<Block<L>>, Option<Result<(), BodyFailure>>) {
        self.stop_and_join();
        let mut st = self.shared.state.lock().unwrap();
        let blocks = st.blocks.drain(..).collect();
        (blocks, st.end)
    }
}

impl<L> ReadAhead<L> {
    /// Stop the reader, wait for it, and give the connection back to the loop's reading.
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

impl<L> Drop for ReadAhead<L> {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

mod reader;
use reader::read_body;
