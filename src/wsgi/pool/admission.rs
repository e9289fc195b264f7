//! Admission to the pool: how many app calls may run Python at once, which request goes next,
//! and when a call stops counting.
//!
//! Why: with the GIL, only one thread runs Python at a time. An elastic pool that gives every
//! queued request its own thread turns a burst of short calls into a convoy: measured on a
//! 21 KB file app at 100 clients, 105 threads cost 151 µs of server CPU per request against
//! 27–33 µs with one or two admitted (futex wake-ups and GIL hand-offs between threads that all
//! want the interpreter). Blocking apps still need many threads: 1,000 sleeping requests need
//! 1,000 threads. And a short request must not wait behind long CPU-bound ones (a
//! health check or a fast page behind a slow report).
//!
//! So calls come in two classes, by what their route (the request path) took recently:
//! *short* (under `LONG_CALL`, or never seen) and *long*. Each class may have at most `limit`
//! calls that count as *runnable*; the others wait in their class's FIFO queue, and a thread
//! that finishes a call takes the next admitted one itself (no wake-up). Among the queued calls
//! that have room, the one that came first goes first, whatever its class, except that a short
//! call goes before an older long one (at most `SHORT_FIRST` times in a row): when threads are
//! scarcer than room (`--threads` capped), a queue served before the others whenever it is not
//! empty keeps a call of another class waiting for as long as it refills.
//! A call stops counting against its class when:
//! - it is seen *blocked*: over whole look windows its thread used almost no CPU and is
//!   waiting in a system call other than `futex` (a sleep, a socket, a database), or in `futex`
//!   while the interpreter was mostly idle (app threads together used under half the window: a
//!   Python lock). A call waiting for the GIL uses no CPU either, and sleeps in the kernel, but
//!   in `futex` while someone else runs Python: admitting more then would only lengthen the
//!   convoy. A thread in no system call is runnable (the machine was busy): never demoted.
//! - a short call runs past `LONG_CALL`: it moves to the long class, so the short class's room
//!   is back within `LONG_CALL` whatever the app does. Into a full long class, its route's
//!   calls are then not admitted short until that class is within its room (`lengthen`).
//!
//! A route is marked long by CPU, not by wall time alone: a call seen using `COMPUTING_CPU` of
//! its thread's CPU holds the interpreter for whole switch intervals. A short call that passes
//! `LONG_CALL` of wall time while the other app threads used over four times its CPU was
//! waiting for the GIL behind a long call: it moves class to give its room back, but its time
//! says nothing of its route and is not recorded. (One that computed, shared the interpreter,
//! or was slowed by a busy machine, where every app thread gets little CPU, is marked long,
//! as its wall time says.) Measured (S12, HAProxy checking `/hello` beside 16 clients of a 30 ms
//! computing route): when such a wait marked `/hello` long, the next checks queued behind the
//! long class and timed out (5 UP→DOWN in 30 s); see `docs/architecture.md`.
//!
//! So 100 CPU-bound requests to one slow route run `limit` at a time, never 100 threads; a
//! fast request behind them waits at most `LONG_CALL` plus a look; 1,000 sleeping requests get
//! 1,000 threads (each demoted within a few looks).
//!
//! This module holds the bookkeeping and the judgements as plain data and functions (no
//! threads, no clocks: unit-tested in `admission/tests.rs`); `wsgi::pool` applies them under
//! its lock, and its watcher thread reads the clocks.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::climb::{Climb, Verdict};

/// Default `--max-runnable`: measured on hello world and a 21 KB file app at 4–100 clients, one
/// admitted call per class costs the least CPU (no GIL contention between admitted calls at
/// all); see docs/architecture.md.
pub const DEFAULT_LIMIT: usize = 1;

/// A call that has run this long (wall time) is long: its route's next requests queue in the
/// long class. Two CPython switch intervals: beyond it, the interpreter time-slices anyway.
pub const LONG_CALL: Duration = Duration::from_millis(10);

/// CPU a call must be seen using before its route is marked long: one CPython switch interval
/// (5 ms). A call that used less while its wall time passed `LONG_CALL` was mostly waiting.
pub const COMPUTING_CPU: Duration = Duration::from_millis(5);

/// Looks in a row that must find a call stalled before it is demoted: one window could be a
/// moment when the OS ran other processes on every core.
pub const STALLED_LOOKS: u32 = 2;
/// Looks in a row (about 100 ms) before a call waiting in `futex` while the interpreter looks
/// idle is demoted. On a machine whose cores are all busy, a call waiting for the GIL can look
/// like that for a while (the GIL's holder is not scheduled, so app threads use little CPU);
/// a call waiting on a Python lock (an event another request sets) must still be demoted
/// eventually, or the request that would release it could wait behind it.
pub const LOCK_LOOKS: u32 = 400;

/// One call in this many to a route seen blocking is admitted like any other (counted, and
/// watched): if it is watched over `STALLED_LOOKS` windows without being seen blocked and
/// finishes, the route is no longer blocking. So one call that happened to wait (or a route
/// that changed) does not exempt a route for ever. Only when its class has room and a thread is
/// free: a call that is judged again must not wait in a queue for it. It takes a place in the
/// blocking class's room as well (`Admission::hold_blocking`), so the calls of a blocking route
/// in flight stay within that room.
const PROBATION_EVERY: u32 = 32;

/// The room the blocking class starts with, and below which it shrinks only by a descent that
/// held the completion rate (`Admission::descend_blocking`). See `Admission::blocking_limit`.
/// Eight: an app whose threads share a pool of 8 connections (SQLAlchemy's QueuePool, S13's
/// Flask variant) waits for one in `futex`, which the watcher cannot tell from a wait for the
/// GIL. And a burst of sleeping calls waits for the room's first growths (four looks each):
/// measured (S5, `--threads 16:1000`, 10 clients), a start of 6 left four of the first ten
/// calls waiting about 5 ms, a p99 of 106-107 ms against 102-104 at 8. An app that keeps the
/// interpreter busy gets its room lowered by the descent instead.
pub const BLOCKING_FLOOR: usize = 8;

/// Looks in a row (1 ms apart) that must find no thread of the blocking class waiting for the
/// GIL, and at most one running, before its room doubles: a moment when every call in flight
/// happens to wait on its socket is not enough. (With two looks and up to two running, a busy
/// machine doubled the room of calls that convoy for the GIL now and then.)
pub const BLOCKING_GROW_LOOKS: i32 = 4;

/// From this room on, the blocking class's room doubles when it grows (below it, a quarter
/// more): see `Admission::grow_blocking`.
pub const BLOCKING_DOUBLE_FROM: usize = 4 * BLOCKING_FLOOR;

/// Room of the blocking class left unused this long is halved (see
/// `Admission::settle_blocking`): a pause between bursts of sleeping calls keeps it, room left
/// by a burst long past does not let a later convoy run a thread per client.
pub const BLOCKING_UNUSED: Duration = Duration::from_secs(1);

/// The most threads of the blocking class the watcher looks at per look (`Pool::size_blocking`).
pub const BLOCKING_SAMPLE: usize = 16;

/// Short calls admitted in a row before an older long call that has room (see `admit_next`):
/// a fast call then does not wait behind a long one for a thread, and a long call waits behind
/// at most this many that came after it.
pub const SHORT_FIRST: u32 = 8;

/// Routes remembered (a direct-mapped table: a route that collides with another replaces it,
/// and an unknown route is short, so the table's size bounds memory, not correctness).
const ROUTES: usize = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    Short = 0,
    Long = 1,
    /// A route whose calls were seen blocked: admitted without being judged first (its calls
    /// spend their time waiting, and judging each one first would cap the rate at one
    /// admission per look: measured, 945 req/s for 1,000 clients of an app that sleeps
    /// 0.1 s), up to the class's own room (`Admission::blocking_limit`).
    Blocking = 2,
}

/// A call waiting for admission: the job, its route's hash, and its place in arrival order.
struct Queued<J> {
    job: J,
    route: u64,
    seq: u64,
}

/// The counts and the queues behind admission (under the pool's lock); `J`: a queued job.
pub struct Admission<J> {
    /// Most calls per class that count as runnable (0: no limit, every call is admitted).
    limit: usize,
    runnable: [usize; 3],
    /// The waiting calls of each class, by `Class` (each in arrival order). The blocking
    /// class's are *released*: calls admitted uncounted that wait for a thread (calls to a
    /// blocking route when none was free, and calls that were queued in the short or long class
    /// when their route was seen blocking, which keep their place in arrival order).
    queues: [VecDeque<Queued<J>>; 3],
    /// The next call's place in arrival order.
    next_seq: u64,
    /// Short calls admitted in a row before an older long call that had room (`SHORT_FIRST`).
    short_first: u32,
    /// Per route: (hash, recent wall time in µs, smoothed; seen blocked).
    routes: Vec<(u64, u32, bool)>,
    /// Routes with a call that ran past `LONG_CALL` while the long class was full: not
    /// admitted short while the long class holds more than its room (`lengthen`).
    overflowed: Vec<u64>,
    /// Calls classified as blocking (for `PROBATION_EVERY`).
    blocking_seen: u32,
    /// Most calls of the blocking class in flight at once (below `BLOCKING_FLOOR` only by a
    /// descent that held the completion rate, `descend_blocking`).
    /// The watcher raises it while calls wait for it and no call in flight waits for the
    /// interpreter, and lowers it while several do (`Pool::size_blocking`); room left unused
    /// for a while is halved (`settle_blocking`). So calls that sleep (1,000
    /// sleeping clients) get as many threads as they need within a few looks, and calls that
    /// block briefly between stretches of Python (a database connection per request) run
    /// about as many at once as keep the interpreter busy, not one thread per request: every
    /// thread more only waits for the GIL, and each hand-off costs wake-ups.
    blocking_limit: usize,
    /// When the blocking class last used at least half its room, or had calls waiting for it.
    blocking_used: Option<Instant>,
    /// Whether the blocking class's room may grow: the evidence of its completion rate.
    pub climb: Climb,
    pub stats: AdmissionStats,
}

/// What the server's `stats` report about admission.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdmissionStats {
    /// The most calls of each class that counted as runnable at once. The short class's never
    /// passes the limit; the long class's can, by calls that became long while running.
    pub runnable_peak: [usize; 3],
    /// Calls admitted at once because their route was seen blocking.
    pub admitted_blocking: u64,
    /// Calls that waited in a queue before being admitted.
    pub queued: u64,
    /// Calls seen blocked, which stopped counting as runnable.
    pub demoted: u64,
    /// Short calls that ran past `LONG_CALL` and moved to the long class.
    pub lengthened: u64,
    /// Long calls that waited for admitted fast calls to go first (`wsgi::pool`).
    pub fast_first: u64,
    /// The blocking class's room now (`blocking_limit`), and the least it has been.
    pub blocking_room: usize,
    pub blocking_room_least: usize,
}

impl<J> Admission<J> {
    pub fn new(limit: usize) -> Admission<J> {
        Admission {
            limit,
            runnable: [0, 0, 0],
            queues: [VecDeque::new(), VecDeque::new(), VecDeque::new()],
            next_seq: 0,
            short_first: 0,
            routes: vec![(0, 0, false); ROUTES],
            overflowed: Vec::new(),
            blocking_seen: 0,
            blocking_limit: BLOCKING_FLOOR,
            blocking_used: None,
            climb: Climb::default(),
            stats: AdmissionStats {
                blocking_room: BLOCKING_FLOOR,
                blocking_room_least: BLOCKING_FLOOR,
                ..AdmissionStats::default()
            },
        }
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    pub fn runnable(&self, class: Class) -> usize {
        self.runnable[class as usize]
    }

    pub fn queued_now(&self) -> usize {
        self.queues.iter().map(VecDeque::len).sum()
    }

    /// The class of a request to `route`, from what its recent calls took.
    pub fn class_of(&self, route: u64) -> Class {
        let (hash, micros, blocking) = self.routes[route as usize % ROUTES];
        if hash != route {
            Class::Short
        } else if blocking {
            Class::Blocking
        } else if u128::from(micros) >= LONG_CALL.as_micros() {
            Class::Long
        } else {
            Class::Short
        }
    }

    /// The class a new request to `route` is admitted in, and whether it is judged again:
    /// `class_of`, except that one in `PROBATION_EVERY` blocking calls is judged again like any
    /// other when its class and the blocking class have room and a `thread` is free (`true`:
    /// the caller must have it watched, see [`Admission::unblocked`], and hold its place in the
    /// blocking class's room, [`Admission::hold_blocking`]).
    pub fn classify(&mut self, route: u64, thread: bool) -> (Class, bool) {
        let class = self.class_of(route);
        if class != Class::Blocking {
            return (class, false);
        }
        self.blocking_seen = self.blocking_seen.wrapping_add(1);
        if self.blocking_seen.is_multiple_of(PROBATION_EVERY) {
            let micros = self.routes[route as usize % ROUTES].1;
            let judged = if u128::from(micros) >= LONG_CALL.as_micros() {
                Class::Long
            } else {
                Class::Short
            };
            if thread && self.has_room(judged) && self.has_room(Class::Blocking) {
                return (judged, true);
            }
        }
        (Class::Blocking, false)
    }

    /// Remember what a call to `route` took (smoothed: 1/4 of the new, 3/4 of the old).
    pub fn record(&mut self, route: u64, took: Duration) {
        let micros = took.as_micros().min(u128::from(u32::MAX)) as u32;
        let entry = &mut self.routes[route as usize % ROUTES];
        if entry.0 == route {
            entry.1 = ((u64::from(entry.1) * 3 + u64::from(micros)) / 4) as u32;
        } else {
            *entry = (route, micros, false);
        }
    }

    /// Is there room for one more runnable call of `class`?
    pub fn has_room(&self, class: Class) -> bool {
        let limit = match class {
            Class::Blocking => self.blocking_limit,
            _ => self.limit,
        };
        self.limit == 0 || self.runnable[class as usize] < limit
    }

    /// May a call of `class` to `route` be admitted now: room (`has_room`), and not a short
    /// call of a route refused short admission (`lengthen`).
    pub fn may_admit(&self, route: u64, class: Class) -> bool {
        self.has_room(class) && !(class == Class::Short && self.short_refused(route))
    }

    /// A call of `route` ran long into a full long class, still over its room (`lengthen`).
    fn short_refused(&self, route: u64) -> bool {
        !self.overflowed.is_empty()
            && self.runnable[Class::Long as usize] > self.limit
            && self.overflowed.contains(&route)
    }

    /// The long class is back within its room: no route is refused short admission.
    fn settle_long(&mut self) {
        if self.runnable[Class::Long as usize] <= self.limit {
            self.overflowed.clear();
        }
    }

    /// The blocking class's room now (see `blocking_limit`).
    pub fn blocking_limit(&self) -> usize {
        self.blocking_limit
    }

    /// The blocking class's room is `room` now (and its readings say so).
    fn set_room(&mut self, room: usize) {
        self.blocking_limit = room;
        self.stats.blocking_room = room;
        self.stats.blocking_room_least = self.stats.blocking_room_least.min(room);
    }

    /// Calls of the blocking class wait for room.
    pub fn blocking_waits(&self) -> bool {
        !self.queues[Class::Blocking as usize].is_empty() && !self.has_room(Class::Blocking)
    }

    /// More room for the blocking class: a quarter more up to `BLOCKING_DOUBLE_FROM`, twice as
    /// much above it (from the floor to 1,000 calls in 12 steps: with a quarter more per step,
    /// 25 steps, a burst of 1,000 sleeping calls waited up to 90 ms for it). Near the floor
    /// by a quarter: a look that misses a GIL convoy on a busy machine then costs a few threads
    /// (and database connections), not twice as many.
    /// Only as the evidence allows (`Climb`): at once until a blocking call has finished or
    /// while the app threads' `share` of a core is small, not while it is large, and as a
    /// trial against the rate measured at the present room in between; one trial at a time,
    /// none during a hold; under a quota, within what it can run (`quota`). Returns whether it
    /// grew.
    pub fn grow_blocking(&mut self, now: Instant, share: f64) -> bool {
        let Some(base) = self.climb.may_grow(now, share) else {
            return false;
        };
        let from = self.blocking_limit;
        self.set_room(self.quota_cap(if from < BLOCKING_DOUBLE_FROM {
            from + (from / 4).max(1)
        } else {
            from.saturating_mul(2)
        }));
        let demand =
            self.runnable[Class::Blocking as usize] + self.queues[Class::Blocking as usize].len();
        self.climb
            .grown(now, from, self.blocking_limit, demand, base);
        true
    }

    /// The blocking class's room by one: less (not below `BLOCKING_FLOOR`, nor below where a
    /// descent took it), or more (`up`: only back up to the floor, from below it).
    pub fn step_blocking(&mut self, up: bool) {
        let was = self.blocking_limit;
        let to = if up { was + 1 } else { was.saturating_sub(1) };
        self.set_room(to.clamp(BLOCKING_FLOOR.min(was), BLOCKING_FLOOR.max(was)));
        if self.blocking_limit != was {
            self.climb.changed();
        }
    }

    /// Less room for the blocking class, as a trial (`Climb::may_shrink`): while the app
    /// threads' `share` of a core says the interpreter is busy, a room that holds the
    /// completion rate with fewer calls in flight runs them with fewer GIL hand-offs and
    /// database connections. Below `BLOCKING_FLOOR` only this way. Returns whether it shrank.
    pub fn descend_blocking(&mut self, now: Instant, share: f64) -> bool {
        let from = self.blocking_limit;
        let Some((base, to)) = self.climb.may_shrink(now, share, from) else {
            return false;
        };
        self.set_room(to);
        self.climb.shrunk(now, from, base);
        true
    }

    /// Count one call of `class` as admitted (the caller checked `has_room` and has a thread).
    pub fn admit(&mut self, class: Class) {
        if class == Class::Blocking {
            self.stats.admitted_blocking += 1;
        }
        let c = class as usize;
        self.runnable[c] += 1;
        self.stats.runnable_peak[c] = self.stats.runnable_peak[c].max(self.runnable[c]);
    }

    /// A call to a blocking route judged again (`classify`) takes a place in the blocking
    /// class's room until it ends (`release_blocking`).
    pub fn hold_blocking(&mut self) {
        self.runnable[Class::Blocking as usize] += 1;
    }

    /// The call of `hold_blocking` ended.
    pub fn release_blocking(&mut self) {
        self.runnable[Class::Blocking as usize] -= 1;
    }

    /// A call that could not be admitted now (no room, or no thread): it waits in its class,
    /// first in first out (a blocking call only waits for a thread).
    pub fn wait(&mut self, job: J, route: u64, class: Class) {
        self.stats.queued += 1;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.queues[class as usize].push_back(Queued { job, route, seq });
    }

    /// The next queued call that has room, admitted: of the heads of the queues whose class has
    /// room, the one that came first; a short call before an older long one, though, up to
    /// `SHORT_FIRST` in a row. A queued short call whose route has become long since it was
    /// queued moves to the long queue (in its place by arrival). The short queue's head is its
    /// first call of a route not refused short admission (`lengthen`): a fast route's call
    /// passes those.
    pub fn admit_next(&mut self) -> Option<(J, u64, Class)> {
        while self.has_room(Class::Short) {
            let Some(head) = self.queues[0].front() else {
                break;
            };
            if self.class_of(head.route) != Class::Long {
                break;
            }
            let moved = self.queues[0].pop_front().expect("a head was seen");
            insert_in_order(&mut self.queues[1], moved);
        }
        let short_at = self.queues[0]
            .iter()
            .position(|q| !self.short_refused(q.route))
            .unwrap_or(usize::MAX);
        let head = |c: Class| {
            let at = if c == Class::Short { short_at } else { 0 };
            self.has_room(c)
                .then(|| self.queues[c as usize].get(at).map(|q| (q.seq, c)))
                .flatten()
        };
        let heads = [head(Class::Blocking), head(Class::Short), head(Class::Long)];
        let oldest = heads.iter().flatten().min()?.1;
        let pick = if oldest == Class::Long && heads[1].is_some() && self.short_first < SHORT_FIRST
        {
            self.short_first += 1;
            heads[..2].iter().flatten().min()?.1
        } else {
            oldest
        };
        if pick == Class::Long {
            self.short_first = 0;
        }
        let at = if pick == Class::Short { short_at } else { 0 };
        let q = self.queues[pick as usize].remove(at)?;
        self.admit(pick);
        Some((q.job, q.route, pick))
    }

    /// The next queued call whatever the room, first come first served (while the server
    /// stops, every call still queued runs as soon as a thread is free).
    pub fn admit_any(&mut self) -> Option<(J, u64, Class)> {
        let class = [Class::Blocking, Class::Short, Class::Long]
            .into_iter()
            .filter_map(|c| self.queues[c as usize].front().map(|q| (q.seq, c)))
            .min()?
            .1;
        let q = self.queues[class as usize].pop_front()?;
        self.admit(class);
        Some((q.job, q.route, class))
    }

    /// An admitted call finished; `counted`: it still counted against `class` (not demoted);
    /// `took`: its wall time, or `None` when that says nothing of its route (it ran past
    /// `LONG_CALL` without computing: it waited for the interpreter).
    pub fn finished(&mut self, class: Class, counted: bool, route: u64, took: Option<Duration>) {
        if counted || class == Class::Blocking {
            self.runnable[class as usize] -= 1;
        }
        self.settle_long();
        if let Some(took) = took {
            self.record(route, took);
        }
    }

    /// A call of the blocking class ended at `now` after `took`: the growth under trial is
    /// judged when its span is long enough (`Climb::finished`), and goes back if it did not
    /// pay. Room left unused (under half of it in flight, none waiting) for `BLOCKING_UNUSED`
    /// is halved, not below twice what is in flight nor the floor. By time, not by calls: room
    /// that shrank as each call of a burst ended was back at the floor after a pause, and the
    /// next burst of sleeping calls waited for it to grow again (S5 at 1,000 clients: p99 269
    /// ms against 148 with no room at all).
    pub fn settle_blocking(&mut self, now: Instant, took: Duration) {
        if let Some(Verdict::Revert(room)) = self.climb.finished(now, took) {
            self.set_room(room);
        }
        let in_flight = self.runnable[Class::Blocking as usize];
        if 2 * in_flight >= self.blocking_limit || !self.queues[Class::Blocking as usize].is_empty()
        {
            self.blocking_used = Some(now);
            return;
        }
        let since = *self.blocking_used.get_or_insert(now);
        if now.saturating_duration_since(since) >= BLOCKING_UNUSED {
            let was = self.blocking_limit;
            self.set_room((was / 2).max(2 * in_flight).max(BLOCKING_FLOOR));
            self.blocking_used = Some(now);
            if self.blocking_limit != was {
                self.climb.changed();
            }
        }
    }

    /// A counted call to `route` finished after the watcher had judged it over `STALLED_LOOKS`
    /// windows in a row without seeing it blocked: the route does not block (now). Only a
    /// watched call says so: the watcher looks only while it has reason to, and a call nobody
    /// looked at, finishing counted, says nothing (measured: S5's blocking route lost its mark
    /// at every call judged again, and the calls after it were admitted one per demotion).
    pub fn unblocked(&mut self, route: u64) {
        let entry = &mut self.routes[route as usize % ROUTES];
        if entry.0 == route {
            entry.2 = false;
        }
    }

    /// An admitted call of `class` to `route` was seen blocked: it no longer counts. If it
    /// waited on I/O (`io`), the route's next calls are admitted at once (`Class::Blocking`),
    /// and so are its calls that wait in a queue now: they move to the released ones. (Before,
    /// each waited for a demotion of its own: on a fresh server, 100 clients of an app that
    /// sleeps 0.1 s queued behind its first call, and the last was admitted 74 ms late, one per
    /// three looks.)
    pub fn demote(&mut self, class: Class, route: u64, io: bool) {
        self.runnable[class as usize] -= 1;
        self.stats.demoted += 1;
        self.settle_long();
        if !io {
            return;
        }
        let entry = &mut self.routes[route as usize % ROUTES];
        let was_blocking = entry.0 == route && entry.2;
        if entry.0 != route {
            *entry = (route, 0, true);
        }
        entry.2 = true;
        if was_blocking {
            return;
        }
        let [short, long, released] = &mut self.queues;
        for queue in [short, long] {
            if queue.iter().any(|q| q.route == route) {
                let (same, others): (VecDeque<_>, VecDeque<_>) =
                    queue.drain(..).partition(|q| q.route == route);
                *queue = others;
                for q in same {
                    insert_in_order(released, q);
                }
            }
        }
    }

    /// A short call to `route` ran past `LONG_CALL` (wall time): it counts as long from now on
    /// (the short room is free again). Its route is not marked long (`mark_long`). If the long
    /// class was full, the route's calls are not admitted short until the class is back within
    /// its room: each took the short room the one before left and, on a loaded machine, ran
    /// past `LONG_CALL` in turn (2 to 5 calls of a 3 ms route counted long in a room of 1).
    /// Other routes' calls still take it: a fast call that waited for the interpreter behind a
    /// long one (S12's health check) holds back only its own route's, and only for that while.
    pub fn lengthen(&mut self, route: u64) {
        let full = !self.has_room(Class::Long);
        self.runnable[Class::Short as usize] -= 1;
        self.admit(Class::Long);
        self.stats.lengthened += 1;
        if full && !self.overflowed.contains(&route) {
            self.overflowed.push(route);
        }
    }

    /// A call to `route` was seen using `COMPUTING_CPU` or more, after `ran` of wall time: the
    /// route's next calls queue in the long class.
    pub fn mark_long(&mut self, route: u64, ran: Duration) {
        let entry = &mut self.routes[route as usize % ROUTES];
        let micros = ran.as_micros().min(u128::from(u32::MAX)) as u32;
        if entry.0 != route {
            *entry = (route, 0, false);
        }
        entry.1 = entry.1.max(micros).max(LONG_CALL.as_micros() as u32);
    }
}

/// Put `q` in `queue` at its place by arrival (each queue is kept in arrival order).
fn insert_in_order<J>(queue: &mut VecDeque<Queued<J>>, q: Queued<J>) {
    let at = queue.partition_point(|other| other.seq < q.seq);
    queue.insert(at, q);
}

pub use super::route::route_hash;
pub use cores::Cores;
pub use stall::{stalled, Waiting};
mod cores;
mod quota;
mod stall;
#[cfg(test)]
mod tests;
