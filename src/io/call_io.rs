//! A stream call's body and reply, whichever protocol carries the stream: [`CallBody`] and
//! [`CallReply`], one arm per protocol (HTTP/2's `io::h2::stream`, HTTP/3's
//! `io::h3::stream`). The WSGI bridge's one `wsgi.input` source (`wsgi::body_source`) and one
//! stream response (`wsgi::h2::response`) are written over these, so a stream of either
//! protocol is the same `StreamCall`, run by the same `run_stream`; the match is one per read
//! or per block, where the work behind it is a frame.

use std::io;
use std::time::Duration;

use bytes::Bytes;

use super::h2::stream::{StreamBody, StreamReply};
use super::h3::stream::{H3Body, H3Reply};
use super::transport::Cut;

/// A stream's request body.
pub enum CallBody {
    H2(StreamBody),
    /// Boxed: most calls have no body, and the stream's state is large.
    H3(Box<H3Body>),
}

impl CallBody {
    /// Up to `max` bytes, waiting up to `timeout` for more; empty at the end (see
    /// `StreamBody::read` for the errors, the same on both protocols).
    pub fn read(&mut self, max: usize, timeout: Duration) -> io::Result<Bytes> {
        match self {
            CallBody::H2(b) => b.read(max, timeout),
            CallBody::H3(b) => b.read(max, timeout),
        }
    }
}

/// A stream's response.
pub enum CallReply {
    H2(StreamReply),
    H3(H3Reply),
}

impl CallReply {
    /// What the `--timeout` watcher ends the call through.
    pub fn cut(&self) -> Cut {
        match self {
            CallReply::H2(r) => Cut::Stream(r.cut_handle()),
            CallReply::H3(r) => Cut::Stream(r.cut_handle()),
        }
    }

    /// The head: `status` and the fields (connection-specific ones dropped by the caller);
    /// `end`: no body follows.
    pub fn send_head<'a>(
        &mut self,
        status: u16,
        fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
        end: bool,
    ) -> io::Result<()> {
        match self {
            CallReply::H2(r) => r.send_head(status, fields, end),
            CallReply::H3(r) => r.send_head(status, fields, end),
        }
    }

    /// An interim answer (`103 Early Hints`).
    pub fn send_interim<'a>(
        &mut self,
        status: u16,
        fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    ) -> io::Result<()> {
        match self {
            CallReply::H2(r) => r.send_interim(status, fields),
            CallReply::H3(r) => r.send_interim(status, fields),
        }
    }

    /// `data` sent at once without waiting (`Ok(true)`), or nothing sent (`Ok(false)`: call
    /// [`send_data`](CallReply::send_data), with the GIL released). HTTP/3 always waits.
    pub fn send_data_now(&mut self, data: &Bytes, end: bool) -> io::Result<bool> {
        match self {
            CallReply::H2(r) => r.send_data_now(data, end),
            CallReply::H3(_) => Ok(false),
        }
    }

    /// Body bytes, waiting for the client's window at most `timeout` per wait.
    pub fn send_data(&mut self, data: Bytes, end: bool, timeout: Duration) -> io::Result<()> {
        match self {
            CallReply::H2(r) => r.send_data(data, end, timeout),
            CallReply::H3(r) => r.send_data(data, end, timeout),
        }
    }

    /// Cut the stream (the app failed after the head, or fell short of its Content-Length).
    pub fn reset(&mut self) {
        match self {
            CallReply::H2(r) => r.reset(),
            CallReply::H3(r) => r.reset(),
        }
    }
}
