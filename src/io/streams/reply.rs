//! A stream's request body and response as its app thread sees them, whichever protocol
//! carries the stream: [`StreamIn`] and [`StreamOut`], implemented by HTTP/2's `StreamBody`
//! and `StreamReply` (`io::h2::stream`) and HTTP/3's `H3Body` and `H3Reply`
//! (`io::h3::stream`). The WSGI bridge's stream response (`wsgi::streams::response`) and
//! `wsgi.input` source (`wsgi::body_source`) are written over these traits.
//!
//! Static dispatch, not `dyn`: the heads take their fields as an `impl Iterator` (no boxed
//! iterator, no collected list per head), and a stream's call carries its body and reply as
//! `io::call_io`'s enums over the two implementations, so a `StreamCall` stays one concrete
//! value, with no box, that the inline queue and the pool hand on; a method call is one match.

use std::io;
use std::time::Duration;

use bytes::Bytes;
use sluicegate_proto::ProtoError;

use super::cut::StreamCut;

/// A stream's request body, read by its app thread.
pub trait StreamIn: Send {
    /// Up to `max` bytes, waiting up to `timeout` for a DATA frame; empty at the end of the
    /// body. Errors: `TimedOut`, `ConnectionReset`, or `InvalidData` carrying
    /// `ProtoError::PayloadTooLarge` or, for a malformed body, `ProtoError::BadRequest`.
    fn read(&mut self, max: usize, timeout: Duration) -> io::Result<Bytes>;
}

/// The protocol error a failed [`StreamIn::read`] carries, if any (a body past the limit, a
/// malformed one).
pub fn body_protocol_error(e: &io::Error) -> Option<ProtoError> {
    e.get_ref()?.downcast_ref::<ProtoError>().copied()
}

/// A stream's response, sent by its app thread: the head, then the body as DATA.
pub trait StreamOut: Send {
    /// What the `--timeout` watcher cuts the stream through.
    fn cut_handle(&self) -> StreamCut;

    /// The head: `status` and the fields (connection-specific ones dropped by the caller,
    /// values without the spaces around them: `head::response_of`); `end`: no body follows.
    /// Never waits for the client's window (the caller holds the GIL).
    fn send_head<'a>(
        &mut self,
        status: u16,
        fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
        end: bool,
    ) -> io::Result<()>;

    /// An interim answer (`103 Early Hints`) before the head; never waits, as the head. An
    /// error once the head went, or the stream was cut or ended.
    fn send_interim<'a>(
        &mut self,
        status: u16,
        fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    ) -> io::Result<()>;

    /// `data` sent at once without waiting (`Ok(true)`), or nothing sent (`Ok(false)`: call
    /// [`send_data`](StreamOut::send_data), with the GIL released). By default nothing is.
    fn send_data_now(&mut self, _data: &Bytes, _end: bool) -> io::Result<bool> {
        Ok(false)
    }

    /// Body bytes, waiting for the client's window at most `timeout` per wait; `end`: the last
    /// of the body.
    fn send_data(&mut self, data: Bytes, end: bool, timeout: Duration) -> io::Result<()>;

    /// Cut the stream: the app failed after the head, or the body fell short of its
    /// Content-Length.
    fn reset(&mut self);
}
