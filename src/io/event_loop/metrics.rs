//! The `--metrics-bind` listener as one of the loop's own: its connections are accepted,
//! read and parsed (proto's parser) by the loop like any other, timed out by the sweep, and
//! closed at a stop like idle ones, so a slow scraper never holds a stop up. Each gets one
//! answer (`observe::metrics_http::answer`, proto's encoder), then closes.
//!
//! Which pages exist is the server's to say, handed down as a [`MetricsPages`] value: the loop
//! imports nothing above `io`. A page the loop's thread can render without waiting (the
//! counters of `/metrics`: no GIL) is rendered here; one that waits for something (the Python
//! stacks of `/debug/requests` wait for the GIL) is rendered elsewhere: the connection goes
//! away with a `PageJob`, as to an app thread, and comes back with its answer. The loop
//! never waits for the GIL. (The pages' interface is `pages.rs`.)

use std::sync::atomic::Ordering;

use super::pages::METRICS_LISTENER_TOKEN;
use super::*;
use crate::io::conn::Wire;
use crate::io::metrics_socket::MetricsSocket;
use crate::observe::metrics_http::{answer, busy_answer};

impl LoopState {
    /// Serve the metrics listener (bound by the caller) with these pages.
    pub fn serve_metrics(
        &mut self,
        mut socket: MetricsSocket,
        pages: Arc<dyn MetricsPages>,
    ) -> io::Result<()> {
        self.poll.registry().register(
            socket.source(),
            METRICS_LISTENER_TOKEN,
            Interest::READABLE,
        )?;
        self.metrics = Some((socket, pages));
        Ok(())
    }

    /// Accept every waiting metrics connection (edge-triggered: until the backlog is empty).
    /// They are not the app's: not in the accepted or open-connection counts, and never
    /// deferred to another worker (each worker has its own metrics listener).
    pub(super) fn accept_metrics(&mut self, ctx: &LoopCtx) {
        loop {
            if ctx.shutting_down() {
                return;
            }
            let Some((socket, _)) = &self.metrics else {
                return;
            };
            match socket.accept() {
                Ok((stream, peer)) => {
                    let entry = self.conns.vacant_entry();
                    let token = entry.key();
                    // No app listener: `listener` is never read for a metrics connection.
                    let mut conn = Box::new(Conn::new(stream, token, usize::MAX, peer));
                    conn.wire = Wire::Metrics;
                    conn.deadline = Some(Instant::now() + ctx.settings.config.header_timeout);
                    entry.insert(Slot::Here(conn));
                    self.unregistered.push(token);
                    self.ready.push_back((token, ReadHint::Readable));
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) => {
                    // Out of descriptors: the sweep tries again (as for the app's listeners).
                    self.accept_paused = true;
                    return;
                }
                // ECONNABORTED and friends concern one client only.
                Err(_) => continue,
            }
        }
    }

    /// A metrics connection's bytes: parse its request and answer it (here, or elsewhere).
    pub(super) fn metrics_request(&mut self, token: usize, ctx: &LoopCtx) -> Next {
        let Some(Slot::Here(conn)) = self.conns.get_mut(token) else {
            return Next::NeedMore;
        };
        let Some((_, pages)) = &self.metrics else {
            self.close(token);
            return Next::NeedMore;
        };
        let buf = conn.rbuf.as_ref().unwrap().filled();
        let head = match conn.parser.parse(buf, &ctx.settings.config.limits) {
            Ok(None) => {
                if matches!(conn.phase, Phase::Idle) {
                    conn.phase = Phase::ReadingHead;
                }
                return Next::NeedMore;
            }
            Ok(Some((head, used))) => {
                conn.rbuf.as_mut().unwrap().consume(used);
                head
            }
            Err(e) => {
                // Proto's error answer, and a lingering close (the client may still send).
                conn.out.push_owned(answer(Err(e), |_| None));
                conn.after_output = AfterOutput::CloseLingering;
                conn.phase = Phase::Idle;
                return Next::Answered;
            }
        };
        conn.parser.reset();
        if pages.elsewhere(head.path()) {
            let pages = Arc::clone(pages);
            let (registered, woke) = (conn.registered, Arc::clone(&conn.woke_away));
            woke.store(false, Ordering::Relaxed);
            let Slot::Here(mut conn) =
                std::mem::replace(&mut self.conns[token], Slot::Away { woke, registered })
            else {
                unreachable!()
            };
            conn.deadline = None;
            conn.phase = Phase::Idle;
            let job = Box::new(PageJob {
                conn,
                head,
                ctx: Arc::clone(&self.shared),
            });
            let Err(job) = pages.render_elsewhere(job) else {
                self.pages_away.push(token);
                return Next::NeedMore;
            };
            let PageJob { mut conn, head, .. } = *job;
            conn.out.push_owned(busy_answer(&head));
            conn.after_output.close();
            self.conns[token] = Slot::Here(conn);
            return Next::Answered;
        }
        conn.out
            .push_owned(answer(Ok(&head), |path| pages.here(path)));
        conn.after_output.close();
        conn.phase = Phase::Idle;
        conn.deadline = Some(Instant::now() + ctx.settings.config.write_timeout);
        Next::Answered
    }
}
