//! One HTTP/2 stream as the thread that runs its app call sees it: [`StreamBody`] (the
//! request's DATA frames) and [`StreamReply`] (the response's HEADERS and DATA). Both are
//! called from an app thread, never from the loop: the `h2` crate's stream handles
//! are thread-safe, and each call that must wait (a DATA frame still to come, send window still
//! closed) parks the app thread with a waker that unparks it, bounded by a timeout, while the
//! connection's task on the loop does the socket I/O. Callers holding the GIL release
//! it first.
//!
//! Flow control is tied to the app: a DATA frame's bytes are given back to the client's
//! window ([`StreamBody`] releases capacity) only as the app reads them, so a slow reader
//! holds the window and the server buffers at most one window per stream. The response asks
//! for send capacity before each block and sends at most what it was granted, so a client that
//! never opens its window holds an app thread for `--write-timeout` at most, then the stream
//! is reset.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use h2::server::SendResponse;
use h2::{Reason, SendStream};

use super::parked::{Parking, Room};
use crate::io::streams::cut::{CutTarget, StreamCut};
use crate::io::streams::head::response_of;
use crate::io::streams::reply::StreamOut;
use crate::io::streams::wait::{block_on, cut_error};

mod body;
pub use body::StreamBody;

fn gone(e: h2::Error) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionReset, e.to_string())
}

/// A response's state, shared by the app thread that sends it and the `--timeout` watcher
/// that may cut it (`io::streams::StreamCut`). The lock is held for one `h2` call at a time, never while
/// the app thread waits for window.
struct ReplyState {
    respond: SendResponse<Bytes>,
    send: Option<SendStream<Bytes>>,
    /// END_STREAM or RST_STREAM was handed to the `h2` crate.
    ended: bool,
    /// Cut (the `--timeout` watcher, a stop's deadline, a window that never opened): every
    /// later send fails (the client has its answer or a reset).
    cut: bool,
    /// Body bytes the window could not take yet (`parked.rs`): `Some` while a pump task
    /// sends them. Boxed: most replies never park, and stay small.
    parked: Option<Box<Parked>>,
    park: Arc<Parking>,
}

/// A reply's parked bytes, in order.
struct Parked {
    queue: VecDeque<Bytes>,
    len: usize,
    /// The body's last bytes are parked: END_STREAM goes with the last piece.
    end: bool,
    /// An app thread waiting for them to drain (past the parking bounds).
    drain_waker: Option<Waker>,
}

/// What one poll of a pump did.
enum Pumped {
    /// Sent a piece; more is parked.
    Moved,
    /// Nothing left to send (all sent, or the stream ended otherwise).
    Done,
}

impl ReplyState {
    fn reset(&mut self, reason: Reason) {
        self.drop_parked();
        if let Some(mut send) = self.send.take() {
            send.send_reset(reason);
        } else if !self.ended {
            self.respond.send_reset(reason);
        }
        self.ended = true;
    }

    fn drop_parked(&mut self) {
        if let Some(p) = self.parked.take() {
            self.park.release(p.len);
            if let Some(w) = p.drain_waker {
                w.wake();
            }
        }
    }

    /// The pump's step: send as much of the parked bytes as the window grants now.
    fn poll_pump(&mut self, cx: &mut Context<'_>) -> Poll<Pumped> {
        let want = self.parked.as_ref().map_or(0, |p| p.len).min(SEND_PIECE);
        let granted = match self.send.as_mut() {
            Some(send) if want > 0 => {
                send.reserve_capacity(want);
                send.poll_capacity(cx)
            }
            _ => Poll::Ready(None),
        };
        let mut n = match granted {
            Poll::Pending | Poll::Ready(Some(Ok(0))) => return Poll::Pending,
            Poll::Ready(Some(Ok(n))) => n,
            Poll::Ready(None) | Poll::Ready(Some(Err(_))) => {
                self.drop_parked();
                return Poll::Ready(Pumped::Done);
            }
        };
        let (Some(send), Some(p)) = (self.send.as_mut(), self.parked.as_mut()) else {
            return Poll::Ready(Pumped::Done);
        };
        let mut sent = 0;
        while n > 0 {
            let Some(front) = p.queue.front_mut() else {
                break;
            };
            let piece = front.split_to(n.min(front.len()));
            if front.is_empty() {
                p.queue.pop_front();
            }
            n -= piece.len();
            sent += piece.len();
            let last = p.end && p.queue.is_empty();
            if send.send_data(piece, last).is_err() {
                break;
            }
        }
        self.park.release(sent);
        p.len -= sent;
        if let Some(w) = p.drain_waker.take() {
            w.wake();
        }
        if p.len > 0 {
            return Poll::Ready(Pumped::Moved);
        }
        if p.end {
            self.send = None;
            self.ended = true;
        }
        self.parked = None;
        Poll::Ready(Pumped::Done)
    }
}

/// Send a reply's parked bytes as the window opens (`parked.rs`), until none is left (the last
/// piece carries END_STREAM if the body ended), the stream ends otherwise, or no window came for
/// the write timeout (the stream is reset, the connection told).
async fn pump(state: Arc<Mutex<ReplyState>>) {
    let park = Arc::clone(&state.lock().unwrap().park);
    loop {
        let step = crate::io::streams::timer::timeout(
            park.write_timeout,
            std::future::poll_fn(|cx| state.lock().unwrap().poll_pump(cx)),
        )
        .await;
        match step {
            Ok(Pumped::Moved) => park.progressed(),
            Ok(Pumped::Done) => return,
            Err(_) => {
                {
                    let mut st = state.lock().unwrap();
                    st.cut = true;
                    st.reset(Reason::CANCEL);
                }
                park.stall();
                return;
            }
        }
    }
}

impl Drop for ReplyState {
    fn drop(&mut self) {
        if let Some(p) = &self.parked {
            self.park.release(p.len);
        }
    }
}

/// A stream's reply as its body sees it: where the interim `100 Continue` goes.
pub(super) struct Interim(Arc<Mutex<ReplyState>>);

/// Where a response goes: the stream's head, then its DATA.
pub struct StreamReply {
    state: Arc<Mutex<ReplyState>>,
}

/// The `--timeout` watcher's cut (`io::streams::cut`): the lock is taken for one `h2` call.
impl CutTarget for Mutex<ReplyState> {
    fn cut(self: Arc<Self>, answer: bool) {
        let mut st = self.lock().unwrap();
        if st.ended || st.cut {
            st.cut = true;
            return;
        }
        st.cut = true;
        if answer && st.send.is_none() {
            let response = http::Response::builder()
                .status(504)
                .header("content-length", "0")
                .body(())
                .expect("a fixed response");
            if st.respond.send_response(response, true).is_ok() {
                st.ended = true;
                return;
            }
        }
        st.reset(Reason::CANCEL);
    }
}

/// The connection's weak hold on a stream's reply ([`StreamReply::watch`]): at the end of a
/// stop's graceful time the connection resets every stream still open (`open_streams.rs`).
pub struct StreamWatch(std::sync::Weak<Mutex<ReplyState>>);

impl StreamWatch {
    /// Whether the reply is gone: its call and its pump are over (one atomic load: no lock).
    pub fn gone(&self) -> bool {
        self.0.strong_count() == 0
    }

    /// Reset the stream with `CANCEL` if it is still open: `true` if it was (it is counted as
    /// cut). Every later send of its app call fails.
    pub fn cancel(&self) -> bool {
        let Some(st) = self.0.upgrade() else {
            return false;
        };
        let mut st = st.lock().unwrap();
        if st.ended {
            return false;
        }
        st.cut = true;
        st.reset(Reason::CANCEL);
        true
    }
}

/// DATA is sent in pieces of at most this (and of what the window allows): the `h2` crate
/// buffers what it was handed until it is written, so this bounds the memory of one stream.
const SEND_PIECE: usize = 256 * 1024;

impl StreamReply {
    /// `park`: the connection's parking, where bytes the window cannot take wait.
    pub(super) fn new(respond: SendResponse<Bytes>, park: &Arc<Parking>) -> StreamReply {
        StreamReply {
            state: Arc::new(Mutex::new(ReplyState {
                respond,
                send: None,
                ended: false,
                cut: false,
                parked: None,
                park: Arc::clone(park),
            })),
        }
    }

    /// The hold of this stream's body on it, for `Expect: 100-continue`.
    pub(super) fn interim(&self) -> Interim {
        Interim(Arc::clone(&self.state))
    }

    /// The connection's hold on this stream, to cut it at the end of a stop.
    pub(super) fn watch(&self) -> StreamWatch {
        StreamWatch(Arc::downgrade(&self.state))
    }

    /// Past the parking bounds: wait until this stream's parked bytes drained enough to park
    /// `want` more, or (none parked) until its window opens. A wait past `timeout` resets the
    /// stream: the client opened no window for `--write-timeout`.
    fn wait_for_room(&self, want: usize, timeout: Duration) -> io::Result<()> {
        let waited = block_on(timeout, None, |cx| {
            let mut st = self.state.lock().unwrap();
            if st.cut {
                return Poll::Ready(());
            }
            let st = &mut *st;
            if let Some(p) = st.parked.as_mut() {
                if st.park.has_room(want) {
                    return Poll::Ready(());
                }
                p.drain_waker = Some(cx.waker().clone());
                return Poll::Pending;
            }
            let Some(send) = st.send.as_mut() else {
                return Poll::Ready(());
            };
            send.reserve_capacity(want.min(SEND_PIECE));
            match send.poll_capacity(cx) {
                Poll::Ready(Some(Ok(0))) | Poll::Pending => Poll::Pending,
                Poll::Ready(_) => Poll::Ready(()),
            }
        });
        if let Err(e) = waited {
            self.state.lock().unwrap().reset(Reason::CANCEL);
            return Err(e);
        }
        Ok(())
    }
}

impl StreamOut for StreamReply {
    /// The watcher's hold on this stream (`--timeout`).
    fn cut_handle(&self) -> StreamCut {
        StreamCut::new(Arc::clone(&self.state) as Arc<dyn CutTarget>)
    }

    /// Send the head: `status` and the fields (names lower-cased here, values without the
    /// spaces around them, connection-specific ones already dropped by the caller). `end`: no
    /// body follows (HEAD, an empty body).
    fn send_head<'a>(
        &mut self,
        status: u16,
        fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
        end: bool,
    ) -> io::Result<()> {
        let response = response_of(status, fields)?;
        let mut st = self.state.lock().unwrap();
        if st.cut {
            return Err(cut_error());
        }
        let send = st.respond.send_response(response, end).map_err(gone)?;
        if end {
            st.ended = true;
        } else {
            st.send = Some(send);
        }
        Ok(())
    }

    /// Send an interim answer (`status` 1xx: `103 Early Hints`) before the head, with the
    /// fields as [`send_head`] takes them: an informational HEADERS frame, queued like the
    /// head. An error once the head went, or the stream was cut or ended.
    ///
    /// [`send_head`]: StreamReply::send_head
    fn send_interim<'a>(
        &mut self,
        status: u16,
        fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    ) -> io::Result<()> {
        let response = response_of(status, fields)?;
        let mut st = self.state.lock().unwrap();
        if st.cut || st.ended || st.send.is_some() {
            return Err(cut_error());
        }
        st.respond.send_informational(response).map_err(gone)
    }

    /// Send `data` at once if the window has room for all of it (`Ok(true)`), without waiting:
    /// the caller need not release the GIL for that (one release and retake per block was a
    /// tenth of a hello world's instructions). `Ok(false)`: nothing sent, [`send_data`] waits.
    ///
    /// [`send_data`]: StreamReply::send_data
    fn send_data_now(&mut self, data: &Bytes, end: bool) -> io::Result<bool> {
        let mut st = self.state.lock().unwrap();
        if st.cut {
            return Err(cut_error());
        }
        if st.parked.is_some() {
            return Ok(false); // after the parked bytes
        }
        let Some(send) = st.send.as_mut() else {
            return Ok(false);
        };
        if !data.is_empty() {
            if data.len() > SEND_PIECE {
                return Ok(false);
            }
            send.reserve_capacity(data.len());
            if send.capacity() < data.len() {
                return Ok(false);
            }
        }
        send.send_data(data.clone(), end).map_err(gone)?;
        if end {
            st.send = None;
            st.ended = true;
        }
        Ok(true)
    }

    /// Send body bytes as DATA frames as far as the window allows now, and park the rest with
    /// the I/O layer (`parked.rs`): the pump sends them as the window opens, and this thread
    /// goes on. Past the parking bounds this thread waits for room, up to `timeout` for each
    /// step (the lock is not held while waiting), unless every other thread already waits so:
    /// then the bytes park within the server's bound only, or the stream is reset
    /// ([`Parking::room_for`]). `end`: the last of the body.
    fn send_data(&mut self, mut data: Bytes, end: bool, timeout: Duration) -> io::Result<()> {
        loop {
            let mut guard = self.state.lock().unwrap();
            if guard.cut {
                return Err(cut_error());
            }
            let st = &mut *guard;
            let Some(send) = st.send.as_mut() else {
                return if st.ended {
                    Ok(())
                } else {
                    Err(io::ErrorKind::NotConnected.into())
                };
            };
            // Nothing parked before these bytes: send what the window takes now.
            while st.parked.is_none() && !data.is_empty() {
                send.reserve_capacity(data.len().min(SEND_PIECE));
                let n = send.capacity().min(data.len());
                if n == 0 {
                    break;
                }
                let piece = data.split_to(n);
                send.send_data(piece, end && data.is_empty())
                    .map_err(gone)?;
                if end && data.is_empty() {
                    st.send = None;
                    st.ended = true;
                    return Ok(());
                }
            }
            if data.is_empty() {
                if end && st.parked.is_none() {
                    // An empty DATA frame carries END_STREAM.
                    send.send_data(Bytes::new(), true).map_err(gone)?;
                    st.send = None;
                    st.ended = true;
                } else if let (true, Some(p)) = (end, st.parked.as_mut()) {
                    p.end = true;
                }
                return Ok(());
            }
            // The window is shut, or older bytes wait for it: park these behind them, or wait
            // for room (`parked.rs`).
            match st.park.room_for(data.len()) {
                Room::Park => {}
                Room::Wait(seat) => {
                    drop(guard);
                    self.wait_for_room(data.len(), timeout)?;
                    drop(seat);
                    continue;
                }
                Room::Refused => {
                    st.reset(Reason::CANCEL);
                    return Err(io::Error::other(
                        "every other thread waits for a window, and the parking is full",
                    ));
                }
            }
            match st.parked.as_mut() {
                Some(p) => {
                    p.len += data.len();
                    p.queue.push_back(data);
                    p.end = end;
                }
                None => {
                    st.parked = Some(Box::new(Parked {
                        len: data.len(),
                        queue: VecDeque::from([data]),
                        end,
                        drain_waker: None,
                    }));
                    st.park.start_pump(pump(Arc::clone(&self.state)));
                }
            }
            return Ok(());
        }
    }

    /// Cut the stream (RST_STREAM): the app failed after the head, or the body fell short of
    /// its Content-Length.
    fn reset(&mut self) {
        self.state.lock().unwrap().reset(Reason::INTERNAL_ERROR);
    }
}
