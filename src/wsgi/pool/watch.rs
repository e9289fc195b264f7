//! The pool's watcher: while calls wait for admission, it looks at the admitted calls every
//! `LOOK_EVERY` and judges each (`admission`): blocked in a system call (demoted, its route
//! marked blocking), computing or waiting for the GIL (its length), so that a queued call
//! waits at most a few looks behind calls that sleep.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clock::clock_time;

use super::admission::{
    stalled, Class, Waiting, COMPUTING_CPU, LOCK_LOOKS, LONG_CALL, STALLED_LOOKS,
};

use super::{Length, Pool, Ticket, EVIDENCE, LOOK_EVERY, WAITED_SHARE};

impl<J: Send + 'static> Pool<J> {
    /// The watcher's body (its own thread, until `stop`): while calls wait for admission, look
    /// at the admitted ones every `LOOK_EVERY`, demote those seen blocked, and admit queued
    /// calls in their place. Sleeps while no call waits. `non_app_cpu`: CPU time used so far
    /// by the server's threads that never run Python (the event loop's).
    pub fn watch(self: &Arc<Self>, non_app_cpu: impl Fn() -> Option<Duration>) {
        // The previous look: when, and the app threads' CPU time then.
        let mut prev: Option<(Instant, Duration)> = None;
        let mut inner = self.inner.lock().unwrap();
        loop {
            if inner.stopping {
                return;
            }
            if inner.adm.queued_now() == 0 && !inner.holders.iter().any(|h| h.ticket.judged) {
                prev = None;
                for h in inner.holders.iter_mut() {
                    h.cpu_seen = None;
                    h.stalled_looks = 0;
                    h.clean_looks = 0;
                }
                inner = self.queued.wait(inner).unwrap();
                continue;
            }
            drop(inner);
            std::thread::sleep(LOOK_EVERY);
            let now = Instant::now();
            let app_cpu = match (clock_time(libc::CLOCK_PROCESS_CPUTIME_ID), non_app_cpu()) {
                (Some(all), Some(other)) => all
                    .saturating_sub(other)
                    .saturating_sub(clock_time(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or_default()),
                _ => Duration::MAX,
            };
            inner = self.inner.lock().unwrap();
            let window = prev.map(|(t, cpu)| (now.duration_since(t), app_cpu.saturating_sub(cpu)));
            prev = Some((now, app_cpu));
            let mut demoted = Vec::new();
            let mut lengthened = 0;
            let mut long_routes = Vec::new();
            let mut i = 0;
            while i < inner.holders.len() {
                let h = &mut inner.holders[i];
                let ran = now.saturating_duration_since(h.since);
                let cpu = h.slot.cpu_time();
                if h.cpu_first.is_none() {
                    h.cpu_first = cpu;
                    h.app_first = Some(app_cpu);
                }
                let computed = cpu.zip(h.cpu_first).map(|(c, f)| c.saturating_sub(f));
                if h.length != Length::Computing && computed.is_some_and(|c| c >= COMPUTING_CPU) {
                    h.length = Length::Computing;
                    long_routes.push((h.ticket.route, ran));
                }
                if h.ticket.class == Class::Short && ran >= LONG_CALL {
                    h.ticket.class = Class::Long;
                    lengthened += 1;
                    if h.length == Length::Short {
                        h.length = Length::Unsure;
                    }
                }
                if h.length == Length::Unsure {
                    // Past `LONG_CALL` without having computed `COMPUTING_CPU`: did it wait for
                    // the interpreter (its time then says nothing of its route), or compute?
                    let others = h.app_first.zip(computed).map(|(first, own)| {
                        (app_cpu.saturating_sub(first).saturating_sub(own), own)
                    });
                    match others {
                        Some((others, own))
                            if others >= EVIDENCE && others > own * WAITED_SHARE =>
                        {
                            h.length = Length::Waited;
                        }
                        Some((_, own)) if own >= EVIDENCE => {
                            h.length = Length::Computing;
                            long_routes.push((h.ticket.route, ran));
                        }
                        // Not seen long enough, or nobody ran (the machine was busy): look again.
                        _ => {}
                    }
                }
                let was = std::mem::replace(&mut h.cpu_seen, cpu);
                if let (Some((wall, app)), Some(was), Some(cpu)) = (window, was, cpu) {
                    let slot = &h.slot;
                    match stalled(wall, cpu.saturating_sub(was), app, || slot.waiting()) {
                        Some(w) => {
                            h.stalled_looks += 1;
                            h.clean_looks = 0;
                            h.io = w == Waiting::Io;
                        }
                        None => {
                            h.stalled_looks = 0;
                            h.clean_looks += 1;
                        }
                    }
                }
                let needed = if h.io { STALLED_LOOKS } else { LOCK_LOOKS };
                if h.stalled_looks >= needed {
                    let h = inner.holders.swap_remove(i);
                    demoted.push((h.ticket, h.io));
                } else {
                    i += 1;
                }
            }
            for _ in 0..lengthened {
                inner.adm.lengthen();
            }
            for (route, ran) in long_routes {
                inner.adm.mark_long(route, ran);
            }
            for (ticket, io) in demoted {
                inner.adm.demote(ticket.class, ticket.route, io);
            }
            while !inner.idle.is_empty() || inner.total < self.max {
                let Some((job, route, class)) = inner.adm.admit_next() else {
                    break;
                };
                let ticket = Ticket {
                    route,
                    class,
                    judged: false,
                };
                self.start(inner, job, Some(ticket));
                inner = self.inner.lock().unwrap();
            }
        }
    }
}
