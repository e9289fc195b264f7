//! The loop's looks at the kernel: the wait for events (`wait_for_events`: a spin of zero-timeout
//! looks first, as long as `spin` says, then a sleep), the events of one wait sorted by token
//! (`take_events`: listeners to accept from, connections to look at, HTTP/2 tasks and HTTP/3
//! sockets to wake), the HTTP/2 and HTTP/3 tasks polled (`run_tasks`), and HTTP/3's sockets
//! joining the epoll set (`start_http3`).

use super::*;

impl LoopState {
    /// Wait up to `timeout` for the kernel's events, into `self.events`. A wait that may sleep
    /// first looks without sleeping for as long as the spin's limit (`spin`), and tells the
    /// spin what happened.
    pub(super) fn wait_for_events(&mut self, timeout: Duration) -> io::Result<()> {
        self.pace.turn();
        if timeout.is_zero() {
            return self.poll.poll(&mut self.events, Some(timeout));
        }
        let limit = self.spin.limit();
        if !limit.is_zero() {
            let start = Instant::now();
            self.spin.look_at_allowance(start);
            let preempted_before = spin::preemptions();
            let found = loop {
                self.poll.poll(&mut self.events, Some(Duration::ZERO))?;
                if !self.events.is_empty() {
                    break true;
                }
                if start.elapsed() >= limit {
                    break false;
                }
                std::hint::spin_loop();
            };
            let preempted = spin::preemptions() > preempted_before;
            self.spin.spun(found, preempted);
            if found {
                return Ok(());
            }
        }
        let asleep = Instant::now();
        self.spin.look_at_allowance(asleep);
        let polled = self.poll.poll(&mut self.events, Some(timeout));
        self.spin.woke(asleep.elapsed(), !self.events.is_empty());
        polled
    }

    /// After the wait: the events the kernel reported (listeners to accept from, connections
    /// and HTTP/2 tasks to look at), then the connections that gave up their turn.
    pub(super) fn take_events(&mut self, ctx: &LoopCtx) {
        self.handshake_budget = HANDSHAKES_PER_TURN;
        let mut accept_from = std::mem::take(&mut self.spare);
        let mut accept_metrics = false;
        for ev in self.events.iter() {
            let t = ev.token();
            if t == WAKER {
                continue;
            }
            if t == pages::METRICS_LISTENER_TOKEN {
                accept_metrics = true;
                continue;
            }
            if t.0 > LISTENER_BASE - self.listeners.len() && t.0 <= LISTENER_BASE {
                accept_from.push(LISTENER_BASE - t.0);
                continue;
            }
            if (H3_BASE..H3_BASE + H2_BASE).contains(&t.0) {
                if let Some(hub) = &ctx.settings.h3 {
                    let readable = ev.is_readable() || ev.is_error();
                    let writable = ev.is_writable() || ev.is_error();
                    hub.event(t.0 - H3_BASE, readable, writable);
                }
                continue;
            }
            if (H2_BASE..2 * H2_BASE).contains(&t.0) {
                if let Some(tasks) = &self.tasks {
                    let mut bits = 0;
                    if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                        bits |= crate::io::streams::READ;
                    }
                    if ev.is_writable() || ev.is_write_closed() || ev.is_error() {
                        bits |= crate::io::streams::WRITE;
                    }
                    tasks.wake(t.0 - H2_BASE, bits);
                }
                continue;
            }
            let hint = if ev.is_read_closed() || ev.is_error() {
                ReadHint::Drain
            } else if ev.is_readable() {
                ReadHint::Readable
            } else {
                ReadHint::None
            };
            self.ready.push_back((t.0, hint));
        }
        for &i in &accept_from {
            self.accept(i, ctx);
        }
        self.give_back(accept_from);
        if accept_metrics {
            self.accept_metrics(ctx);
        }
        // Connections that gave up their turn go on after what has just arrived.
        if !self.gave_turn.is_empty() {
            self.ready
                .extend(self.gave_turn.drain(..).map(|t| (t, ReadHint::None)));
        }
        if !self.handshakes_waiting.is_empty() {
            let waiting = self.handshakes_waiting.drain(..);
            self.ready.extend(waiting.map(|t| (t, ReadHint::Readable)));
        }
    }

    /// Poll the HTTP/2 and HTTP/3 tasks that were woken, after telling them of a stop or of
    /// the worker's retirement (`h2_view`: a graceful stop for them). `true`: some are woken
    /// still (the loop must not sleep).
    pub(super) fn run_tasks(&mut self, ctx: &LoopCtx) -> bool {
        let Some(tasks) = self.tasks.as_mut() else {
            return false;
        };
        if ctx.shutting_down() || ctx.retired() {
            let stop = crate::io::streams::LoopView::stop(ctx);
            if let Some(hub) = &ctx.settings.h3 {
                hub.drain_at(stop);
            }
            tasks.set_stop(stop);
        }
        tasks.run(Instant::now())
    }

    /// Start HTTP/3's endpoints on this loop (`--http3`): their sockets join the epoll set,
    /// their tasks the task set; `runner` runs each request stream's call.
    pub fn start_http3(
        &mut self,
        runner: Arc<dyn crate::io::streams::StreamRunner>,
    ) -> io::Result<()> {
        let (Some(hub), Some(tasks)) = (self.shared.settings.h3.as_ref(), self.tasks.as_ref())
        else {
            return Ok(());
        };
        let view = Arc::clone(&self.shared) as Arc<dyn crate::io::streams::LoopView>;
        let inline = self
            .shared
            .settings
            .h2
            .as_ref()
            .map(|h| Arc::clone(&h.inline));
        hub.start(
            tasks.shared(),
            self.poll.registry(),
            H3_BASE,
            view,
            runner,
            inline,
        )
    }
}
