//! The blocking class's room without a CPU quota (`Admission::fit_cores`): when every CPU is
//! busy and each finished call costs the process far more CPU than it did lately, the room
//! comes down by half per reading and does not grow meanwhile.
//!
//! Why: the collapse that `quota` prevents under a quota (calls back from a sleep pile up
//! waiting for the GIL, each waiter wakes every switch interval, 5 ms under CPython 3.11, and
//! the wake-ups take the CPU the GIL's holder needs) happens without one too, and then the
//! quota's reading (the share of the quota used) is not there: the process may use every core,
//! but other processes (the load generator, a database, a compiler) take some of them, so the
//! share of the cores it uses says little. Two readings together say it: the machine has no
//! idle CPU left (`climb::MACHINE_IDLE_LEAST`: the process cannot get more), and the blocking
//! calls finished per second of the app threads' CPU fell below `EFFICIENCY_FALLEN` of the
//! best rate of the last seconds (`BEST_KEEP`): the same calls cost four times their CPU,
//! which only waiting does (a heavier mix of calls moves it by less, and the best decays).
//! Measured (S5: 1,000 clients of an app that sleeps 0.1 s, 2 cores shared with wrk and other
//! developers' builds, no quota, room up to 1,000): a run that collapsed ran 111 requests/s at
//! 16.9 ms of server CPU each, 909 of 976 threads in `futex`, the process on 1.9 of the 2
//! cores; the runs that did not, 2,500-3,000 requests/s at 180-250 µs each. A busy machine
//! alone is not the signal (a shared machine is busy most of the time, and Django with a
//! database keeps its CPUs busy at a steady cost per call), nor a fallen rate alone (a quiet
//! moment, a slower database). Halving per reading (every `machine::MACHINE_SPAN` or more)
//! takes 1,000 calls to the floor within about seven readings; the calls it keeps out wait in
//! the admission queue without a thread.

use std::time::Duration;

use super::super::climb::MACHINE_IDLE_LEAST;
use super::{Admission, Class, BLOCKING_FLOOR};

/// The share of the best recent rate (blocking calls finished per second of the app threads'
/// CPU) below which the calls count as costing more than they did: a quarter. The collapse
/// measured cost 70 times more; a steady load of 1,000 sleeping calls, hundreds of them
/// waiting for the GIL, costs up to twice what the first calls of its burst did (measured:
/// with half, the room was halved in such runs too, and 512 calls in flight ran 1,800-2,000
/// requests/s where 1,000 ran 2,500-2,800).
pub const EFFICIENCY_FALLEN: f64 = 0.25;

/// How much of the best rate a reading keeps (the rest decays): it halves in about 23 readings
/// (2.3 s or more), so a change of the calls' mix is learnt within seconds, while a collapse,
/// which starts within a reading or two, is judged against the rate before it.
pub const BEST_KEEP: f64 = 0.97;

/// The fewest blocking calls finished over a reading for its rate to become the best: fewer
/// are too noisy to judge others by (a reading with fewer still counts against the best).
pub const BEST_CALLS: u64 = 64;

/// The least app threads' CPU over a reading for its rate to say anything (a tick).
const CPU_LEAST: Duration = Duration::from_millis(10);

/// What the rule remembers between readings (the pool's watcher keeps it).
#[derive(Debug, Default)]
pub struct Cores {
    /// At the last reading: blocking calls finished so far, and the app threads' CPU then.
    last: Option<(u64, Duration)>,
    /// The best rate lately (calls per second of CPU), decaying by `BEST_KEEP` per reading.
    best: Option<f64>,
}

impl Cores {
    /// Forget the last reading (the watcher slept: no call waited).
    pub fn forget(&mut self) {
        self.last = None;
    }

    /// The rate since the last reading, `done` calls finished so far at `app_cpu` of CPU
    /// (None: no last reading, or too little CPU to say), and this reading remembered.
    fn rate(&mut self, done: u64, app_cpu: Duration) -> Option<(f64, u64)> {
        let (done0, cpu0) = self.last.replace((done, app_cpu))?;
        let cpu = app_cpu.checked_sub(cpu0)?;
        if cpu < CPU_LEAST {
            return None;
        }
        let calls = done.saturating_sub(done0);
        Some((calls as f64 / cpu.as_secs_f64(), calls))
    }
}

impl<J> Admission<J> {
    /// The blocking class uses half its room or more, and at least `BLOCKING_FLOOR` calls: the
    /// room is what the rule would act on (with 1,000 sleeping clients and a room past 1,000,
    /// nothing queues, and the watcher reads for this rule alone, `Pool::watch`).
    pub fn blocking_full(&self) -> bool {
        let in_flight = self.runnable[Class::Blocking as usize];
        in_flight >= BLOCKING_FLOOR && 2 * in_flight >= self.blocking_limit
    }

    /// A reading without a CPU quota: `app_cpu`, the app threads' CPU so far; `machine_idle`,
    /// the idle share of the machine's CPUs over the reading's span. While every CPU is busy,
    /// the blocking calls fill their room (`blocking_full`), and the calls' rate per CPU
    /// second fell below `EFFICIENCY_FALLEN` of the best: the room halves (not below
    /// `BLOCKING_FLOOR`), a trial under way ends, and no rule grows the room until a reading
    /// says otherwise (`Climb::quota` told the CPU the process can get is all used). Returns
    /// whether it judged the calls' CPU fallen.
    pub fn fit_cores(&mut self, c: &mut Cores, app_cpu: Duration, machine_idle: f64) -> bool {
        let Some((rate, calls)) = c.rate(self.climb.done(), app_cpu) else {
            return false;
        };
        let best = c.best.map(|b| b * BEST_KEEP);
        let fallen = best.is_some_and(|b| rate < b * EFFICIENCY_FALLEN)
            && machine_idle < MACHINE_IDLE_LEAST
            && self.blocking_full();
        if calls >= BEST_CALLS {
            c.best = Some(best.map_or(rate, |b| b.max(rate)));
        } else {
            c.best = best;
        }
        if !fallen {
            return false;
        }
        self.climb.quota(Some(1.0));
        let room = self.blocking_limit;
        let to = (room / 2).max(BLOCKING_FLOOR);
        if to < room {
            self.set_room(to);
            self.climb.capped();
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// An admission with a room of `room`, all of it in flight and one more call waiting.
    fn full(room: usize) -> Admission<&'static str> {
        let mut a = Admission::new(1);
        a.set_room(room);
        a.runnable[Class::Blocking as usize] = room;
        a.wait("queued", 1, Class::Blocking);
        assert!(a.blocking_waits());
        a
    }

    /// `n` blocking calls finish.
    fn finish(a: &mut Admission<&'static str>, n: u64) {
        let now = Instant::now();
        for _ in 0..n {
            a.climb.finished(now, 100 * MS);
        }
    }

    /// S5's collapse: 3,000 calls a CPU second, then (the machine busy) 60: the room halves
    /// at each such reading, to the floor at most, and does not grow meanwhile.
    #[test]
    fn a_busy_machine_whose_calls_cost_far_more_halves_the_room() {
        let mut a = full(1000);
        let mut c = Cores::default();
        let mut cpu = Duration::ZERO;
        assert!(
            !a.fit_cores(&mut c, cpu, 0.0),
            "the first reading only remembers"
        );
        finish(&mut a, 300);
        cpu += 100 * MS;
        assert!(
            !a.fit_cores(&mut c, cpu, 0.0),
            "3,000 a CPU second: the best"
        );
        assert_eq!(a.blocking_limit(), 1000);
        finish(&mut a, 12);
        cpu += 200 * MS;
        assert!(a.fit_cores(&mut c, cpu, 0.0));
        assert_eq!(a.blocking_limit(), 500);
        assert_eq!(
            a.climb.may_grow(Instant::now(), 0.5),
            None,
            "no growth while the CPU is judged used up"
        );
        for _ in 0..8 {
            finish(&mut a, 12);
            cpu += 200 * MS;
            a.fit_cores(&mut c, cpu, 0.0);
        }
        assert_eq!(a.blocking_limit(), BLOCKING_FLOOR);
    }

    /// The same fall of the rate with idle CPU on the machine (a quiet moment, not a fight for
    /// the CPU), a steady rate on a busy machine (Django with its database), or few calls in
    /// flight: the room stays.
    #[test]
    fn idle_cpu_a_steady_cost_or_few_calls_in_flight_keep_the_room() {
        let mut a = full(1000);
        let mut c = Cores::default();
        let mut cpu = Duration::ZERO;
        a.fit_cores(&mut c, cpu, 0.0);
        finish(&mut a, 300);
        cpu += 100 * MS;
        a.fit_cores(&mut c, cpu, 0.0);
        finish(&mut a, 12);
        cpu += 200 * MS;
        assert!(!a.fit_cores(&mut c, cpu, 0.5), "half the machine idle");
        for _ in 0..5 {
            finish(&mut a, 200);
            cpu += 100 * MS;
            assert!(
                !a.fit_cores(&mut c, cpu, 0.0),
                "a third less: a heavier mix"
            );
        }
        assert_eq!(a.blocking_limit(), 1000);
        let mut quiet = full(1000);
        quiet.runnable[Class::Blocking as usize] = 10;
        assert!(quiet.admit_next().is_some());
        let mut c = Cores::default();
        quiet.fit_cores(&mut c, Duration::ZERO, 0.0);
        finish(&mut quiet, 300);
        quiet.fit_cores(&mut c, 100 * MS, 0.0);
        finish(&mut quiet, 1);
        assert!(
            !quiet.fit_cores(&mut c, 300 * MS, 0.0),
            "10 calls in a room of 1,000: not the room's doing"
        );
        assert_eq!(quiet.blocking_limit(), 1000);
    }

    /// The best decays: a rate that stays at a fifth of an old best is the norm again after
    /// a few readings, and readings of few calls never set the best.
    #[test]
    fn the_best_rate_decays_and_needs_enough_calls() {
        let mut a = full(1000);
        let mut c = Cores::default();
        a.fit_cores(&mut c, Duration::ZERO, 1.0);
        finish(&mut a, 10);
        a.fit_cores(&mut c, 10 * MS, 1.0);
        assert_eq!(c.best, None, "10 calls: too few to be the best");
        finish(&mut a, 300);
        a.fit_cores(&mut c, 110 * MS, 1.0);
        let (mut cpu, mut fell) = (110 * MS, 0);
        for _ in 0..60 {
            finish(&mut a, 60);
            cpu += 100 * MS;
            fell += a.fit_cores(&mut c, cpu, 0.0) as u32;
        }
        assert!(
            (1..20).contains(&fell),
            "judged fallen at first, then the norm: {fell}"
        );
        finish(&mut a, 60);
        assert!(
            !a.fit_cores(&mut c, cpu + 100 * MS, 0.0),
            "a fifth of the old best is the norm now"
        );
    }
}
