//! The ends of connections: protocol errors answered (through the one error-answer builder)
//! and followed by a lingering close, half-closes that carry the answer's last segment with
//! the FIN, timeouts found by the sweep (408 for a request that came too slowly), and the
//! steps of a graceful or immediate shutdown.

use std::io::ErrorKind;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::driver::{count_tls_failure, HANDSHAKE_TIMEOUT};
use super::*;
use crate::io::conn::Wire;
use crate::io::error_answer::{error_answer, protocol_error_answer, REQUEST_TIMEOUT};
use crate::observe::request_end::log_refused;

/// How long an error answer waits for the client to close before the socket is closed anyway.
const LINGER: Duration = Duration::from_secs(2);

/// How long a graceful shutdown keeps idle keep-alive connections open for a request that may
/// be on its way (answered with `Connection: close`). Short: an idle connection costs the
/// shutdown this long at most.
const IDLE_GRACE: Duration = Duration::from_millis(500);

impl LoopState {
    /// Answer a protocol error (the one place that writes them) and close after it.
    pub(super) fn protocol_error(&mut self, token: usize, e: ProtoError, ctx: &LoopCtx) {
        ctx.counters.protocol_errors.fetch_add(1, Ordering::Relaxed);
        ctx.counters.by_request.refused(e.status());
        if e == ProtoError::HeadersTooLarge && ctx.settings.config.head_overflow_closes {
            return self.head_overflow(token, ctx);
        }
        if let Some(Slot::Here(conn)) = self.conns.get_mut(token) {
            let answer = protocol_error_answer(&e, &ctx.settings.config.server_header);
            if let Some(log) = ctx.settings.access_log.as_deref() {
                // Refused requests are in the access log too, as far as their head came (a
                // uwsgi packet's bytes are no request line: its line shows none).
                let received = if conn.wire == Wire::Uwsgi {
                    &[][..]
                } else {
                    conn.buffered()
                };
                let head = RequestHead::refused(received);
                log_refused(log, &head, conn.peer.ip(), e.status(), &answer);
            }
            conn.out.push_owned(answer);
            // Input after a framing error is meaningless: drop it, and linger after the answer
            // so the client reads it before any reset.
            conn.after_output = AfterOutput::CloseLingering;
            if let Some(b) = conn.rbuf.as_mut() {
                let n = b.len();
                b.consume(n);
            }
            conn.phase = Phase::Idle;
            self.ready.push_back((token, ReadHint::None));
        }
    }

    /// uWSGI's answer to a head larger than its buffer (`--uwsgi-compat buffer-size`): no
    /// answer and no request line, its own log line (proto/uwsgi.c and proto/http.c), and the
    /// connection closed at once, so that nginx in front answers 502.
    fn head_overflow(&mut self, token: usize, ctx: &LoopCtx) {
        let Some(Slot::Here(conn)) = self.conns.get(token) else {
            return;
        };
        let max = ctx.settings.config.limits.max_header_bytes;
        match (conn.wire, conn.buffered()) {
            (Wire::Uwsgi, &[_, lo, hi, ..]) => eprintln!(
                "invalid request block size: {} (max {max})...skip",
                u16::from_le_bytes([lo, hi])
            ),
            _ if conn.tls.is_some() => eprintln!("invalid HTTPS request size (max {max})...skip"),
            _ => eprintln!("invalid HTTP request size (max {max})...skip"),
        }
        self.close(token);
    }

    /// Output is written and the connection must close: close now if nothing more can come
    /// from the client, else half-close and linger.
    #[inline(always)]
    pub(super) fn finish_close(&mut self, token: usize) {
        let Some(Slot::Here(conn)) = self.conns.get_mut(token) else {
            return;
        };
        if let Some(link) = &conn.tls {
            // close_notify before any half-close: after our FIN it could not leave.
            link.close(None);
        }
        if conn.after_output == AfterOutput::CloseLingering || !conn.buffered().is_empty() {
            conn.stream.shutdown_write();
            conn.phase = Phase::Lingering;
            conn.deadline = Some(Instant::now() + LINGER);
            self.discard_input(token);
        } else {
            if conn.out.closing && conn.after_output != AfterOutput::CloseAsAsked {
                // Sends the answer's held-back last segment with the FIN (see
                // `OutQueue::closing`) before `close` could turn into a reset (input that
                // came after the request and was not read).
                conn.stream.shutdown_write();
            }
            self.close(token);
        }
    }

    /// Read and drop input until the client closes (then close) or the socket is empty.
    pub(super) fn discard_input(&mut self, token: usize) {
        let Some(Slot::Here(conn)) = self.conns.get_mut(token) else {
            return;
        };
        let mut scratch = [0u8; 4096];
        loop {
            match conn.stream.read(&mut scratch) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(_) => break,
            }
        }
        self.close(token);
    }

    /// Close and forget a connection that is here.
    pub(super) fn close(&mut self, token: usize) {
        if let Some(Slot::Here(_)) = self.conns.get(token) {
            if let Slot::Here(mut conn) = self.conns.remove(token) {
                release_buffer(&mut self.buffers, &mut conn);
                if let Some(link) = &conn.tls {
                    // close_notify: the client can tell our close from a truncation.
                    link.close(None);
                }
                if conn.wire != Wire::Metrics {
                    self.shared
                        .counters
                        .by_request
                        .open_connections
                        .fetch_sub(1, Ordering::Relaxed);
                }
                if let Some(p) = conn.pending_log.take() {
                    // Closed before its response was all sent: the client went away.
                    p.finish(
                        self.shared.settings.access_log.as_deref(),
                        &self.shared.counters.by_request,
                        !conn.out.is_empty(),
                    );
                }
                if let Some(b) = &self.shared.balance {
                    b.publish(self.held());
                }
                // Dropping the stream closes the socket, which also removes it from the epoll
                // set (no descriptor is ever duplicated), so no EPOLL_CTL_DEL: one syscall less
                // per connection.
            }
        }
    }

    /// Expire deadlines.
    pub(super) fn sweep(&mut self, now: Instant, ctx: &LoopCtx) {
        // Streaming responses to clients that stopped reading.
        self.flushing
            .retain(|_, out| !out.expire(ctx.settings.config.write_timeout));
        if self.accept_paused {
            self.accept_paused = false;
            for i in 0..self.listeners.len() {
                self.accept(i, ctx);
            }
            self.accept_metrics(ctx);
        }
        // One pass: the expired, and (for the metrics) how many wait idle between requests.
        let mut idle = 0u64;
        let expired: Vec<usize> = self
            .conns
            .iter()
            .filter_map(|(t, s)| match s {
                Slot::Here(c) => {
                    idle += u64::from(
                        matches!(c.phase, Phase::Idle)
                            && c.out.is_empty()
                            && c.wire != Wire::Metrics,
                    );
                    c.deadline.is_some_and(|d| d <= now).then_some(t)
                }
                _ => None,
            })
            .collect();
        ctx.counters
            .by_request
            .idle_connections
            .store(idle, Ordering::Relaxed);
        for token in expired {
            let Some(Slot::Here(conn)) = self.conns.get_mut(token) else {
                continue;
            };
            if conn.wire == Wire::Metrics {
                // A scraper too slow to ask or to take its page: not the app's timeout.
                self.close(token);
                continue;
            }
            ctx.counters.timeouts.fetch_add(1, Ordering::Relaxed);
            match conn.phase {
                Phase::ReadingHead | Phase::ReadingBody(_) => {
                    ctx.counters.by_request.refused(REQUEST_TIMEOUT.0);
                    // 408, then close: the client was too slow sending its request.
                    conn.out.clear();
                    let answer = error_answer(REQUEST_TIMEOUT, &ctx.settings.config.server_header);
                    if let Some(log) = ctx.settings.access_log.as_deref() {
                        let refused;
                        let head = match &conn.phase {
                            Phase::ReadingBody(head) => &**head,
                            _ => {
                                refused = RequestHead::refused(conn.buffered());
                                &refused
                            }
                        };
                        log_refused(log, head, conn.peer.ip(), REQUEST_TIMEOUT.0, &answer);
                    }
                    conn.phase = Phase::Idle;
                    match &conn.tls {
                        // Encrypted, then close_notify: plaintext bytes on a TLS connection
                        // would be a broken record to the client, not an answer.
                        Some(link) => link.close(Some(&answer)),
                        None => {
                            conn.out.push_owned(answer);
                            let _ = conn.out.write_to(&conn.stream);
                        }
                    }
                    self.close(token);
                }
                _ => {
                    if conn.tls.as_ref().is_some_and(|l| l.handshaking()) {
                        count_tls_failure(ctx, HANDSHAKE_TIMEOUT);
                    }
                    self.close(token)
                }
            }
        }
    }

    /// One step of shutdown. Returns true when the loop may stop.
    pub(super) fn shutdown_step(&mut self, ctx: &LoopCtx) -> bool {
        let now = Instant::now();
        if self.shutdown_started.is_none() {
            self.shutdown_started = Some(now);
            // Stop accepting: closing the listening sockets makes new connects fail at once.
            for l in self.listeners.iter_mut() {
                if let Some(mut s) = l.take() {
                    let _ = match &mut s {
                        ListenSocket::Tcp(t, _) => self.poll.registry().deregister(t),
                        ListenSocket::Unix(u) => self.poll.registry().deregister(u),
                    };
                }
            }
            if let Some((mut socket, _)) = self.metrics.take() {
                let _ = self.poll.registry().deregister(socket.source());
            }
            // Settle the sweep cadence so the graceful deadline is noticed.
            self.sweep_every = self.sweep_every.min(Duration::from_millis(100));
            self.next_sweep = self.next_sweep.min(now + self.sweep_every);
        }
        // Idle connections and half-received requests close once `IDLE_GRACE` has passed, not
        // at once: a keep-alive client may have sent its next request already, and closing
        // under it loses that request (measured: 37 read errors in 6 s of `wrk -c32` across
        // three reloads). Until then a request that comes is served with `Connection: close`,
        // so busy connections end cleanly after one more answer.
        let grace = IDLE_GRACE.min(ctx.settings.config.graceful_timeout);
        if now >= self.shutdown_started.unwrap() + grace {
            let idle: Vec<usize> = self
                .conns
                .iter()
                .filter_map(|(t, s)| match s {
                    Slot::Here(c) if c.out.is_empty() && !matches!(c.phase, Phase::Lingering) => {
                        Some(t)
                    }
                    // A scraper still reading its page is not waited for.
                    Slot::Here(c) if c.wire == Wire::Metrics => Some(t),
                    _ => None,
                })
                .collect();
            for t in idle {
                self.close(t);
            }
        }
        let deadline_passed =
            now >= self.shutdown_started.unwrap() + ctx.settings.config.graceful_timeout;
        if ctx.shutdown_state() == Shutdown::Immediate || deadline_passed {
            // Requests still in the app, or still being sent, are cut.
            let cut = self
                .conns
                .iter()
                .filter(|(t, s)| match s {
                    Slot::Away { .. } => !self.pages_away.contains(t),
                    Slot::Here(c) => !c.out.is_empty() || matches!(c.phase, Phase::ReadingBody(_)),
                })
                .count();
            ctx.counters.cut.fetch_add(cut as u64, Ordering::Relaxed);
            // HTTP/2: every stream still open is reset (and counted) by its connection's task.
            if let Some(tasks) = self.tasks.as_mut() {
                if let Some(hub) = ctx.settings.h3.as_ref() {
                    hub.drain_at(crate::io::streams::Stop::Immediate);
                }
                tasks.set_stop(crate::io::streams::Stop::Immediate);
                tasks.run(now);
                tasks.clear();
            }
            let all: Vec<usize> = self
                .conns
                .iter()
                .filter(|(_, s)| matches!(s, Slot::Here(_)))
                .map(|(t, _)| t)
                .collect();
            for t in all {
                self.close(t);
            }
            return true;
        }
        // Done when no connection is left, or only those whose app call is stuck past
        // `--timeout`: they were answered (504 or closed) and may never return.
        let stuck = ctx.counters.stuck_calls.load(Ordering::Relaxed);
        let h2_open = ctx
            .settings
            .h2
            .as_ref()
            .map_or(0, |h| h.open.load(Ordering::SeqCst));
        let h3_open = ctx
            .settings
            .h3
            .as_ref()
            .map_or(0, |h| h.open.load(Ordering::SeqCst));
        h2_open == 0 && h3_open == 0 && self.conns.is_empty()
            || (stuck > 0
                && self.conns.len() <= stuck
                && self
                    .conns
                    .iter()
                    .all(|(_, s)| matches!(s, Slot::Away { .. })))
    }
}
