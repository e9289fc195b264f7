//! The response head: whether the connection is kept (proto's rule, plus a stop under way and
//! an unread body that cannot be drained), encoding the head with the framing proto chooses
//! (Content-Length, chunked or close-delimited; `Server-Timing`), and the `--timeout` gate that
//! decides whether the app's head or the server's 504 goes out. An `impl Sender` block apart
//! from the body's way out (`mod.rs`).

use pyo3::prelude::*;
use sluicegate_proto::h1::encode::{decimal, encode_response_head, ResponseHead, DECIMAL_LEN};
use sluicegate_proto::h1::response::{choose_framing, keeps_alive, BodyLength};

use super::{Sender, Stage};
use crate::http_date::http_date;
use crate::io::out_queue::{spare_buffer, OutQueue};
use crate::wsgi::body_block::SendError;
use crate::wsgi::input::Input;

/// Out of line: only requests with a body get here (keeps `keeps_alive` small enough to inline).
#[cold]
#[inline(never)]
fn body_drainable(input: &Py<Input>, max: u64) -> bool {
    input.get().drainable(max)
}

impl Sender {
    /// The connection may carry another request after this response (proto's rule).
    /// A stop (or a retired worker, `io::request_limit`) that began while the app ran
    /// closes the connection too, and the head says so (RFC 9112 §9.6), instead of promising a
    /// keep-alive the server will not keep. Once the head is encoded its word stands: a stop
    /// that begins after it leaves the connection to the loop's graceful close, since closing
    /// after a head that promised keep-alive loses the client's next request (`wrk` read
    /// errors across `--max-requests` recycles).
    #[inline]
    pub fn keeps_alive(&self) -> bool {
        let body_drainable = match &self.body {
            None => true,
            Some((input, max)) => body_drainable(input, *max),
        };
        let ending = self.head_at.is_none() && self.ctx.keep_alive_ending();
        keeps_alive(
            self.keep_alive && !ending && body_drainable,
            self.app.wants_close || self.client_gone,
            self.framing,
        )
    }

    /// Encode the head into `buf` with the framing proto chooses. `known_len` is the body
    /// length when the whole body is known (list/tuple or end of iteration).
    pub(super) fn encode_head(&mut self, buf: &mut Vec<u8>, known_len: Option<u64>) {
        // Decided once, here: `keeps_alive` reads only this from now on (see there).
        if self.ctx.keep_alive_ending() {
            self.keep_alive = false;
        }
        let decided = choose_framing(
            self.version,
            self.is_head,
            self.app.status_code,
            BodyLength {
                declared: self.app.content_length,
                known: known_len,
            },
        );
        self.framing = decided.framing;
        // The app's headers go as encoded lines (`AppHead::lines`); the server's own few as
        // (name, value) pairs after them: Content-Length, Server-Timing, Alt-Svc.
        let empty: (&[u8], &[u8]) = (b"", b"");
        let mut pairs = [empty; 3];
        let mut count = 0;
        let mut len_buf = [0u8; DECIMAL_LEN];
        if let Some(n) = decided.head_length {
            pairs[count] = (b"Content-Length", decimal(n, &mut len_buf));
            count += 1;
        }
        let now = crate::clock::now_ns();
        self.head_at = Some(now);
        let timing;
        if let Some((parsed, called)) = self.server_timing {
            // The W3C Server-Timing header: durations in milliseconds; the app's
            // time so far (the head leaves before the body).
            timing = format!(
                "queue;dur={:.3}, app;dur={:.3}",
                called.saturating_sub(parsed) as f64 / 1e6,
                now.saturating_sub(called) as f64 / 1e6
            );
            pairs[count] = (b"Server-Timing", timing.as_bytes());
            count += 1;
        }
        if let Some(alt_svc) = self.alt_svc {
            pairs[count] = (b"Alt-Svc", alt_svc);
            count += 1;
        }
        let date = http_date();
        encode_response_head(
            buf,
            &ResponseHead {
                version: self.version,
                status: self.app.status(),
                lines: self.app.lines(),
                headers: &pairs[..count],
                framing: self.framing,
                keep_alive: self.keeps_alive(),
                date: &date,
                server: self.server_header,
                extra: &self.ctx.settings.config.add_headers,
            },
        );
        self.stage = Stage::Direct;
    }

    /// Queue the head if it was not sent yet. `body_room`: capacity reserved after it, since
    /// small body bytes are copied onto the same buffer (one writev, one segment). Fails (the
    /// client counts as gone) if `--timeout` answered this request already.
    pub(super) fn queue_head(
        &mut self,
        q: &mut OutQueue,
        known_len: Option<u64>,
        body_room: usize,
    ) -> Result<(), SendError> {
        if matches!(self.stage, Stage::Unsent) {
            if !self.claim_head() {
                return self.gone();
            }
            let mut head = spare_buffer(512 + body_room);
            self.encode_head(&mut head, known_len);
            q.push_owned(head);
        }
        Ok(())
    }

    /// May this response's head (the app's, or the server's error answer) be sent? Only no
    /// when `--timeout` already answered the request.
    pub fn claim_head(&self) -> bool {
        self.gate.as_ref().is_none_or(|g| g.claim_for_app())
    }
}
