//! A stream call's body and reply, whichever protocol carries the stream: [`CallBody`] and
//! [`CallReply`], the enum dispatch over `io::streams::reply`'s [`StreamIn`] and
//! [`StreamOut`] (HTTP/2's `io::h2::stream`, HTTP/3's `io::h3::stream`). A `StreamCall`
//! carries them, so it is one concrete value, with no box, for the inline queue and the pool;
//! each method is one match, where the work behind it is a frame (`reply.rs` says why not
//! `dyn`). The WSGI bridge sees only the traits.

use std::io;
use std::time::Duration;

use bytes::Bytes;

use super::h2::stream::{StreamBody, StreamReply};
use super::h3::stream::{H3Body, H3Reply};
use super::streams::cut::StreamCut;
use super::streams::reply::{StreamIn, StreamOut};
use super::transport::Cut;

/// A stream's request body.
pub enum CallBody {
    H2(StreamBody),
    /// Boxed: most calls have no body, and the stream's state is large.
    H3(Box<H3Body>),
}

impl StreamIn for CallBody {
    fn read(&mut self, max: usize, timeout: Duration) -> io::Result<Bytes> {
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
        Cut::Stream(self.cut_handle())
    }
}

impl StreamOut for CallReply {
    fn cut_handle(&self) -> StreamCut {
        match self {
            CallReply::H2(r) => r.cut_handle(),
            CallReply::H3(r) => r.cut_handle(),
        }
    }

    fn send_head<'a>(
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

    fn send_interim<'a>(
        &mut self,
        status: u16,
        fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    ) -> io::Result<()> {
        match self {
            CallReply::H2(r) => r.send_interim(status, fields),
            CallReply::H3(r) => r.send_interim(status, fields),
        }
    }

    fn send_data_now(&mut self, data: &Bytes, end: bool) -> io::Result<bool> {
        match self {
            CallReply::H2(r) => r.send_data_now(data, end),
            CallReply::H3(r) => r.send_data_now(data, end),
        }
    }

    fn send_data(&mut self, data: Bytes, end: bool, timeout: Duration) -> io::Result<()> {
        match self {
            CallReply::H2(r) => r.send_data(data, end, timeout),
            CallReply::H3(r) => r.send_data(data, end, timeout),
        }
    }

    fn reset(&mut self) {
        match self {
            CallReply::H2(r) => r.reset(),
            CallReply::H3(r) => r.reset(),
        }
    }
}
