//! Whether the blocking class's room may grow: each growth is a trial, kept only if the
//! blocking calls' completion rate rose with it (a hill-climb on throughput).
//!
//! Why: the watcher grows the room while no thread of the class waits for the GIL and at most one
//! runs (`Pool::size_blocking`). That tells calls that sleep (a thread each pays) from a convoy for
//! the interpreter, but not from calls waiting on a database that waits for the CPU: on 2 cores
//! shared with PostgreSQL, Django with a connection per request grew to 16-21 threads and as many
//! database connections without more requests per second than at 8. Only the rate tells. So until a
//! blocking call has finished (nothing can be measured before, and a burst of sleeping calls must
//! get its threads at once, even right after a call that computed) the room grows freely; after,
//! never while the app threads keep the interpreter busy (`INTERPRETER_BUSY`: more threads would
//! only wait for the GIL), freely while they leave it mostly idle (`INTERPRETER_IDLE`: calls that
//! sleep), and in between only as a trial, and only while the machine has idle CPU
//! (`MACHINE_IDLE_LEAST`): a growth needs the rate measured first (`SPAN_*`); the rate after it is
//! measured once the calls it admitted have had time to finish; if it did not rise by at least half
//! as much as the calls in flight could (calls that only wait would rise as much), the room goes
//! back and stays there for a while (`HOLD_FIRST`, doubling per failed trial up to `HOLD_MOST`).
//!
//! The room also comes down, the same way: while the app threads keep the interpreter busy and
//! calls wait for room, as a trial (`may_shrink`): first straight to `DOWN_FLOOR`, then, once that
//! did not pay, to half, then by one once a halving did not pay (`Stride`); kept if the completion
//! rate held (within `DOWN_GIVE` of the descent's best rate so far), else undone and held like a
//! growth that did not pay. A thread in the room beyond what keeps the interpreter busy only adds
//! GIL hand-offs and a database connection: measured (S13, Django with kept connections on 2 cores
//! shared with PostgreSQL, 16 clients, an Intel host), a room of 2 ran 442-465 requests/s at
//! 2.15-2.26 ms of server CPU each, a room of 8 417-448 at 2.21-2.38 ms. The first trial reaches
//! `DOWN_FLOOR` from 8 in one step, about 500 calls in (halving took three trials, about 1,100
//! calls). Not below it. (With a connection per request the interpreter is not the limit, 0.5-0.6
//! of a core: the room stays.)
//!
//! Plain data and functions (the caller passes the clock), unit-tested below.

use std::time::{Duration, Instant};

/// The share of one core the app threads use (smoothed by the watcher) below which the room
/// grows freely: the interpreter is idle most of the time, the calls mostly wait.
pub const INTERPRETER_IDLE: f64 = 0.25;

/// The share from which the room does not grow: one thread runs Python at a time, so past
/// three quarters of a core more threads mostly add waiters for the GIL. Measured (S13, Django
/// with a database connection kept per thread, 2 cores shared with PostgreSQL): 0.85-0.9 of a
/// core at 8 threads, and no more requests per second at 11.
pub const INTERPRETER_BUSY: f64 = 0.75;

/// The app threads' share of a core per blocking call in flight below which those calls wait
/// on something other than the interpreter (a sleep, a remote service), whatever the share
/// says: no descent (`Climb::may_shrink`). The app threads' CPU is more than the interpreter's
/// (they write the answers, and wake to ask for the GIL), so a room of sleeping calls reads as
/// a busy interpreter, and a descent to one call in flight ran one at a time while the rest
/// queued. Measured (S18's `s5`, 1,000 clients of a 0.1 s sleep, 1.5 CPUs): 400-1,100 calls
/// in flight at a share of 0.4-1.5 (0.001-0.003 per call), a descent to one call with 997
/// queued and the process at 5% of its quota; S13's Django view: 8 calls at 0.85-0.9 (0.1).
pub const WAITING_PER_CALL: f64 = 0.01;

/// The idle share of the machine's CPUs below which the room does not grow as a trial: with
/// every core busy, what the calls wait on (a database on the same machine, or the CPU itself)
/// cannot go faster with more of them in flight, and a trial only adds threads and database
/// connections for the time it lasts. Measured (S13, Django with a database connection per
/// request, PostgreSQL and the load generator on the same 2 cores): 1-6% idle, interpreter
/// share 0.5-0.6, and growth trials (8 to 10) took the connections to 9-10 without a verdict
/// that they paid.
pub const MACHINE_IDLE_LEAST: f64 = 0.10;

/// The share of its CPU quota the process keeps its blocking calls to (`admission::quota`): the
/// rest is the margin for what a reading 0.1 s late sees (calls admitted meanwhile), and keeps
/// the quota from stopping the GIL's holder (a throttled period stops every thread of the
/// cgroup).
pub const QUOTA_FULL: f64 = 0.9;

/// The shortest span a rate is measured over.
pub const SPAN_MIN: Duration = Duration::from_millis(100);

/// A rate's span is at least this many blocking calls' time (smoothed): the calls admitted by
/// a growth finish within one, and their successors run in the next ones.
pub const SPAN_CALLS: u32 = 4;

/// The fewest calls finished over a span for its rate to count.
pub const SPAN_DONE: u64 = 64;

/// How long the room stays back after a growth that did not pay, the first time; doubled at
/// each failed trial in a row, up to `HOLD_MOST`.
pub const HOLD_FIRST: Duration = Duration::from_secs(1);
pub const HOLD_MOST: Duration = Duration::from_secs(16);

/// The share of the rate a smaller room may lose and still be kept: a room that only ran
/// calls the interpreter could not take loses nothing, but two spans' rates on a busy machine
/// differ by a little.
pub const DOWN_GIVE: f64 = 0.03;

/// The smallest room a descent reaches: two calls, one running Python while the other waits on its
/// database. One alone hands the GIL to nobody but idles the interpreter through its every wait,
/// and a room of one reads as busy, so it never grows again. Measured (S18's `django`, 16 clients,
/// kept connections, AMD host, 6 rounds): floor 1 ran 0.86-0.97 of a core, 301 req/s at 1.5 CPUs
/// (319 without a quota); floor 2 1.0-1.02, as uWSGI's 8 threads, 352 (346) at the same CPU per
/// request (Intel: 459-476 at one, 442-465 at two). Calls that only compute never meet it: not
/// blocked in a system call, they run in the long class (S12's 16 clients of 200 ms: none admitted
/// to this room, 8 throughout). Calls waiting long get room back one by one (`Pool::give_back`).
pub const DOWN_FLOOR: usize = 2;

/// The fewest calls the rate after a change under trial is measured over (`SPAN_DONE` for the
/// rate before it, which is measured over the whole span at the present room): the rate a
/// change is judged by moves, over a short span on a busy machine, by more than what a trial
/// asks. Measured with 64: a descent went down to a room of 2, 10% under the rate at 4; and
/// (S13, Django with a database connection per request, 16 clients) rates at the same room of
/// 8 measured 249-305 calls/s within one run, and a growth to 10 was kept on such a difference,
/// with 10-11 database connections for no more requests per second.
pub const TRIAL_SPAN_DONE: u64 = 4 * SPAN_DONE;

/// How far the next descent goes (see `may_shrink`): the widest stride that has not failed
/// since another rule last changed the room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stride {
    /// Straight to `DOWN_FLOOR`: where a busy interpreter's room usually ends.
    Floor,
    /// To half of the room.
    Half,
    /// One less.
    One,
}

impl Stride {
    /// The room a descent from `room` tries.
    fn to(self, room: usize) -> usize {
        match self {
            Stride::Floor => DOWN_FLOOR,
            Stride::Half => room / 2,
            Stride::One => room - 1,
        }
        .max(DOWN_FLOOR)
    }

    /// The next narrower stride, after a descent of this one did not pay.
    fn narrower(self) -> Stride {
        match self {
            Stride::Floor => Stride::Half,
            Stride::Half | Stride::One => Stride::One,
        }
    }
}

/// A change of room under trial.
#[derive(Clone, Copy, Debug)]
struct Trial {
    /// The room before it.
    from: usize,
    /// A smaller room (kept if the rate held), not a larger one (kept if it rose).
    down: bool,
    /// The share of rate it could add at most (calls that only wait): the calls it let in
    /// over those in flight before.
    gain: f64,
    /// The completion rate (calls per second) measured at `from`.
    base: f64,
    /// Its span starts at the first call finished after this (the calls it admitted then run).
    settle_until: Instant,
}

/// What a finished call's bookkeeping concluded about the trial under way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The growth paid: the room stays.
    Keep,
    /// It did not: the room goes back to this.
    Revert(usize),
}

/// Evidence for the blocking class's room (see the module doc).
#[derive(Debug)]
pub struct Climb {
    /// Blocking calls finished so far.
    done: u64,
    /// Where the span the rate at the present room is measured over began (when, and `done`
    /// then); `None` until the first call finished since the room last changed.
    span: Option<(Instant, u64)>,
    trial: Option<Trial>,
    /// No trial before this.
    hold_until: Option<Instant>,
    /// The next hold.
    hold: Duration,
    /// A blocking call's wall time, smoothed (1/8 of the new).
    call: Duration,
    /// The best rate since a descent began (each smaller room is judged against it, so that
    /// small losses, each within `DOWN_GIVE`, do not add up); `None` outside a descent.
    best: Option<f64>,
    /// How far the next descent goes.
    stride: Stride,
    /// A rate has been measured once (see `rated`).
    rated: bool,
    /// The idle share of the machine's CPUs lately (1.0 until known): see `machine`.
    machine_idle: f64,
    /// The share of its CPU quota the process used lately, or 1.0 (`quota`).
    quota_used: Option<f64>,
    /// Trials kept and reverted (for `stats`).
    pub kept: u64,
    pub reverted: u64,
}

impl Default for Climb {
    fn default() -> Climb {
        Climb {
            done: 0,
            span: None,
            trial: None,
            hold_until: None,
            hold: HOLD_FIRST,
            call: Duration::ZERO,
            best: None,
            stride: Stride::Floor,
            rated: false,
            machine_idle: 1.0,
            quota_used: None,
            kept: 0,
            reverted: 0,
        }
    }
}

impl Climb {
    /// How long the span must last for its rate to count.
    fn span_needed(&self) -> Duration {
        SPAN_MIN.max(self.call * SPAN_CALLS)
    }

    /// The rate over the span so far at `now`, if the span is long enough to say (`fewest`:
    /// calls finished over it).
    fn rate_over(&self, now: Instant, fewest: u64) -> Option<f64> {
        let (since, done) = self.span?;
        let took = now.saturating_duration_since(since);
        let n = self.done - done;
        (took >= self.span_needed() && n >= fewest).then(|| n as f64 / took.as_secs_f64())
    }

    fn rate(&self, now: Instant) -> Option<f64> {
        self.rate_over(now, SPAN_DONE)
    }

    /// May the room grow now? `share`: the app threads' share of a core. `Some(None)`: yes, no
    /// trial (no blocking call has finished yet, or the interpreter is mostly idle);
    /// `Some(Some(base))`: yes, as a trial against the rate `base` measured at the present
    /// room; `None`: not now (the interpreter busy, a trial under way, a hold, the machine's
    /// CPUs all busy, or too little evidence yet).
    pub fn may_grow(&self, now: Instant, share: f64) -> Option<Option<f64>> {
        if self.done == 0 {
            return Some(None);
        }
        if share >= INTERPRETER_BUSY || self.quota_used.is_some_and(|u| u >= QUOTA_FULL) {
            return None;
        }
        if share < INTERPRETER_IDLE {
            return Some(None);
        }
        if self.trial.is_some()
            || self.hold_until.is_some_and(|t| now < t)
            || self.machine_idle < MACHINE_IDLE_LEAST
        {
            return None;
        }
        self.rate(now).map(Some)
    }

    /// The machine's CPUs were `idle` (a share of their time) lately: below
    /// `MACHINE_IDLE_LEAST`, no growth as a trial.
    pub fn machine(&mut self, idle: f64) {
        self.machine_idle = idle;
    }

    /// The share of its CPU quota the process used lately (None: no quota; 1.0 without one:
    /// the CPU it can get is used up, `admission::cores`): at `QUOTA_FULL` or more, no growth.
    pub fn quota(&mut self, used: Option<f64>) {
        self.quota_used = used;
    }

    pub fn quota_used(&self) -> Option<f64> {
        self.quota_used
    }

    /// The room was fitted to the quota (`Admission::fit_quota`): a trial under way ends
    /// without a verdict, and the rate is measured again from the new room (the next descent
    /// keeps its stride: the quota, not the rate, took the room down).
    pub fn capped(&mut self) {
        self.trial = None;
        self.span = None;
        self.best = None;
    }

    /// Blocking calls finished so far.
    pub fn done(&self) -> u64 {
        self.done
    }

    /// Has a rate been measured at all? Until then, from a route's first blocking calls on,
    /// the room grows as soon as a look finds the interpreter idle enough; after, growth waits
    /// mostly on trials and holds, which a look 8 ms late costs nothing (`BLOCKING_QUIET_LOOK`).
    pub fn rated(&self) -> bool {
        self.rated
    }

    /// May the room come down now? Only while the app threads keep the interpreter busy
    /// (`share`, as in `may_grow`) and each call in the `room` takes `WAITING_PER_CALL` of it
    /// or more, with no trial nor hold under way, above `DOWN_FLOOR`:
    /// `Some((base, to))`, the rate to hold (the best of the descent so far) and the smaller
    /// room: `DOWN_FLOOR`, or half of `room` once that did not pay, or one less once a halving
    /// did not pay (until another rule changes the room).
    pub fn may_shrink(&self, now: Instant, share: f64, room: usize) -> Option<(f64, usize)> {
        if self.done == 0 || share < INTERPRETER_BUSY || room <= DOWN_FLOOR {
            return None;
        }
        if share < WAITING_PER_CALL * room as f64 {
            return None;
        }
        if self.trial.is_some() || self.hold_until.is_some_and(|t| now < t) {
            return None;
        }
        let rate = self.rate_over(now, TRIAL_SPAN_DONE)?;
        Some((
            self.best.map_or(rate, |best| best.max(rate)),
            self.stride.to(room),
        ))
    }

    /// The room grew from `from` to `to` at `now`, as `may_grow` allowed (`base`: its rate),
    /// with `demand` calls in flight or waiting for it.
    pub fn grown(
        &mut self,
        now: Instant,
        from: usize,
        to: usize,
        demand: usize,
        base: Option<f64>,
    ) {
        self.best = None;
        self.trial = base.map(|base| Trial {
            from,
            down: false,
            gain: to.min(demand) as f64 / from.max(1) as f64 - 1.0,
            base,
            settle_until: now + self.call,
        });
        if self.trial.is_some() {
            self.span = None;
        }
    }

    /// The room came down from `from` at `now`, as `may_shrink` allowed (`base`: the rate to
    /// hold).
    pub fn shrunk(&mut self, now: Instant, from: usize, base: f64) {
        self.trial = Some(Trial {
            from,
            down: true,
            gain: 0.0,
            base,
            settle_until: now + self.call,
        });
        self.span = None;
    }

    /// The room changed by another rule: a trial under way ends without a verdict, and a
    /// descent starts again, straight to the floor, from the rate measured next at the new room.
    pub fn changed(&mut self) {
        self.trial = None;
        self.span = None;
        self.best = None;
        self.stride = Stride::Floor;
    }

    /// A blocking call finished at `now` after `took`: count it, and judge the trial under way
    /// if its span is long enough.
    pub fn finished(&mut self, now: Instant, took: Duration) -> Option<Verdict> {
        self.done += 1;
        self.call = if self.call.is_zero() {
            took
        } else {
            (self.call * 7 + took) / 8
        };
        self.rated = self.rated || self.rate(now).is_some();
        let Some(trial) = self.trial else {
            self.span.get_or_insert((now, self.done));
            return None;
        };
        if now < trial.settle_until {
            return None;
        }
        if self.span.is_none() {
            self.span = Some((now, self.done));
            return None;
        }
        let rate = self.rate_over(now, TRIAL_SPAN_DONE)?;
        self.trial = None;
        // Growing: calls that only wait gain as much rate as the calls let in, ask for half of
        // that. Coming down: the rate must hold.
        let paid = if trial.down {
            rate >= trial.base * (1.0 - DOWN_GIVE)
        } else {
            rate >= trial.base * (1.0 + trial.gain / 2.0)
        };
        if paid {
            self.kept += 1;
            self.hold = HOLD_FIRST;
            self.best = trial.down.then_some(trial.base.max(rate));
            // The span goes on: its rate is the next trial's base.
            Some(Verdict::Keep)
        } else {
            self.reverted += 1;
            if trial.down {
                self.stride = self.stride.narrower();
            }
            self.hold_until = Some(now + self.hold);
            self.hold = (self.hold * 2).min(HOLD_MOST);
            self.span = None;
            self.best = None;
            Some(Verdict::Revert(trial.from))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    /// An interpreter half busy: growth is a trial.
    const HALF: f64 = 0.5;

    /// Finish `n` calls of `took` each, evenly over `over` from `t`; the verdicts given.
    fn run(c: &mut Climb, t: &mut Instant, n: u32, over: Duration, took: Duration) -> Vec<Verdict> {
        let mut out = Vec::new();
        for _ in 0..n {
            *t += over / n;
            out.extend(c.finished(*t, took));
        }
        out
    }

    #[test]
    fn growth_is_free_until_a_call_has_finished() {
        let c = Climb::default();
        assert_eq!(c.may_grow(Instant::now(), 1.0), Some(None));
    }

    #[test]
    fn a_growth_that_raises_the_rate_is_kept_one_that_does_not_goes_back_and_holds() {
        let mut c = Climb::default();
        let mut t = Instant::now();
        // 100 calls/s of 10 ms each at room 8: not enough evidence at first.
        run(&mut c, &mut t, 3, 30 * MS, 10 * MS);
        assert_eq!(c.may_grow(t, HALF), None, "too few calls measured yet");
        assert!(!c.rated());
        run(&mut c, &mut t, 80, 800 * MS, 10 * MS);
        assert!(c.rated());
        assert_eq!(
            c.may_grow(t, 0.9),
            None,
            "not while the interpreter is busy"
        );
        assert_eq!(
            c.may_grow(t, 0.1),
            Some(None),
            "freely while it is mostly idle"
        );
        let base = c
            .may_grow(t, HALF)
            .flatten()
            .expect("a rate to grow against");
        assert!((base - 100.0).abs() < 10.0, "{base}");
        c.grown(t, 8, 10, 16, Some(base));
        assert_eq!(c.may_grow(t, HALF), None, "one trial at a time");
        // The rate rises as much as the room (calls that only wait): kept.
        let v = run(&mut c, &mut t, 300, 2400 * MS, 10 * MS);
        assert_eq!(v, [Verdict::Keep]);
        // The next growth, 10 to 12, gains nothing: back to 10, held.
        let base = c.may_grow(t, HALF).flatten().expect("the span went on");
        c.grown(t, 10, 12, 16, Some(base));
        let v = run(&mut c, &mut t, 300, 2400 * MS, 10 * MS);
        assert_eq!(v, [Verdict::Revert(10)]);
        run(&mut c, &mut t, 70, 560 * MS, 10 * MS);
        assert_eq!(c.may_grow(t, HALF), None, "held for HOLD_FIRST");
        run(&mut c, &mut t, 80, 800 * MS, 10 * MS);
        assert!(
            c.may_grow(t, HALF).flatten().is_some(),
            "free again after the hold"
        );
        assert_eq!((c.kept, c.reverted), (1, 1));
    }

    #[test]
    fn no_trial_while_the_machine_is_busy() {
        let mut c = Climb::default();
        let mut t = Instant::now();
        run(&mut c, &mut t, 80, 800 * MS, 10 * MS);
        c.machine(0.05);
        assert_eq!(c.may_grow(t, HALF), None);
        assert_eq!(
            c.may_grow(t, 0.1),
            Some(None),
            "sleeping calls grow all the same"
        );
        c.machine(0.5);
        assert!(c.may_grow(t, HALF).flatten().is_some());
    }

    #[test]
    fn another_rule_changing_the_room_ends_the_trial() {
        let mut c = Climb::default();
        let mut t = Instant::now();
        run(&mut c, &mut t, 80, 800 * MS, 10 * MS);
        let base = c.may_grow(t, HALF).flatten().unwrap();
        c.grown(t, 8, 10, 16, Some(base));
        c.changed();
        let v = run(&mut c, &mut t, 80, 800 * MS, 10 * MS);
        assert!(v.is_empty());
        assert!(c.may_grow(t, HALF).flatten().is_some());
    }

    #[test]
    fn the_room_comes_down_straight_to_the_floor_and_else_by_halves_then_by_one() {
        let mut c = Climb::default();
        let mut t = Instant::now();
        const BUSY: f64 = 0.9;
        run(&mut c, &mut t, 80, 800 * MS, 10 * MS);
        assert_eq!(
            c.may_shrink(t, BUSY, 16),
            None,
            "too few calls measured for a descent"
        );
        run(&mut c, &mut t, 200, 2000 * MS, 10 * MS);
        assert_eq!(
            c.may_shrink(t, HALF, 16),
            None,
            "not while the interpreter has room"
        );
        assert_eq!(
            c.may_shrink(t, BUSY, DOWN_FLOOR),
            None,
            "not below the floor"
        );
        // 16 straight to the floor loses a quarter of the rate: back to 16, held.
        let (base, to) = c.may_shrink(t, BUSY, 16).expect("a rate to hold");
        assert_eq!(to, DOWN_FLOOR);
        c.shrunk(t, 16, base);
        assert_eq!(c.may_shrink(t, BUSY, 1), None, "one trial at a time");
        let v = run(&mut c, &mut t, 300, 4000 * MS, 10 * MS);
        assert_eq!(v, [Verdict::Revert(16)]);
        assert_eq!(c.may_shrink(t, BUSY, 16), None, "held");
        run(&mut c, &mut t, 300, 3000 * MS, 10 * MS);
        // Then by halves: 16 to 8 at the same rate (the interpreter was the limit): kept.
        let (base, to) = c.may_shrink(t, BUSY, 16).expect("a rate to hold");
        assert_eq!(to, 8);
        c.shrunk(t, 16, base);
        let v = run(&mut c, &mut t, 300, 3000 * MS, 10 * MS);
        assert_eq!(v, [Verdict::Keep]);
        // 8 to 4 loses a little, within `DOWN_GIVE`: kept.
        let (base, to) = c.may_shrink(t, BUSY, 8).unwrap();
        assert_eq!(to, 4);
        c.shrunk(t, 8, base);
        let v = run(&mut c, &mut t, 294, 3000 * MS, 10 * MS);
        assert_eq!(v, [Verdict::Keep]);
        // 4 to 2 loses as little again, but against the best rate of the descent (100/s)
        // that is 4%: back to 4, held.
        let (base, to) = c.may_shrink(t, BUSY, 4).unwrap();
        assert_eq!(to, 2);
        assert!(
            base >= 99.0,
            "the best rate of the descent, not the last: {base}"
        );
        c.shrunk(t, 4, base);
        let v = run(&mut c, &mut t, 288, 3000 * MS, 10 * MS);
        assert_eq!(v, [Verdict::Revert(4)]);
        assert_eq!(c.may_shrink(t, BUSY, 4), None, "held");
        assert_eq!((c.kept, c.reverted), (2, 2));
        // After the hold, by one: 4 to 3.
        run(&mut c, &mut t, 300, 3000 * MS, 10 * MS);
        assert_eq!(c.may_shrink(t, BUSY, 4).map(|(_, to)| to), Some(3));
        // Another rule changing the room sends the next descent straight to the floor again,
        // from a rate measured at the new room; kept there, the descent is over.
        c.changed();
        assert_eq!(
            c.may_shrink(t, BUSY, 5),
            None,
            "no rate at the new room yet"
        );
        run(&mut c, &mut t, 300, 3000 * MS, 10 * MS);
        let (base, to) = c.may_shrink(t, BUSY, 5).unwrap();
        assert_eq!(to, DOWN_FLOOR);
        c.shrunk(t, 5, base);
        let v = run(&mut c, &mut t, 300, 3000 * MS, 10 * MS);
        assert_eq!(v, [Verdict::Keep]);
        assert_eq!(c.may_shrink(t, BUSY, DOWN_FLOOR), None);
    }

    #[test]
    fn a_growth_is_judged_by_the_calls_it_could_let_in() {
        // Room 9 for 10 clients of sleeping calls: growing to 11 lets one more in, +11% rate.
        let mut c = Climb::default();
        let mut t = Instant::now();
        run(&mut c, &mut t, 90, 1000 * MS, 100 * MS);
        let base = c.may_grow(t, HALF).flatten().unwrap();
        c.grown(t, 9, 11, 10, Some(base));
        let v = run(&mut c, &mut t, 300, 3000 * MS, 100 * MS);
        assert_eq!(v, [Verdict::Keep]);
    }
}
