//! One stream's response (HTTP/2 or HTTP/3) as the app produces it: the head is sent with the first
//! non-empty block (or at the end), each block leaves as DATA at once (never held back, never
//! chunked: HTTP/2 frames it), the app's Content-Length is honoured (bytes past it are not
//! sent; a body that falls short resets the stream instead of ending it), HEAD sends the head
//! alone. Sends wait for the client's window with the GIL released. It is the stream's
//! `Reply` (`wsgi::reply`), which the bridge's driver of the app's iterable writes, over the
//! protocol's reply (`io::streams::reply::StreamOut`). Generic over it, not `dyn`: each
//! block's send is then a direct call (the `StreamOut` of a `StreamCall` is `io::call_io`'s
//! enum over the two protocols, one match per send).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use pyo3::prelude::*;

use sluicegate_proto::h1::interim::interim_header_allowed;

use crate::clock::now_ns;
use crate::http_date::http_date;
use crate::io::call_io::CallReply;
use crate::io::file_body::{read_block, RegularFile};
use crate::io::streams::reply::StreamOut;
use crate::wsgi::app_head::AppHead;
use crate::wsgi::body_block::SendError;
use crate::wsgi::bridge::type_name;
use crate::wsgi::deadline::HeadGate;
use crate::wsgi::reply::{HintsRefused, Reply};

/// File bodies are read in blocks of this size, without the GIL.
const FILE_BLOCK: usize = 256 * 1024;

/// The client went away (or reset the stream, or kept its window shut past the timeout).
pub struct Gone;

pub struct Response<R = CallReply> {
    pub reply: R,
    /// With `--timeout`: claimed before the head is sent; lost if the watcher answered 504.
    pub gate: Option<Arc<HeadGate>>,
    pub app: AppHead,
    pub max_app_headers: usize,
    pub is_head: bool,
    pub write_timeout: Duration,
    pub server: &'static [u8],
    /// `--http3`: the `Alt-Svc` value an HTTP/2 answer on a TLS listener advertises it with.
    pub alt_svc: Option<&'static [u8]>,
    /// Body bytes sent (or, for HEAD, that would have been).
    pub body_bytes: u64,
    /// When the head went (`clock::now_ns`).
    pub head_at: Option<u64>,
    pub gone: bool,
    /// The last DATA (END_STREAM) went: `finish` adds nothing, a block more is refused.
    ended: bool,
    /// The status sent (the app's, or the server's own answer).
    pub status: u16,
}

impl<R: StreamOut> Response<R> {
    /// A stream's response before the app starts it.
    pub fn new(
        bridge: &crate::wsgi::bridge::Bridge,
        reply: R,
        gate: Option<Arc<HeadGate>>,
        is_head: bool,
    ) -> Response<R> {
        Response {
            gate,
            reply,
            app: AppHead::default(),
            max_app_headers: bridge.config.limit_response_headers,
            is_head,
            write_timeout: bridge.config.write_timeout,
            server: bridge.server_header,
            alt_svc: None,
            body_bytes: 0,
            head_at: None,
            gone: false,
            ended: false,
            status: 0,
        }
    }

    /// Send the head; `length`: the body's length when known (the app's Content-Length wins).
    fn send_head(&mut self, end: bool, length: Option<u64>) -> Result<(), Gone> {
        if self.gate.as_ref().is_some_and(|g| !g.claim_for_app()) {
            // --timeout answered this stream already.
            return Err(self.gone());
        }
        self.head_at = Some(now_ns());
        self.status = self.app.status_code;
        let declared = self.app.content_length.or(length);
        let date = http_date();
        let len_text = declared.map(|n| n.to_string());
        let (reply, app) = (&mut self.reply, &self.app);
        // Date and Server unless the app set them (as on HTTP/1.1).
        let has = |name: &[u8]| app.headers().any(|(n, _)| n.eq_ignore_ascii_case(name));
        let server = if has(b"server") {
            &b""[..]
        } else {
            self.server
        };
        let date: &[u8] = if has(b"date") { b"" } else { &date[..] };
        let fields = app
            .headers()
            .filter(|(n, _)| !n.eq_ignore_ascii_case(b"content-length"))
            .chain(
                len_text
                    .as_deref()
                    .map(|t| (&b"content-length"[..], t.as_bytes())),
            )
            .chain((!server.is_empty()).then_some((&b"server"[..], server)))
            .chain((!date.is_empty()).then_some((&b"date"[..], date)))
            .chain(self.alt_svc.map(|v| (&b"alt-svc"[..], v)));
        let status = app.status_code;
        // Queued by the `h2` crate, or parked by HTTP/3's reply when the window cannot take
        // it: never waited for, so no need to release the GIL.
        let sent = reply.send_head(status, fields, end);
        sent.map_err(|_| self.gone())
    }

    fn gone(&mut self) -> Gone {
        self.gone = true;
        Gone
    }

    /// One block of the body (`end`: the last). Empty blocks send nothing.
    pub fn send(&mut self, py: Python<'_>, data: Bytes, end: bool) -> Result<(), Gone> {
        if self.gone {
            return Err(Gone);
        }
        let sent = self.send_inner(py, data, end);
        self.ended |= end && sent.is_ok();
        sent
    }

    fn send_inner(&mut self, py: Python<'_>, mut data: Bytes, end: bool) -> Result<(), Gone> {
        if let Some(limit) = self.app.content_length {
            let room = limit.saturating_sub(self.body_bytes);
            if (data.len() as u64) > room {
                data.truncate(room as usize);
            }
        }
        if data.is_empty() && !end {
            return Ok(());
        }
        if !self.head_sent() {
            // The whole body is this block: its length is known (not for HEAD, whose body
            // nobody made: only the app's or a list's Content-Length is sent then).
            let length = (end && !self.is_head).then_some(data.len() as u64);
            self.send_head(self.is_head || (end && data.is_empty()), length)?;
        }
        if self.is_head {
            // Nothing of it is sent: the log counts none (as HTTP/1.1's).
            return Ok(());
        }
        self.body_bytes += data.len() as u64;
        if end && self.app.content_length.is_some_and(|n| n > self.body_bytes) {
            // Short of the declared length: the client must not take it for the whole body.
            let t = self.write_timeout;
            let reply = &mut self.reply;
            py.detach(|| reply.send_data(data, false, t))
                .map_err(|_| self.gone())?;
            self.reply.reset();
            return Ok(());
        }
        if data.is_empty() && !end {
            return Ok(());
        }
        match self.reply.send_data_now(&data, end) {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(_) => return Err(self.gone()),
        }
        let t = self.write_timeout;
        let reply = &mut self.reply;
        py.detach(|| reply.send_data(data, end, t))
            .map_err(|_| self.gone())
    }

    /// The app failed: `answer` (500, or 408 for a request body that stalled) if nothing
    /// was sent, else the stream is reset.
    pub fn fail(&mut self, py: Python<'_>, answer: (u16, &str)) {
        if self.gone {
            return;
        }
        if self.head_sent() {
            self.reply.reset();
            return;
        }
        self.app = AppHead::server_answer(answer.0, answer.1);
        let body = Bytes::from(format!("{}\n", answer.1));
        let _ = self.send(py, body, true);
    }
}

/// The bytes of a block the app gave (bytes, bytearray or memoryview), copied: the `h2` crate
/// keeps them until the window takes them, after the GIL is released.
pub(super) fn block_bytes(item: &Bound<'_, PyAny>) -> Result<Bytes, SendError> {
    if let Ok(b) = item.cast::<pyo3::types::PyBytes>() {
        return Ok(Bytes::copy_from_slice(b.as_bytes()));
    }
    if !item.is_instance_of::<pyo3::types::PyString>() {
        if let Ok(v) = item.extract::<Vec<u8>>() {
            return Ok(Bytes::from(v));
        }
    }
    Err(SendError::NotBytes(type_name(item)))
}

impl<R: StreamOut> Response<R> {
    /// A block after the start, and not after the end.
    fn may_send(&self) -> Result<(), SendError> {
        match () {
            _ if !self.app.started => Err(SendError::NotStarted),
            _ if self.ended => Err(SendError::Finished),
            _ => Ok(()),
        }
    }
}

impl From<Gone> for SendError {
    fn from(_: Gone) -> SendError {
        SendError::ClientGone
    }
}

impl<R: StreamOut> Reply for Response<R> {
    /// The blocks' total is the content-length unless the app gave one; the last block
    /// carries END_STREAM.
    fn send_all(&mut self, py: Python<'_>, blocks: &[Bound<'_, PyAny>]) -> Result<(), SendError> {
        self.may_send()?;
        let declare = self.app.content_length.is_none() && !self.head_sent();
        if let [one] = blocks {
            let data = block_bytes(one)?;
            if declare {
                self.app.content_length = Some(data.len() as u64);
            }
            return Ok(self.send(py, data, true)?);
        }
        let datas = blocks
            .iter()
            .map(block_bytes)
            .collect::<Result<Vec<_>, _>>()?;
        if declare {
            self.app.content_length = Some(datas.iter().map(|d| d.len() as u64).sum());
        }
        let n = datas.len();
        if n == 0 {
            return self.finish(py);
        }
        for (i, d) in datas.into_iter().enumerate() {
            self.send(py, d, i + 1 == n)?;
        }
        Ok(())
    }

    fn send_block(&mut self, py: Python<'_>, block: &Bound<'_, PyAny>) -> Result<(), SendError> {
        self.may_send()?;
        let data = block_bytes(block)?;
        Ok(self.send(py, data, false)?)
    }

    fn send_copy(&mut self, py: Python<'_>, data: &[u8]) -> Result<(), SendError> {
        self.may_send()?;
        Ok(self.send(py, Bytes::copy_from_slice(data), false)?)
    }

    /// Read in [`FILE_BLOCK`]s without the GIL, from a descriptor of our own; a read that fails
    /// ends the call as failed. With no descriptor to be had (EMFILE/ENFILE), from the app's,
    /// with the GIL held so that no other thread of the app can close it meanwhile.
    fn send_file(
        &mut self,
        py: Python<'_>,
        app_file: &RegularFile,
        pos: u64,
    ) -> Result<(), SendError> {
        self.may_send()?;
        let own = app_file.range_from(pos);
        let (offset, len) = app_file.span_from(pos);
        let want = *self.app.content_length.get_or_insert(len);
        let want = want.min(len);
        let mut at = 0u64;
        while at < want {
            let n = (want - at).min(FILE_BLOCK as u64) as usize;
            let read = match &own {
                Some((file, _, _)) => py.detach(|| read_block(file, offset + at, n)),
                None => app_file.read_at(offset + at, n),
            };
            let Ok(buf) = read else {
                return Err(SendError::Finished);
            };
            at += n as u64;
            self.send(py, Bytes::from(buf), at == want)?;
        }
        if want == 0 {
            self.send(py, Bytes::new(), true)?;
        }
        Ok(())
    }

    fn finish(&mut self, py: Python<'_>) -> Result<(), SendError> {
        if !self.app.started {
            return Err(SendError::NotStarted);
        }
        if self.ended {
            return Ok(());
        }
        Ok(self.send(py, Bytes::new(), true)?)
    }

    fn app_started(&self) -> bool {
        self.app.started
    }

    fn head_sent(&self) -> bool {
        self.head_at.is_some()
    }

    fn max_app_headers(&self) -> usize {
        self.max_app_headers
    }

    fn set_app_head(&mut self, head: AppHead) {
        self.app = head;
    }

    /// An informational HEADERS frame with `:status 103` and the hints a 1xx may carry
    /// (proto's `interim_header_allowed`). Not sent once the stream is gone or `--timeout`
    /// answered it; hints are advice, so no error either.
    fn send_early_hints(&mut self, _py: Python<'_>, hints: &AppHead) -> Result<(), HintsRefused> {
        if self.app.started || self.head_sent() {
            return Err(HintsRefused::AfterStart);
        }
        let timed_out = self.gate.as_ref().is_some_and(|g| g.timed_out());
        if self.gone || timed_out {
            return Ok(());
        }
        let fields = hints.headers().filter(|(n, _)| interim_header_allowed(n));
        // Queued (HTTP/2) or parked (HTTP/3), as the head is; a stream reset meanwhile shows
        // at the next send.
        let _ = self.reply.send_interim(103, fields);
        Ok(())
    }
}
