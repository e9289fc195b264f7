//! One connection's turn in the loop (`drive`): finish its output, read, parse the request
//! head, buffer a small body, answer static files, or hand the request out as [`Work`]; and
//! taking a connection back after the app is done with it.

use std::io::ErrorKind;
use std::ops::ControlFlow;
use std::sync::atomic::Ordering;
use std::time::Instant;

use mio::unix::SourceFd;
use sluicegate_proto::uwsgi;

use super::own_answers::{answer_client, answered_here, own_answer};
use super::*;
use crate::io::conn::Wire;

impl LoopState {
    /// A connection is back from the app (returned, or after an inline call): decide its next
    /// phase and queue it for a look.
    pub fn after_request(&mut self, token: usize, readable: bool, ctx: &LoopCtx) {
        let Some(Slot::Here(conn)) = self.conns.get_mut(token) else {
            return;
        };
        // During a shutdown, a connection whose answer went out keep-alive (it was sent before
        // the shutdown began) stays open: its client may be sending the next request already,
        // which is answered with `Connection: close`. Closing it here lost that request (a
        // reset seen by clients during reloads); idle ones close after the shutdown's grace.
        conn.phase = Phase::Idle;
        conn.deadline = Some(Instant::now() + ctx.settings.config.keepalive_timeout);
        if !conn.registered {
            self.unregistered.push(token);
        }
        // An empty buffer goes back to the pool now, not when the connection's turn in the ready
        // queue comes: in a burst, 1,024 connections each holding 16 KiB until then cost 16 MiB
        // (measured with 10,000 connections opening at once).
        release_buffer(&mut self.buffers, conn);
        // (TLS: bytes the session decrypted past the request wait without a new edge.)
        let hint = if readable || conn.tls_input_waits() {
            ReadHint::Drain
        } else {
            ReadHint::None
        };
        self.ready.push_back((token, hint));
    }

    /// Put back a connection that came back to the loop (inline, or through the return queue):
    /// it takes over what the loop noted while it was away.
    pub fn put_back(&mut self, mut conn: Box<Conn>, ctx: &LoopCtx) {
        let token = conn.token;
        let (woke, registered) = match self.conns.get(token) {
            Some(Slot::Away { woke, registered }) => (woke.load(Ordering::SeqCst), *registered),
            _ => (false, conn.registered),
        };
        conn.registered = registered;
        // Almost always empty: skip hashing the token then.
        if !self.flushing.is_empty() {
            self.flushing.remove(&token);
        }
        if !self.pages_away.is_empty() {
            self.pages_away.retain(|&t| t != token);
        }
        self.conns[token] = Slot::Here(conn);
        self.after_request(token, woke, ctx);
    }

    /// Look at one connection: finish pending output, then read and parse. Returns work when a
    /// request is ready. Its steps (`finish_output`, `parse_buffered` with `try_request` and
    /// `before_head`, `read_some`, `finish_close`) are inlined into it: called, they cost
    /// 100–200 instructions more per request (callgrind), mostly the request's `Work` copied
    /// through their return values.
    pub(super) fn drive(&mut self, token: usize, hint: ReadHint, ctx: &LoopCtx) -> Option<Work> {
        let mut readable = hint != ReadHint::None;
        let drain = hint == ReadHint::Drain;
        match self.conns.get(token) {
            Some(Slot::Here(_)) => {}
            Some(Slot::Away { .. }) => {
                self.look_at_away(token, readable);
                return None;
            }
            None => return None,
        }
        // 1. Output first: a connection with unwritten output reads nothing new.
        if !self.finish_output(token, ctx) {
            return None;
        }
        let Some(Slot::Here(conn)) = self.conns.get_mut(token) else {
            return None;
        };
        if conn.after_output.closes() && !matches!(conn.phase, Phase::Lingering) {
            self.finish_close(token);
            return None;
        }
        if matches!(conn.phase, Phase::Lingering) {
            self.discard_input(token);
            return None;
        }

        // 2. Parse what is buffered (pipelined requests), reading more while the socket has it.
        // A TLS connection reads until the socket is empty (`WouldBlock`): a short read of
        // plaintext does not prove it so, as the session may hold more.
        let tls = conn.tls.is_some();
        if tls && !readable && conn.tls_input_waits() {
            readable = true;
        }
        loop {
            let conn = match self.conns.get_mut(token) {
                Some(Slot::Here(c)) => c,
                _ => return None,
            };
            if conn.rbuf.as_ref().is_some_and(|b| !b.is_empty()) {
                // A short read does not prove the socket empty when draining, or under TLS.
                let more_may_wait = drain || (readable && !tls);
                if let ControlFlow::Break(done) =
                    self.parse_buffered(token, readable, more_may_wait, ctx)
                {
                    return done;
                }
            }
            if !readable {
                break;
            }
            match self.read_some(token, drain, tls, ctx) {
                ControlFlow::Continue(more) => readable = more,
                ControlFlow::Break(done) => return done,
            }
        }
        // Nothing pending: the buffer goes back to the pool (idle connections hold none).
        if let Some(Slot::Here(conn)) = self.conns.get_mut(token) {
            release_buffer(&mut self.buffers, conn);
        }
        None
    }

    /// A connection's turn while the app has it: note readiness for its return, and write what
    /// its app thread queued if it streams to a full socket.
    fn look_at_away(&mut self, token: usize, readable: bool) {
        if let Some(Slot::Away { woke, .. }) = self.conns.get(token) {
            if readable {
                // SeqCst, before this round's look at the returned connections: pairs with
                // `LoopCtx::return_conn` (either it sees this, or the loop sees it back).
                woke.store(true, Ordering::SeqCst);
            }
        }
        if let Some(out) = self.flushing.get(&token) {
            match out.flush() {
                FlushResult::Blocked => {}
                FlushResult::More => self.gave_turn.push(token),
                _ => {
                    self.flushing.remove(&token);
                }
            }
        }
    }

    /// Write a connection's pending output. True when all of it is written (or there was
    /// none) and the turn goes on; false when the turn ends here (socket full, fair share
    /// spent, or the connection closed on an error).
    #[inline(always)]
    fn finish_output(&mut self, token: usize, ctx: &LoopCtx) -> bool {
        let Some(Slot::Here(conn)) = self.conns.get_mut(token) else {
            return false;
        };
        if !conn.has_output() {
            return true;
        }
        let mut written = 0;
        loop {
            match conn.write_out() {
                Ok(_) if !conn.has_output() => break,
                Ok(n) => {
                    conn.deadline = Some(Instant::now() + ctx.settings.config.write_timeout);
                    written += n as u64;
                    if written >= FAIR_SHARE {
                        // The socket still takes more, but other connections, and new events,
                        // get their turn first (no edge will come: this one is looked at again
                        // after them).
                        self.gave_turn.push(token);
                        return false;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if !matches!(conn.phase, Phase::Writing) {
                        conn.phase = Phase::Writing;
                        conn.deadline = Some(Instant::now() + ctx.settings.config.write_timeout);
                    }
                    return false;
                }
                Err(_) => {
                    self.close(token);
                    return false;
                }
            }
        }
        // All written: idle until the next request (partial writes on the way had set the
        // write timeout, which must not outlive them), holding no queue storage.
        conn.out.release();
        if let Some(p) = conn.pending_log.take() {
            p.finish(
                ctx.settings.access_log.as_deref(),
                &ctx.counters.by_request,
                false,
            );
        }
        conn.phase = Phase::Idle;
        conn.deadline = Some(Instant::now() + ctx.settings.config.keepalive_timeout);
        true
    }

    /// Parse the buffered bytes. `Continue`: more input is needed; `Break` ends the turn, with
    /// the request for the app if one is ready. `more_may_wait`: the socket may hold more
    /// than this request, or its end.
    #[inline(always)]
    fn parse_buffered(
        &mut self,
        token: usize,
        readable: bool,
        more_may_wait: bool,
        ctx: &LoopCtx,
    ) -> ControlFlow<Option<Work>> {
        match self.try_request(token, ctx) {
            Ok(Next::Work(work)) => {
                if more_may_wait {
                    // The socket may hold more than this request (a full read), or its end
                    // (the peer closed: this event said so, and no other edge will): look
                    // again once it is back, as for readiness that came while it was away. A
                    // client that half-closed after its request waited for the keep-alive
                    // timeout for its close, whenever its FIN came in the same event as the
                    // request.
                    if let Some(Slot::Away { woke, .. }) = self.conns.get(token) {
                        woke.store(true, Ordering::Relaxed);
                    }
                }
                ControlFlow::Break(Some(work))
            }
            Ok(Next::NeedMore) => ControlFlow::Continue(()),
            Ok(Next::Http2) => {
                self.hand_to_http2(token, ctx);
                ControlFlow::Break(None)
            }
            Ok(Next::Answered) => {
                // Answered here (a static file): write it before parsing what follows, so
                // pipelined answers keep their order. An emptied buffer goes back to the pool
                // now, not at the connection's next turn: with 100 clients each holding one
                // until then, the pool ran dry and 3 requests in 10 paid a zeroed 16 KiB
                // allocation (callgrind: 4,900 of 19,900 instructions per request in memset).
                self.requeue_answered(token, readable);
                ControlFlow::Break(None)
            }
            Err(e) => {
                self.protocol_error(token, e, ctx);
                ControlFlow::Break(None)
            }
        }
    }

    /// One read from the socket into the connection's buffer. `Continue(readable)`: whether
    /// the socket may hold more; `Break` ends the turn (with the request of a body cut short).
    #[inline(always)]
    fn read_some(
        &mut self,
        token: usize,
        drain: bool,
        tls: bool,
        ctx: &LoopCtx,
    ) -> ControlFlow<Option<Work>, bool> {
        let conn = match self.conns.get_mut(token) {
            Some(Slot::Here(c)) => c,
            _ => return ControlFlow::Break(None),
        };
        // A handshake step past this turn's budget waits for the next turn (mod.rs).
        if conn.tls.as_ref().is_some_and(|l| l.handshaking()) {
            if self.handshake_budget == 0 {
                self.handshakes_waiting.push(token);
                return ControlFlow::Break(None);
            }
            self.handshake_budget -= 1;
        }
        if conn.rbuf.is_none() {
            conn.rbuf = Some(self.buffers.pop().unwrap_or_default());
        }
        let limit = buffer_limit(&ctx.settings.config.limits);
        let buf = conn.rbuf.as_mut().unwrap();
        let spare = buf.spare(limit);
        if spare.is_empty() {
            // Full at the limit: the head parser reported no error, so this is a body being
            // buffered that cannot be (cannot happen: bounded by INLINE_BODY_MAX).
            self.protocol_error(token, ProtoError::HeadersTooLarge, ctx);
            return ControlFlow::Break(None);
        }
        let want = spare.len();
        let got = match &conn.tls {
            None => conn.stream.read(spare),
            Some(link) => link.read_some(spare),
        };
        match got {
            Ok(0) => {
                if matches!(conn.phase, Phase::ReadingBody(_)) {
                    // The client stopped sending mid-body. The app still gets the request and
                    // its wsgi.input raises ClientDisconnected at the cut, so a truncated body
                    // can never pass for a complete one.
                    let Phase::ReadingBody(head) = std::mem::replace(&mut conn.phase, Phase::Idle)
                    else {
                        unreachable!()
                    };
                    return ControlFlow::Break(Some(self.take_work(token, *head, false)));
                }
                // Client closed. Whatever was pending is dropped with the connection.
                self.close(token);
                ControlFlow::Break(None)
            }
            Ok(n) => {
                buf.commit(n);
                crate::observe::counters::BYTES_IN.fetch_add(n as u64, Ordering::Relaxed);
                match conn.phase {
                    Phase::Idle => {
                        conn.phase = Phase::ReadingHead;
                        conn.deadline = Some(Instant::now() + ctx.settings.config.header_timeout);
                    }
                    // Body progress renews the read timeout.
                    Phase::ReadingBody(_) => {
                        conn.deadline = Some(Instant::now() + ctx.settings.config.read_timeout);
                    }
                    _ => {}
                }
                // A short read emptied the socket: edge-triggered epoll reports new data.
                ControlFlow::Continue(n == want || drain || tls)
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => ControlFlow::Continue(false),
            Err(_) => {
                tls_failed(ctx, conn);
                self.close(token);
                ControlFlow::Break(None)
            }
        }
    }

    /// A connection that opened with the HTTP/2 preface leaves the loop's table for a task of
    /// the loop (`io::h2`) with the bytes read so far, its socket registered under the task's
    /// token. It stays counted as open until its task ends.
    fn hand_to_http2(&mut self, token: usize, ctx: &LoopCtx) {
        let (Some(hub), Some(tasks)) = (ctx.settings.h2.clone(), self.tasks.as_mut()) else {
            return;
        };
        let Slot::Here(mut conn) = self.conns.remove(token) else {
            return;
        };
        conn.deadline = None;
        let task_token = Token(super::H2_BASE + tasks.next_key());
        let fd = conn.stream.fd();
        let interest = Interest::READABLE | Interest::WRITABLE;
        let registered = if conn.registered {
            self.poll
                .registry()
                .reregister(&mut SourceFd(&fd), task_token, interest)
        } else {
            self.poll
                .registry()
                .register(&mut SourceFd(&fd), task_token, interest)
        };
        if registered.is_err() {
            return;
        }
        conn.registered = true;
        let ready = crate::io::streams::Readiness::new();
        let stop = tasks.shared().stop().subscribe();
        if let Some(task) = hub.serve(conn, Arc::clone(&ready), stop) {
            tasks.insert_io(task, Some(ready));
        }
        if let Some(b) = &ctx.balance {
            b.publish(self.held());
        }
    }

    /// Parse a head from the buffer, or check that a body being buffered is complete. Inlined
    /// into `drive` (its one caller), as `drive`'s steps are.
    #[inline(always)]
    pub(super) fn try_request(&mut self, token: usize, ctx: &LoopCtx) -> Result<Next, ProtoError> {
        let Some(Slot::Here(conn)) = self.conns.get_mut(token) else {
            return Ok(Next::NeedMore);
        };
        if let Phase::ReadingBody(head) = &conn.phase {
            let need = match head.body {
                BodyFraming::Length(n) => n as usize,
                _ => 0,
            };
            if conn.buffered().len() < need {
                return Ok(Next::NeedMore);
            }
            let Phase::ReadingBody(head) = std::mem::replace(&mut conn.phase, Phase::Idle) else {
                unreachable!()
            };
            return Ok(Next::Work(self.take_work(token, *head, true)));
        }
        if conn.wire != Wire::Http || conn.requests == 0 {
            if let Some(next) = self.before_head(token, ctx) {
                return Ok(next);
            }
        }
        let Some(Slot::Here(conn)) = self.conns.get_mut(token) else {
            return Ok(Next::NeedMore);
        };
        let buf = conn.rbuf.as_ref().unwrap().filled();
        let limits = &ctx.settings.config.limits;
        let parsed = if conn.wire == Wire::Uwsgi {
            uwsgi::parse_packet(buf, limits)?.map(|(h, f, n)| (h, n, Some(Box::new(f))))
        } else {
            conn.parser.parse(buf, limits)?.map(|(h, n)| (h, n, None))
        };
        let Some((head, used, uwsgi_facts)) = parsed else {
            reading_head(conn, ctx);
            return Ok(Next::NeedMore);
        };
        let parsed_at = crate::clock::now_ns();
        conn.rbuf.as_mut().unwrap().consume(used);
        conn.parser.reset();
        let config = &ctx.settings.config;
        let server = (&config.server_header[..], &config.add_headers[..]);
        let plain = conn.tls.is_none();
        let out = &mut conn.out;
        if let Some(answer) = own_answer(&head, ctx, |own| own.queue_h1(&head, server, plain, out))
        {
            let client = answer_client(conn, uwsgi_facts.as_deref(), ctx);
            answered_here(conn, head, answer, ctx, client, parsed_at);
            return Ok(Next::Answered);
        }
        let buffered = conn.buffered().len() as u64;
        let body_buffered = match head.body {
            BodyFraming::None => true,
            BodyFraming::Length(n) if n <= buffered => true,
            // (Not for uwsgi: its facts travel with the Work, and nginx sent the body whole.)
            BodyFraming::Length(n)
                if n <= INLINE_BODY_MAX && !head.expect_continue && uwsgi_facts.is_none() =>
            {
                // Wait in the loop for the rest of a small body, as long as it keeps coming
                // (the read timeout, as when the app reads a body itself).
                conn.phase = Phase::ReadingBody(Box::new(head));
                conn.deadline = Some(Instant::now() + ctx.settings.config.read_timeout);
                return Ok(Next::NeedMore);
            }
            _ => false,
        };
        let mut work = self.take_work(token, head, body_buffered);
        work.uwsgi = uwsgi_facts;
        Ok(Next::Work(work))
    }

    /// Mark the connection away and hand it out with its request.
    pub(super) fn take_work(
        &mut self,
        token: usize,
        head: RequestHead,
        body_buffered: bool,
    ) -> Work {
        let (registered, woke) = match &self.conns[token] {
            Slot::Here(c) => {
                c.woke_away.store(false, Ordering::Relaxed);
                (c.registered, Arc::clone(&c.woke_away))
            }
            Slot::Away { .. } => unreachable!("take_work on an away connection"),
        };
        let Slot::Here(mut conn) =
            std::mem::replace(&mut self.conns[token], Slot::Away { woke, registered })
        else {
            unreachable!()
        };
        conn.deadline = None;
        conn.phase = Phase::Idle;
        Work {
            conn,
            head,
            body_buffered,
            parsed_at: crate::clock::now_ns(),
            uwsgi: None,
        }
    }
}

/// A head has begun to come: the header timeout runs (from the first bytes of an idle
/// connection, not from each new read).
pub(super) fn reading_head(conn: &mut Conn, ctx: &LoopCtx) {
    if matches!(conn.phase, Phase::Idle) {
        conn.phase = Phase::ReadingHead;
        conn.deadline = Some(Instant::now() + ctx.settings.config.header_timeout);
    }
}

/// The metric's reason for a handshake cut by `--header-timeout` (the sweep's, not rustls's).
pub(super) const HANDSHAKE_TIMEOUT: &str = "handshake_timeout";

/// A read failed: if TLS failed on it, count why in the metric, and tell a refused client
/// certificate in the log (`io::tls::refusals`).
fn tls_failed(ctx: &LoopCtx, conn: &crate::io::conn::Conn) {
    let Some(link) = conn.tls.as_ref() else {
        return;
    };
    if let Some(reason) = link.failure() {
        count_tls_failure(ctx, reason);
    }
    if let Some(why) = link.refused_certificate() {
        crate::io::tls::refusals::tell(conn.peer.ip(), &why);
    }
}

/// One failed TLS connection in the metric, by `TlsError::reason` (or [`HANDSHAKE_TIMEOUT`]).
pub(super) fn count_tls_failure(ctx: &LoopCtx, reason: &str) {
    let reasons = &crate::io::tls::session::FAILURE_REASONS;
    let i = reasons
        .iter()
        .position(|r| *r == reason)
        .unwrap_or(reasons.len() - 1);
    ctx.counters.tls_failures[i].fetch_add(1, Ordering::Relaxed);
}
