//! One HTTP/2 stream's response as the app produces it: the head is sent with the first
//! non-empty block (or at the end), each block leaves as DATA at once (never held back, never
//! chunked: HTTP/2 frames it), the app's Content-Length is honoured (bytes past it are not
//! sent; a body that falls short resets the stream instead of ending it), HEAD sends the head
//! alone. Sends wait for the client's window with the GIL released.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use pyo3::prelude::*;

use sluicegate_proto::h1::interim::interim_header_allowed;

use crate::clock::now_ns;
use crate::http_date::http_date;
use crate::io::h2::StreamReply;
use crate::wsgi::app_head::AppHead;
use crate::wsgi::deadline::HeadGate;

/// The client went away (or reset the stream, or kept its window shut past the timeout).
pub(super) struct Gone;

pub(super) struct Response {
    pub reply: StreamReply,
    /// With `--timeout`: claimed before the head is sent; lost if the watcher answered 504.
    pub gate: Option<Arc<HeadGate>>,
    pub app: AppHead,
    pub max_app_headers: usize,
    pub is_head: bool,
    pub write_timeout: Duration,
    pub server: &'static [u8],
    /// Body bytes sent (or, for HEAD, that would have been).
    pub body_bytes: u64,
    /// When the head went (`clock::now_ns`).
    pub head_at: Option<u64>,
    pub gone: bool,
    /// The status sent (the app's, or the server's own answer).
    pub status: u16,
}

impl Response {
    /// A stream's response before the app starts it.
    pub fn new(
        bridge: &crate::wsgi::bridge::Bridge,
        reply: StreamReply,
        gate: Option<Arc<HeadGate>>,
        is_head: bool,
    ) -> Response {
        Response {
            gate,
            reply,
            app: AppHead::default(),
            max_app_headers: bridge.config.limit_response_headers,
            is_head,
            write_timeout: bridge.config.write_timeout,
            server: bridge.server_header,
            body_bytes: 0,
            head_at: None,
            gone: false,
            status: 0,
        }
    }

    pub fn head_sent(&self) -> bool {
        self.head_at.is_some()
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
            .chain((!date.is_empty()).then_some((&b"date"[..], date)));
        let status = app.status_code;
        // Queued by the `h2` crate, never waited for: no need to release the GIL.
        let sent = reply.send_head(status, fields, end);
        sent.map_err(|_| self.gone())
    }

    /// `wsgi.early_hints` before the head: an informational HEADERS frame with `:status 103`
    /// and the hints a 1xx may carry (proto's `interim_header_allowed`). Not sent once the
    /// stream is gone or `--timeout` answered it; hints are advice, so no error either.
    pub fn send_early_hints(&mut self, hints: &AppHead) {
        let timed_out = self.gate.as_ref().is_some_and(|g| g.timed_out());
        if self.gone || timed_out || self.head_sent() {
            return;
        }
        let fields = hints.headers().filter(|(n, _)| interim_header_allowed(n));
        // Queued by the `h2` crate, as the head is; a stream reset meanwhile shows at the
        // next send.
        let _ = self.reply.send_interim(103, fields);
    }

    fn gone(&mut self) -> Gone {
        self.gone = true;
        Gone
    }

    /// One block of the body (`end`: the last). Empty blocks send nothing.
    pub fn send(&mut self, py: Python<'_>, mut data: Bytes, end: bool) -> Result<(), Gone> {
        if self.gone {
            return Err(Gone);
        }
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
        self.body_bytes += data.len() as u64;
        if self.is_head {
            return Ok(());
        }
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

    /// The body is over.
    pub fn finish(&mut self, py: Python<'_>) -> Result<(), Gone> {
        self.send(py, Bytes::new(), true)
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
