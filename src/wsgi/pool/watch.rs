//! The pool's watcher: while calls wait for admission, it looks at the admitted calls every
//! `LOOK_EVERY` and judges each (`admission`): blocked in a system call (demoted, its route
//! marked blocking), computing or waiting for the GIL (its length), so that a queued call
//! waits at most a few looks behind calls that sleep. Each look also sizes the blocking
//! class's room (`size_blocking`); with no admitted call to judge, the looks come every
//! `BLOCKING_LOOK_EVERY` while that room may grow and every `BLOCKING_QUIET_LOOK` while not.

use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

use crate::clock::clock_time;

use super::admission::{
    stalled, Class, Cores, Waiting, BLOCKING_FLOOR, BLOCKING_GROW_LOOKS, BLOCKING_SAMPLE,
    COMPUTING_CPU, LOCK_LOOKS, LONG_CALL, STALLED_LOOKS,
};

use super::machine::MachineIdle;
use super::{
    Holder, Inner, Length, Pool, Slot, Ticket, BLOCKING_LOOK_EVERY, BLOCKING_QUIET_LOOK, EVIDENCE,
    LOOK_EVERY, WAITED_SHARE,
};

/// The looks the app threads' share of a core is smoothed over (see `climb`).
const APP_SHARE_LOOKS: f64 = 16.0;
/// The share passed on before any was measured: between `climb::INTERPRETER_IDLE` and
/// `climb::INTERPRETER_BUSY`, so a growth is a trial.
const UNKNOWN_SHARE: f64 = 0.5;

/// How often the watcher reads the CPU while no call waits and the blocking class fills its
/// room (`Pool::idle_wait`): the span of one reading of the machine (`machine::MACHINE_SPAN`).
const CORES_EVERY: Duration = Duration::from_millis(100);

/// The CPU time the app threads used so far: the process's less the threads that never run
/// Python (`non_app_cpu`) and the watcher's own; `Duration::MAX` where a clock cannot be read.
fn app_cpu_now(non_app_cpu: &impl Fn() -> Option<Duration>) -> Duration {
    match (clock_time(libc::CLOCK_PROCESS_CPUTIME_ID), non_app_cpu()) {
        (Some(all), Some(other)) => all
            .saturating_sub(other)
            .saturating_sub(clock_time(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or_default()),
        _ => Duration::MAX,
    }
}

impl<J: Send + 'static> Pool<J> {
    /// The watcher's body (its own thread, until `stop`): while calls wait for admission, look
    /// at the admitted ones every `LOOK_EVERY`, demote those seen blocked, and admit queued
    /// calls in their place. Sleeps while no call waits. `non_app_cpu`: CPU time used so far
    /// by the server's threads that never run Python (the event loop's).
    pub fn watch(self: &Arc<Self>, non_app_cpu: impl Fn() -> Option<Duration>) {
        // Every look reads the process's CPU clock (as do the watchdog and the loop's pacing).
        crate::clock::cheap_process_cpu_clock();
        // The previous look: when, and the app threads' CPU time then.
        let mut prev: Option<(Instant, Duration)> = None;
        // Looks in a row that found the blocking class's room too small (> 0) or too large.
        let mut blocking_streak = 0i32;
        // Looks in a row, below the floor, that found the blocking calls in flight all waiting
        // on I/O with none finished (the count of finished calls then): see `give_back`.
        let mut stalled = (0u32, 0u64);
        // The share of a core the app threads used, smoothed over the looks (see `climb`);
        // kept while the watcher sleeps (what they did last), `None` until a first window.
        let mut app_share: Option<f64> = None;
        // The idle CPU of the allowance, and the app threads' share is of one core of it
        // (`MachineIdle::one_core`); the allowance is read again every second.
        let mut machine = MachineIdle::read(Instant::now());
        // Without a quota: the blocking calls' rate per CPU second lately (`Admission::fit_cores`).
        let mut cores = Cores::default();
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
                inner = self.idle_wait(inner, &mut machine, &mut cores, &non_app_cpu);
                continue;
            }
            if inner.quiet && inner.holders.is_empty() {
                // Nothing to look at until a call is admitted that must be judged
                // (`Pool::hold` wakes this) or the next quiet look.
                let until = Instant::now() + BLOCKING_QUIET_LOOK;
                while inner.holders.is_empty() && !inner.stopping {
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    inner = self.queued.wait_timeout(inner, left).unwrap().0;
                }
                drop(inner);
            } else {
                let every = if inner.holders.is_empty() {
                    BLOCKING_LOOK_EVERY
                } else {
                    LOOK_EVERY
                };
                drop(inner);
                std::thread::sleep(every);
            }
            let now = Instant::now();
            let app_cpu = app_cpu_now(&non_app_cpu);
            let machine_idle = machine.idle(now);
            let quota_used = machine.take_quota_used();
            inner = self.inner.lock().unwrap();
            let window = prev.map(|(t, cpu)| (now.duration_since(t), app_cpu.saturating_sub(cpu)));
            prev = Some((now, app_cpu));
            let known = app_cpu != Duration::MAX;
            if let Some((wall, app)) = window.filter(|(wall, _)| known && !wall.is_zero()) {
                let share = (app.as_secs_f64() / wall.as_secs_f64() / machine.one_core()).min(2.0);
                app_share = Some(app_share.map_or(share, |s| s + (share - s) / APP_SHARE_LOOKS));
            }
            Self::judge_holders(&mut inner, now, app_cpu, window);
            // Not known yet: neither idle nor busy, the rate judges.
            let share = app_share.unwrap_or(UNKNOWN_SHARE);
            if let Some(used) = quota_used {
                inner.adm.fit_quota(used, share);
            }
            if quota_used == Some(None) && known {
                inner.adm.fit_cores(&mut cores, app_cpu, machine_idle);
            }
            if inner.adm.blocking_waits() {
                inner.adm.climb.machine(machine_idle);
            }
            if Self::give_back(&mut inner, &mut stalled) {
                blocking_streak = 0;
            }
            blocking_streak = Self::size_blocking(&mut inner, blocking_streak, share);
            inner = self.admit_queued(inner);
        }
    }

    /// No call waits: sleep until one does. While the blocking class fills its room (1,000
    /// sleeping clients in a room past 1,000 queue nothing), wake every `CORES_EVERY` for a
    /// reading of `Admission::fit_cores` alone (without a quota; a quota's reading waits for
    /// the looks).
    fn idle_wait<'a>(
        self: &'a Arc<Self>,
        inner: MutexGuard<'a, Inner<J>>,
        machine: &mut MachineIdle,
        cores: &mut Cores,
        non_app_cpu: &impl Fn() -> Option<Duration>,
    ) -> MutexGuard<'a, Inner<J>> {
        if !inner.adm.blocking_full() {
            cores.forget();
            return self.queued.wait(inner).unwrap();
        }
        let inner = self.queued.wait_timeout(inner, CORES_EVERY).unwrap().0;
        if inner.adm.queued_now() > 0 || inner.stopping {
            return inner;
        }
        drop(inner);
        let now = Instant::now();
        let app_cpu = app_cpu_now(non_app_cpu);
        let machine_idle = machine.idle(now);
        let used = machine.take_quota_used();
        let mut inner = self.inner.lock().unwrap();
        if used == Some(None) && app_cpu != Duration::MAX {
            inner.adm.climb.quota(None);
            inner.adm.fit_cores(cores, app_cpu, machine_idle);
        }
        inner
    }

    /// Judge each admitted call at a look at `now` (`Holder::look`: `app_cpu`, the app threads'
    /// CPU time now; `window`, the look window's wall time and app threads' CPU): calls past
    /// `LONG_CALL` move to the long class, routes seen computing are marked long, and calls seen
    /// blocked are demoted (those waiting on I/O hold their route's place: `hold_route`).
    fn judge_holders(
        inner: &mut Inner<J>,
        now: Instant,
        app_cpu: Duration,
        window: Option<(Duration, Duration)>,
    ) {
        let mut demoted = Vec::new();
        let mut lengthened = Vec::new();
        let mut long_routes = Vec::new();
        let mut i = 0;
        while i < inner.holders.len() {
            let h = &mut inner.holders[i];
            let seen = h.look(now, app_cpu, window);
            if seen.lengthened {
                lengthened.push(h.ticket.route);
            }
            long_routes.extend(seen.long.map(|ran| (h.ticket.route, ran)));
            if seen.demote {
                let h = inner.holders.swap_remove(i);
                demoted.push((h.ticket, h.io, h.slot));
            } else {
                i += 1;
            }
        }
        for route in lengthened {
            inner.adm.lengthen(route);
        }
        for (route, ran) in long_routes {
            inner.adm.mark_long(route, ran);
        }
        for (ticket, io, slot) in demoted {
            inner.adm.demote(ticket.class, ticket.route, io);
            if io && !ticket.judged {
                Self::hold_route(inner, ticket.route, slot);
            }
        }
    }

    /// A call to `route` was demoted for waiting on I/O (on `slot`'s thread): it, and the
    /// route's other calls in flight that count in the short or long class, hold a place in
    /// the blocking class's room until they end (a call judged again holds one already). The
    /// route's queued calls are released into that room (`Admission::demote`), so its calls
    /// in flight stay within it. Without it, the calls admitted at a server's start before
    /// the route was known to block ran beside a full room. Measured (S13, Django at
    /// `CONN_MAX_AGE=60`, 16 clients): 10-17 threads, each with its own database connection
    /// for its life, against a room of 8.
    fn hold_route(inner: &mut Inner<J>, route: u64, slot: Arc<Slot<J>>) {
        inner.adm.hold_blocking();
        inner.held.push(slot);
        let mut i = 0;
        while i < inner.holders.len() {
            let h = &inner.holders[i];
            if h.ticket.route != route || h.ticket.judged {
                i += 1;
                continue;
            }
            let h = inner.holders.swap_remove(i);
            inner.adm.finished(h.ticket.class, true, route, None);
            inner.adm.hold_blocking();
            inner.held.push(h.slot);
        }
    }

    /// Below `BLOCKING_FLOOR` (where only a descent takes the room, while the interpreter was
    /// the limit), calls waiting for room, and the calls in flight all waiting on I/O with none
    /// finished for `BLOCKING_GROW_LOOKS` looks: a slow wait (a query that takes its time)
    /// holds the room while the interpreter idles, so one more, at once (the interpreter's
    /// smoothed share would take a tenth of a second or more to say so). Returns whether it
    /// grew. At a room of 1, one read of /proc per look.
    fn give_back(inner: &mut Inner<J>, stalled: &mut (u32, u64)) -> bool {
        let done = inner.adm.climb.done();
        let in_flight = || inner.blocking.iter().chain(inner.held.iter());
        let waits = inner.adm.blocking_limit() < BLOCKING_FLOOR
            && inner.adm.blocking_waits()
            && in_flight().next().is_some()
            && in_flight().all(|slot| slot.waiting() == Waiting::Io);
        if !waits || stalled.1 != done {
            *stalled = (0, done);
        }
        stalled.0 += u32::from(waits);
        if stalled.0 < BLOCKING_GROW_LOOKS as u32 {
            return false;
        }
        *stalled = (0, done);
        inner.adm.step_blocking(true);
        true
    }

    /// While calls of the blocking class wait for room, size it by where the threads of those
    /// in flight wait: none in `futex` (the interpreter is free whenever the one running
    /// Python lets it go) over `BLOCKING_GROW_LOOKS` looks, twice the room; two or more
    /// (a convoy for the GIL) over `STALLED_LOOKS` looks, one less. Returns the new streak.
    /// `share`: the app threads' share of a core, smoothed: once a blocking call has finished,
    /// growth depends on it too (`Admission::grow_blocking`, `climb`).
    fn size_blocking(inner: &mut Inner<J>, streak: i32, share: f64) -> i32 {
        inner.quiet = false;
        if !inner.adm.blocking_waits() {
            return 0;
        }
        let now = Instant::now();
        if inner.adm.descend_blocking(now, share) {
            return 0;
        }
        // With no growth allowed now (the interpreter busy, a hold, a trial, too little
        // evidence), a look can only find a convoy for the GIL, and only above the floor: the
        // next look in `BLOCKING_QUIET_LOOK` once a rate was measured (a trial is judged by the
        // calls that finish, not by looks; before, a burst of sleeping calls waits for the look
        // that sees the interpreter idle enough), and at the floor or below no /proc reads (up
        // to `BLOCKING_SAMPLE` per look).
        if inner.adm.climb.may_grow(now, share).is_none() {
            inner.quiet = inner.adm.climb.rated();
            if inner.adm.blocking_limit() <= BLOCKING_FLOOR {
                return 0;
            }
        }
        // Threads in `futex` (waiting for the GIL, or a lock), and in no system call at all
        // (running, or runnable on a busy machine: about to want the GIL).
        // At most `BLOCKING_SAMPLE` of them, the latest started: each costs a read of /proc,
        // and with 1,000 sleeping calls reading all every look cost S5 a quarter of its rate.
        let (mut locked, mut running) = (0, 0);
        for slot in inner.blocking.iter().rev().take(BLOCKING_SAMPLE) {
            match slot.waiting() {
                Waiting::Lock => locked += 1,
                Waiting::Unknown => running += 1,
                Waiting::Io => {}
            }
            if locked == 2 {
                break;
            }
        }
        let streak = match (locked, running) {
            (0, 0 | 1) => streak.max(0) + 1,
            (0 | 1, _) => 0,
            _ => streak.min(0) - 1,
        };
        if streak >= BLOCKING_GROW_LOOKS {
            // Held back (a trial under way, a hold, too little evidence): the streak stands.
            if inner.adm.grow_blocking(Instant::now(), share) {
                0
            } else {
                streak
            }
        } else if streak <= -(STALLED_LOOKS as i32) {
            inner.adm.step_blocking(false);
            0
        } else {
            streak
        }
    }

    /// Admit queued calls while there is room and a thread (a parked one, or a new one below
    /// `max`).
    fn admit_queued<'a>(
        self: &'a Arc<Self>,
        mut inner: MutexGuard<'a, Inner<J>>,
    ) -> MutexGuard<'a, Inner<J>> {
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
        inner
    }
}

/// What one look found of one admitted call.
struct Seen {
    /// A short call past `LONG_CALL`: it moved to the long class.
    lengthened: bool,
    /// Seen computing: its route is long (how long the call had run).
    long: Option<Duration>,
    /// Seen blocked over enough looks: it stops counting.
    demote: bool,
}

impl<J> Holder<J> {
    /// Judge this admitted call at a look at `now`: `app_cpu`, the app threads' CPU time now;
    /// `window`, the look window's wall time and app threads' CPU (`None` at the first look).
    fn look(
        &mut self,
        now: Instant,
        app_cpu: Duration,
        window: Option<(Duration, Duration)>,
    ) -> Seen {
        let mut seen = Seen {
            lengthened: false,
            long: None,
            demote: false,
        };
        let ran = now.saturating_duration_since(self.since);
        let cpu = self.slot.cpu_time();
        if self.cpu_first.is_none() {
            self.cpu_first = cpu;
            self.app_first = Some(app_cpu);
        }
        let computed = cpu.zip(self.cpu_first).map(|(c, f)| c.saturating_sub(f));
        if self.length != Length::Computing && computed.is_some_and(|c| c >= COMPUTING_CPU) {
            self.length = Length::Computing;
            seen.long = Some(ran);
        }
        if self.ticket.class == Class::Short && ran >= LONG_CALL {
            self.ticket.class = Class::Long;
            seen.lengthened = true;
            if self.length == Length::Short {
                self.length = Length::Unsure;
            }
        }
        if self.length == Length::Unsure {
            // Past `LONG_CALL` without having computed `COMPUTING_CPU`: did it wait for the
            // interpreter (its time then says nothing of its route), or compute?
            let others = self
                .app_first
                .zip(computed)
                .map(|(first, own)| (app_cpu.saturating_sub(first).saturating_sub(own), own));
            match others {
                Some((others, own)) if others >= EVIDENCE && others > own * WAITED_SHARE => {
                    self.length = Length::Waited;
                }
                Some((_, own)) if own >= EVIDENCE => {
                    self.length = Length::Computing;
                    seen.long = Some(ran);
                }
                // Not seen long enough, or nobody ran (the machine was busy): look again.
                _ => {}
            }
        }
        let was = std::mem::replace(&mut self.cpu_seen, cpu);
        if let (Some((wall, app)), Some(was), Some(cpu)) = (window, was, cpu) {
            let slot = &self.slot;
            match stalled(wall, cpu.saturating_sub(was), app, || slot.waiting()) {
                Some(w) => {
                    self.stalled_looks += 1;
                    self.clean_looks = 0;
                    self.io = w == Waiting::Io;
                }
                None => {
                    self.stalled_looks = 0;
                    self.clean_looks += 1;
                }
            }
        }
        let needed = if self.io { STALLED_LOOKS } else { LOCK_LOOKS };
        seen.demote = self.stalled_looks >= needed;
        seen
    }
}
