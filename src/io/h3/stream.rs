//! One HTTP/3 request stream as the thread that runs its app call sees it: [`H3Body`] (the
//! request's DATA frames) and [`H3Reply`] (the response's HEADERS and DATA), the HTTP/3
//! counterparts of HTTP/2's `StreamBody` and `StreamReply`, behind the same protocol-neutral
//! `io::call_io`.
//!
//! Both are driven from the app thread, never from the loop: quinn's stream handles are
//! thread-safe (each call locks the connection's state and wakes its driver task on the loop),
//! so the app thread polls the `h3` crate's futures itself with a waker that unparks it
//! (`io::streams::wait::block_on`), while the connection's driver task on the loop does the UDP I/O. Flow
//! control is quinn's: the client's credit is given back as the app reads, and a send waits
//! while quinn's send buffer for the stream is full, so neither side buffers more than a
//! window.
//!
//! A head (the answer's HEADERS, an interim 103 or 100, a head-only answer's FIN) is never
//! waited for: the app thread sends it holding the GIL, and a client that grants the stream no
//! credit would hold every thread of the process behind it. A head the window cannot take at
//! once is *parked* (as HTTP/2's blocks are): the part-written frame stays
//! with the stream and a pump task of the loop ([`pump`]) finishes it, and what was parked
//! after it, as the client opens the window, or resets the stream after `--write-timeout`.
//! Body DATA, sent with the GIL released, goes after the parked heads.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::thread::Thread;
use std::time::Duration;

use atomic_waker::AtomicWaker;
use bytes::{Buf, Bytes};
use h3::error::Code;
use h3::server::RequestStream;
use sluicegate_proto::h3::BodyCount;
use sluicegate_proto::ProtoError;

use crate::io::streams::cut::{CutTarget, StreamCut};
use crate::io::streams::head::response_of;
use crate::io::streams::reply::{StreamIn, StreamOut};
use crate::io::streams::tasks::TaskShared;
use crate::io::streams::timer;
use crate::io::streams::wait::{block_on, cut_error};

/// The response half of a request stream.
pub type SendHalf = RequestStream<h3_quinn::SendStream<Bytes>, Bytes>;
/// The request half of a request stream.
pub type RecvHalf = RequestStream<h3_quinn::RecvStream, Bytes>;

/// DATA is handed to quinn in pieces of at most this: each piece's wait is bounded by the
/// write timeout on its own, so a large answer to a slow client is not cut while it moves.
const SEND_PIECE: usize = 256 * 1024;

fn too_large() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, ProtoError::PayloadTooLarge)
}

fn gone(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionReset, e.to_string())
}

/// A response's side of the stream, shared by the app thread, the `--timeout` watcher and
/// the stream's pump task.
struct Shared {
    send: Mutex<SendSide>,
    /// Cut by the watcher: every later send fails; a send waiting now stops waiting.
    cut: AtomicBool,
    /// The thread waiting in a send (the watcher unparks it at a cut).
    waiting: Mutex<Option<Thread>>,
    /// The loop's tasks: where a parked head's pump runs.
    tasks: Arc<TaskShared>,
    write_timeout: Duration,
    /// The pump, woken by a cut or a reset.
    pump_waker: AtomicWaker,
    /// The app thread waiting for the pump to finish (its DATA goes after the heads).
    pumped: AtomicWaker,
}

struct SendSide {
    stream: SendHalf,
    head_sent: bool,
    /// The stream was finished (FIN) or reset.
    ended: bool,
    /// Heads (and a head-only answer's FIN) waiting behind the one being written.
    parked: VecDeque<Head>,
    /// A frame `h3` holds part-written: its send waited for the window and was let go.
    flushing: bool,
    /// A pump task is sending what is parked.
    pumping: bool,
    /// The `--timeout` watcher's 504 is what is parked: a cut does not reset it.
    cut_answered: bool,
}

/// What is parked: a head, or the FIN after a head-only answer.
enum Head {
    Fields(http::Response<()>),
    Fin,
}

impl SendSide {
    fn reset(&mut self, code: Code) {
        if !self.ended {
            self.stream.stop_stream(code);
            self.ended = true;
        }
    }

    /// Send `head` without waiting: now if the window takes it (and nothing is parked before
    /// it), else parked for a pump task (started if none runs).
    fn head_or_park(&mut self, head: Head, shared: &Arc<Shared>) -> io::Result<()> {
        if self.ended {
            return Err(cut_error());
        }
        if self.pumping {
            self.parked.push_back(head);
            return Ok(());
        }
        match self.start(head, &mut Context::from_waker(Waker::noop())) {
            Poll::Ready(r) => r,
            Poll::Pending => {
                self.pumping = true;
                shared.tasks.spawn(pump(Arc::clone(shared)));
                Ok(())
            }
        }
    }

    /// Begin sending `head`: `Pending` when the window took part of it (`flushing`: the rest
    /// is [`drain`](SendSide::drain)'s).
    fn start(&mut self, head: Head, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let fin = matches!(head, Head::Fin);
        let polled = match head {
            Head::Fields(r) => std::pin::pin!(self.stream.send_response(r)).poll(cx),
            Head::Fin => std::pin::pin!(self.stream.finish()).poll(cx),
        };
        match polled {
            Poll::Ready(Ok(())) => {
                self.ended |= fin;
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => {
                self.ended = true;
                Poll::Ready(Err(gone(e)))
            }
            Poll::Pending => {
                self.flushing = true;
                if fin {
                    // The frame written was the FIN's grease frame: the FIN follows it.
                    self.parked.push_front(Head::Fin);
                }
                Poll::Pending
            }
        }
    }

    /// The pump's work: finish the part-written frame, then send what is parked, in order.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            if self.ended {
                self.parked.clear();
                self.flushing = false;
                return Poll::Ready(());
            }
            if self.flushing {
                match self.stream.poll_ready(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Err(_)) => self.ended = true,
                    Poll::Ready(Ok(())) => self.flushing = false,
                }
                continue;
            }
            let Some(next) = self.parked.pop_front() else {
                return Poll::Ready(());
            };
            let _ = self.start(next, cx);
        }
    }
}

/// A stream's parked heads, sent by a task of the loop as the client opens the window; the
/// stream is reset if they are not all sent within `--write-timeout` (or at a cut).
async fn pump(shared: Arc<Shared>) {
    let drained = std::future::poll_fn(|cx| {
        shared.pump_waker.register(cx.waker());
        let mut side = shared.send.lock().unwrap();
        if shared.cut.load(Ordering::Acquire) && !side.cut_answered {
            side.reset(Code::H3_REQUEST_CANCELLED);
        }
        side.drain(cx)
    });
    let timed_out = timer::timeout(shared.write_timeout, drained).await.is_err();
    let mut side = shared.send.lock().unwrap();
    if timed_out {
        side.reset(Code::H3_REQUEST_CANCELLED);
        side.parked.clear();
        side.flushing = false;
    }
    side.pumping = false;
    drop(side);
    shared.pumped.wake();
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
        }
    }

    fn send_continue(&mut self) {
        self.continue_owed = false;
        let shared = &self.reply;
        let mut side = shared.send.lock().unwrap();
        if side.head_sent || side.ended || shared.cut.load(Ordering::Acquire) {
            return;
        }
        if let Ok(interim) = response_of(100, std::iter::empty()) {
            // Never waited for: parked if the window cannot take it now. A failure shows at
            // the read that follows.
            let _ = side.head_or_park(Head::Fields(interim), shared);
        }
    }

    /// The request is malformed (RFC 9114 §4.1.2): the answer's side of the stream is reset
    /// with H3_MESSAGE_ERROR, so no answer can follow; the app's read fails.
    fn refuse(&mut self, e: ProtoError) -> io::Error {
        if self.malformed.is_none() {
            self.malformed = Some(e);
            // No STOP_SENDING here: h3-quinn's `stop_sending` panics while a read is under
            // way; the receiving half's drop at the call's end stops the client.
            self.reply
                .send
                .lock()
                .unwrap()
                .reset(Code::H3_MESSAGE_ERROR);
        }
        self.ended = true;
        self.pending = Bytes::new();
        io::Error::new(io::ErrorKind::InvalidData, e)
    }
}

impl StreamIn for H3Body {
    /// Up to `max` body bytes, waiting up to `timeout` for a DATA frame; empty at the end of
    /// the body. The errors are HTTP/2's `StreamBody::read`'s: `TimedOut`,
    /// `ConnectionReset`, or `InvalidData` carrying [`ProtoError::PayloadTooLarge`] or, for a
    /// malformed body, [`ProtoError::BadRequest`].
    fn read(&mut self, max: usize, timeout: Duration) -> io::Result<Bytes> {
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
}

/// The `--timeout` watcher's cut (`io::streams::cut`). A send in progress on the app thread
/// stops waiting and resets the stream itself.
impl CutTarget for Shared {
    fn cut(self: Arc<Self>, answer: bool) {
        let shared = &self;
        shared.cut.store(true, Ordering::Release);
        let Ok(mut side) = shared.send.try_lock() else {
            if let Some(t) = shared.waiting.lock().unwrap().as_ref() {
                t.unpark();
            }
            shared.pump_waker.wake();
            return;
        };
        if side.ended {
            return;
        }
        if answer && !side.head_sent {
            let fields = [(&b"content-length"[..], &b"0"[..])];
            if let Ok(response) = response_of(504, fields.into_iter()) {
                // Parked behind what the window has not taken yet, never waited for.
                side.cut_answered = true;
                side.head_sent = true;
                let sent = side.head_or_park(Head::Fields(response), shared);
                if sent
                    .and_then(|()| side.head_or_park(Head::Fin, shared))
                    .is_ok()
                {
                    return;
                }
            }
        }
        side.reset(Code::H3_REQUEST_CANCELLED);
        drop(side);
        shared.pump_waker.wake();
    }
}

impl H3Reply {
    /// `write_timeout`: `--write-timeout`, the longest wait for the client's window; `tasks`:
    /// the loop's, where a parked head is sent from.
    pub fn new(stream: SendHalf, write_timeout: Duration, tasks: Arc<TaskShared>) -> H3Reply {
        H3Reply {
            shared: Arc::new(Shared {
                send: Mutex::new(SendSide {
                    stream,
                    head_sent: false,
                    ended: false,
                    parked: VecDeque::new(),
                    flushing: false,
                    pumping: false,
                    cut_answered: false,
                }),
                cut: AtomicBool::new(false),
                waiting: Mutex::new(None),
                tasks,
                write_timeout,
                pump_waker: AtomicWaker::new(),
                pumped: AtomicWaker::new(),
            }),
        }
    }

    /// The send side once no pump runs (the parked heads went), waiting up to `timeout`
    /// with the GIL released by the caller; a failed wait resets the stream.
    fn side_after_heads(&self, timeout: Duration) -> io::Result<MutexGuard<'_, SendSide>> {
        let shared = &self.shared;
        loop {
            let side = shared.send.lock().unwrap();
            if !side.pumping {
                return Ok(side);
            }
            drop(side);
            let pumped = block_on(timeout, Some(&shared.cut), |cx| {
                shared.pumped.register(cx.waker());
                match shared.send.lock().unwrap().pumping {
                    true => Poll::Pending,
                    false => Poll::Ready(()),
                }
            });
            if let Err(e) = pumped {
                shared
                    .send
                    .lock()
                    .unwrap()
                    .reset(Code::H3_REQUEST_CANCELLED);
                shared.pump_waker.wake();
                return Err(e);
            }
        }
    }

    /// Run `f` on the send side, waiting at most `timeout` per wait; a cut meanwhile resets
    /// the stream.
    fn with_side<T>(
        &self,
        timeout: Duration,
        f: impl FnOnce(&mut SendSide, &dyn Fn(&mut SendSide, Wait) -> io::Result<()>) -> io::Result<T>,
    ) -> io::Result<T> {
        let shared = &self.shared;
        let mut side = self.side_after_heads(timeout)?;
        if shared.cut.load(Ordering::Acquire) || side.ended {
            return Err(cut_error());
        }
        *shared.waiting.lock().unwrap() = Some(std::thread::current());
        let wait = |side: &mut SendSide, what: Wait| -> io::Result<()> {
            let cut = Some(&shared.cut);
            let stream = &mut side.stream;
            let done = match what {
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
}

impl StreamOut for H3Reply {
    /// The watcher's hold on this stream (`--timeout`).
    fn cut_handle(&self) -> StreamCut {
        StreamCut::new(Arc::clone(&self.shared) as Arc<dyn CutTarget>)
    }

    /// Send the head (`status`, the fields as `io::streams::head::response_of` takes them);
    /// `end`: no body follows. Never waits (the caller holds the GIL): parked if the window
    /// cannot take it now.
    fn send_head<'a>(
        &mut self,
        status: u16,
        fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
        end: bool,
    ) -> io::Result<()> {
        let response = response_of(status, fields)?;
        let shared = &self.shared;
        let mut side = shared.send.lock().unwrap();
        if shared.cut.load(Ordering::Acquire) || side.ended {
            return Err(cut_error());
        }
        side.head_or_park(Head::Fields(response), shared)?;
        side.head_sent = true;
        if end {
            side.head_or_park(Head::Fin, shared)?;
        }
        Ok(())
    }

    /// An interim answer (`103 Early Hints`) before the head; never waits, as the head.
    fn send_interim<'a>(
        &mut self,
        status: u16,
        fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    ) -> io::Result<()> {
        let response = response_of(status, fields)?;
        let shared = &self.shared;
        let mut side = shared.send.lock().unwrap();
        if shared.cut.load(Ordering::Acquire) || side.ended || side.head_sent {
            return Err(cut_error());
        }
        side.head_or_park(Head::Fields(response), shared)
    }

    /// Send body bytes as DATA frames, waiting for the client's window up to `timeout` per
    /// piece; `end`: the last of the body (the stream is finished).
    fn send_data(&mut self, mut data: Bytes, end: bool, timeout: Duration) -> io::Result<()> {
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
    fn reset(&mut self) {
        self.shared
            .send
            .lock()
            .unwrap()
            .reset(Code::H3_INTERNAL_ERROR);
        self.shared.pump_waker.wake();
    }
}

/// What a send of body bytes waits for.
enum Wait {
    Data(Bytes),
    Finish,
}
