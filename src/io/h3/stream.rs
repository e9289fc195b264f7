//! One HTTP/3 request stream as the thread that runs its app call sees it: [`H3Body`] (the
//! request's DATA frames) and [`H3Reply`] (the response's HEADERS and DATA), the HTTP/3
//! counterparts of `io::h2::stream`'s `StreamBody` and `StreamReply`, behind the same
//! protocol-neutral `io::call_io`.
//!
//! Both are driven from the app thread, never from the loop: quinn's stream handles are
//! thread-safe (each call locks the connection's state and wakes its driver task on the loop),
//! so the app thread polls the `h3` crate's futures itself with a waker that unparks it
//! ([`block_on`]), while the connection's driver task on the loop does the UDP I/O. Callers
//! holding the GIL release it first. Flow control is quinn's: the client's credit is given
//! back as the app reads, and a send waits while quinn's send buffer for the stream is full,
//! so neither side buffers more than a window.

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use h3::error::Code;
use h3::server::RequestStream;
use sluicegate_proto::h3::BodyCount;
use sluicegate_proto::ProtoError;

use crate::io::h2::stream::response_of;
use crate::io::inline_call::may_wait;

/// The response half of a request stream.
pub type SendHalf = RequestStream<h3_quinn::SendStream<Bytes>, Bytes>;
/// The request half of a request stream.
pub type RecvHalf = RequestStream<h3_quinn::RecvStream, Bytes>;

/// DATA is handed to quinn in pieces of at most this: each piece's wait is bounded by the
/// write timeout on its own, so a large answer to a slow client is not cut while it moves.
const SEND_PIECE: usize = 256 * 1024;

/// How long the `--timeout` watcher waits to queue its 504 (a HEADERS frame the stream's
/// window takes at once, unless the client never opened it).
const CUT_ANSWER_WAIT: Duration = Duration::from_millis(100);

/// Wakes the app thread parked on a stream.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Poll `f` on this thread until it is ready, `timeout` passes (`TimedOut`), or `cut` is set
/// (the `--timeout` watcher: `TimedOut` too).
fn block_on<T>(
    timeout: Duration,
    cut: Option<&AtomicBool>,
    mut f: impl FnMut(&mut Context<'_>) -> Poll<T>,
) -> io::Result<T> {
    // Most polls are ready at once (quinn takes the bytes into its send buffer): the first
    // one needs no waker, no clock reading and no allocation.
    if let Poll::Ready(v) = f(&mut Context::from_waker(Waker::noop())) {
        return Ok(v);
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let until = Instant::now() + timeout;
    loop {
        if let Poll::Ready(v) = f(&mut cx) {
            return Ok(v);
        }
        if cut.is_some_and(|c| c.load(Ordering::Acquire)) {
            return Err(cut_error());
        }
        // A call run inline on the loop's thread gives the loop to another thread first: the
        // loop's tasks are what will move this stream.
        if !may_wait() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let now = Instant::now();
        if now >= until {
            return Err(io::ErrorKind::TimedOut.into());
        }
        std::thread::park_timeout(until - now);
    }
}

fn cut_error() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "the stream was cut (--timeout)")
}

fn too_large() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, ProtoError::PayloadTooLarge)
}

fn gone(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionReset, e.to_string())
}

/// A response's side of the stream, shared by the app thread and the `--timeout` watcher.
struct Shared {
    send: Mutex<SendSide>,
    /// Cut by the watcher: every later send fails; a send waiting now stops waiting.
    cut: AtomicBool,
    /// The thread waiting in a send (the watcher unparks it at a cut).
    waiting: Mutex<Option<Thread>>,
}

struct SendSide {
    stream: SendHalf,
    head_sent: bool,
    /// The stream was finished (FIN) or reset.
    ended: bool,
}

impl SendSide {
    fn reset(&mut self, code: Code) {
        if !self.ended {
            self.stream.stop_stream(code);
            self.ended = true;
        }
    }
}

impl Drop for SendSide {
    /// A response never finished must not look whole: quinn would end the stream with a FIN.
    fn drop(&mut self) {
        self.reset(Code::H3_INTERNAL_ERROR);
    }
}

/// The request body of one stream.
pub struct H3Body {
    recv: RecvHalf,
    pending: Bytes,
    ended: bool,
    /// `--limit-body` for a body without a `content-length` (one with it was checked with
    /// the head, and the count holds the DATA to it).
    max_body: Option<u64>,
    /// The DATA received against the `content-length` (proto decides what is malformed).
    count: BodyCount,
    /// Malformed already: every read fails so, and the stream was reset.
    malformed: Option<ProtoError>,
    /// Malformed by the bytes that came with the head: refused at the first read.
    first_fault: Option<ProtoError>,
    /// `Expect: 100-continue`: the interim 100 is owed at the first read.
    continue_owed: bool,
    /// The response's side: the 100, and the reset of a malformed request.
    reply: Arc<Shared>,
    write_timeout: Duration,
}

impl H3Body {
    /// The body of the stream `reply` answers: `expect_continue` sends `100 Continue` at the
    /// first read; `max_body` holds a body of unknown length to the limit; `declared`: its
    /// `content-length`; `first`: the body's bytes already taken from the stream.
    pub fn new(
        recv: RecvHalf,
        reply: &H3Reply,
        expect_continue: bool,
        (max_body, declared): (Option<u64>, Option<u64>),
        first: Bytes,
    ) -> H3Body {
        let mut count = BodyCount::new(declared);
        let first_fault = count.data(first.len()).err();
        H3Body {
            recv,
            pending: first,
            ended: false,
            max_body,
            count,
            malformed: None,
            first_fault,
            continue_owed: expect_continue,
            reply: Arc::clone(&reply.shared),
            write_timeout: reply.write_timeout,
        }
    }

    fn send_continue(&mut self) {
        self.continue_owed = false;
        let shared = &self.reply;
        let mut side = shared.send.lock().unwrap();
        if side.head_sent || side.ended || shared.cut.load(Ordering::Acquire) {
            return;
        }
        let Ok(interim) = response_of(100, std::iter::empty()) else {
            return;
        };
        let mut fut = std::pin::pin!(side.stream.send_response(interim));
        // A failure here shows at the read that follows.
        let _ = block_on(self.write_timeout, Some(&shared.cut), |cx| {
            fut.as_mut().poll(cx)
        });
    }

    /// The request is malformed (RFC 9114 §4.1.2): the answer's side of the stream is reset
    /// with H3_MESSAGE_ERROR, so no answer can follow; the app's read fails.
    fn refuse(&mut self, e: ProtoError) -> io::Error {
        if self.malformed.is_none() {
            self.malformed = Some(e);
            // No STOP_SENDING here: h3-quinn's `stop_sending` panics while a read is under
            // way; the receiving half's drop at the call's end stops the client.
            self.reply.send.lock().unwrap().reset(Code::H3_MESSAGE_ERROR);
        }
        self.ended = true;
        self.pending = Bytes::new();
        io::Error::new(io::ErrorKind::InvalidData, e)
    }

    /// Up to `max` body bytes, waiting up to `timeout` for a DATA frame; empty at the end of
    /// the body. The errors are `io::h2::stream::StreamBody::read`'s: `TimedOut`,
    /// `ConnectionReset`, or `InvalidData` carrying [`ProtoError::PayloadTooLarge`] or, for a
    /// malformed body, [`ProtoError::BadRequest`].
    pub fn read(&mut self, max: usize, timeout: Duration) -> io::Result<Bytes> {
        if let Some(e) = self.malformed.or(self.first_fault.take()) {
            return Err(self.refuse(e));
        }
        if self.continue_owed {
            self.send_continue();
        }
        if self.max_body.is_some_and(|m| self.count.received() > m) {
            return Err(too_large());
        }
        while self.pending.is_empty() && !self.ended {
            let recv = &mut self.recv;
            let next = block_on(timeout, None, |cx| {
                recv.poll_recv_data(cx)
                    .map(|r| r.map(|o| o.map(|mut b| b.copy_to_bytes(b.remaining()))))
            })?;
            match next {
                Ok(Some(b)) => {
                    if let Err(e) = self.count.data(b.len()) {
                        return Err(self.refuse(e));
                    }
                    if self.max_body.is_some_and(|m| self.count.received() > m) {
                        self.ended = true;
                        return Err(too_large());
                    }
                    self.pending = b;
                }
                Ok(None) => {
                    if let Err(e) = self.count.end() {
                        return Err(self.refuse(e));
                    }
                    self.ended = true;
                }
                Err(e) => return Err(gone(e)),
            }
        }
        let n = self.pending.len().min(max);
        Ok(self.pending.split_to(n))
    }
}

/// Where a stream's response goes: its HEADERS, then its DATA.
pub struct H3Reply {
    shared: Arc<Shared>,
    write_timeout: Duration,
}

/// The `--timeout` watcher's hold on a stream: answer it 504 if nothing was sent, else reset
/// it, from a thread that does not run the call.
#[derive(Clone)]
pub struct H3Cut(Arc<Shared>);

impl std::fmt::Debug for H3Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("H3Cut")
    }
}

impl PartialEq for H3Cut {
    fn eq(&self, other: &H3Cut) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for H3Cut {}

impl H3Cut {
    /// `answer`: send `504 Gateway Timeout` if the head was not sent; else reset the stream. A
    /// send in progress on the app thread stops waiting and resets the stream itself.
    pub fn cut(&self, answer: bool) {
        let shared = &self.0;
        shared.cut.store(true, Ordering::Release);
        let Ok(mut side) = shared.send.try_lock() else {
            if let Some(t) = shared.waiting.lock().unwrap().as_ref() {
                t.unpark();
            }
            return;
        };
        if side.ended {
            return;
        }
        if answer && !side.head_sent {
            let fields = [(&b"content-length"[..], &b"0"[..])];
            if let Ok(response) = response_of(504, fields.into_iter()) {
                let sent = {
                    let mut fut = std::pin::pin!(side.stream.send_response(response));
                    block_on(CUT_ANSWER_WAIT, None, |cx| fut.as_mut().poll(cx))
                };
                if let Ok(Ok(())) = sent {
                    side.head_sent = true;
                    {
                        let mut fin = std::pin::pin!(side.stream.finish());
                        let _ = block_on(CUT_ANSWER_WAIT, None, |cx| fin.as_mut().poll(cx));
                    }
                    side.ended = true;
                    return;
                }
            }
        }
        side.reset(Code::H3_REQUEST_CANCELLED);
    }
}

impl H3Reply {
    /// `write_timeout`: `--write-timeout`, the longest wait for the client's window.
    pub fn new(stream: SendHalf, write_timeout: Duration) -> H3Reply {
        H3Reply {
            shared: Arc::new(Shared {
                send: Mutex::new(SendSide {
                    stream,
                    head_sent: false,
                    ended: false,
                }),
                cut: AtomicBool::new(false),
                waiting: Mutex::new(None),
            }),
            write_timeout,
        }
    }

    /// The watcher's hold on this stream (`--timeout`).
    pub fn cut_handle(&self) -> H3Cut {
        H3Cut(Arc::clone(&self.shared))
    }

    /// Run `f` on the send side, waiting at most `timeout` per wait; a cut meanwhile resets
    /// the stream.
    fn with_side<T>(
        &self,
        timeout: Duration,
        f: impl FnOnce(&mut SendSide, &dyn Fn(&mut SendSide, Wait) -> io::Result<()>) -> io::Result<T>,
    ) -> io::Result<T> {
        let shared = &self.shared;
        let mut side = shared.send.lock().unwrap();
        if shared.cut.load(Ordering::Acquire) || side.ended {
            return Err(cut_error());
        }
        *shared.waiting.lock().unwrap() = Some(std::thread::current());
        let wait = |side: &mut SendSide, what: Wait| -> io::Result<()> {
            let cut = Some(&shared.cut);
            let stream = &mut side.stream;
            let done = match what {
                Wait::Head(r) => {
                    let mut fut = std::pin::pin!(stream.send_response(r));
                    block_on(timeout, cut, |cx| fut.as_mut().poll(cx))
                }
                Wait::Data(d) => {
                    let mut fut = std::pin::pin!(stream.send_data(d));
                    block_on(timeout, cut, |cx| fut.as_mut().poll(cx))
                }
                Wait::Finish => {
                    let mut fut = std::pin::pin!(stream.finish());
                    block_on(timeout, cut, |cx| fut.as_mut().poll(cx))
                }
            };
            match done {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => {
                    side.ended = true;
                    Err(gone(e))
                }
                Err(e) => {
                    side.reset(Code::H3_REQUEST_CANCELLED);
                    Err(e)
                }
            }
        };
        let out = f(&mut side, &wait);
        *shared.waiting.lock().unwrap() = None;
        out
    }

    /// Send the head (`status`, the fields as `io::h2`'s `StreamReply::send_head` takes them);
    /// `end`: no body follows.
    pub fn send_head<'a>(
        &mut self,
        status: u16,
        fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
        end: bool,
    ) -> io::Result<()> {
        let response = response_of(status, fields)?;
        self.with_side(self.write_timeout, |side, wait| {
            wait(side, Wait::Head(response))?;
            side.head_sent = true;
            if end {
                wait(side, Wait::Finish)?;
                side.ended = true;
            }
            Ok(())
        })
    }

    /// An interim answer (`103 Early Hints`) before the head.
    pub fn send_interim<'a>(
        &mut self,
        status: u16,
        fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    ) -> io::Result<()> {
        let response = response_of(status, fields)?;
        self.with_side(self.write_timeout, |side, wait| {
            if side.head_sent {
                return Err(cut_error());
            }
            wait(side, Wait::Head(response))
        })
    }

    /// Send body bytes as DATA frames, waiting for the client's window up to `timeout` per
    /// piece; `end`: the last of the body (the stream is finished).
    pub fn send_data(&mut self, mut data: Bytes, end: bool, timeout: Duration) -> io::Result<()> {
        self.with_side(timeout, |side, wait| {
            while !data.is_empty() {
                let piece = data.split_to(data.len().min(SEND_PIECE));
                wait(side, Wait::Data(piece))?;
            }
            if end {
                wait(side, Wait::Finish)?;
                side.ended = true;
            }
            Ok(())
        })
    }

    /// Cut the stream: the app failed after the head, or the body fell short of its
    /// Content-Length.
    pub fn reset(&mut self) {
        self.shared
            .send
            .lock()
            .unwrap()
            .reset(Code::H3_INTERNAL_ERROR);
    }
}

/// What a send waits for.
enum Wait {
    Head(http::Response<()>),
    Data(Bytes),
    Finish,
}
