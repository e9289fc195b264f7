//! How long the loop looks for events before it sleeps: an adaptive spin, as the kernel's
//! `haltpoll` idle governor does for a virtual CPU.
//!
//! Why: a thread that sleeps in `epoll_wait` is woken by the kernel when an event comes, and
//! the wake-up costs the event's latency more than the loop's own work when the CPU it runs on
//! went idle meanwhile (on a virtual machine whose idle CPUs halt at once, a wake-up of one
//! costs 20-24 µs: `perf sched timehist`, S4's `ab -c1`). Where several clients keep the loop
//! busy, the next request often comes within microseconds of the loop running dry, and a look
//! finds it without that wake-up.
//!
//! One client at a time (`wrk -c1` keep-alive, `ab -c1` a new connection each) is served with
//! the spin too. The client cannot send before it has read the answer, so the spin looks
//! through its whole round trip, and the loop's CPU per request is that round trip; but
//! without it each request pays the halted CPU's wake-up: on this machine kind, S4 `wrk -c1`
//! ran 12,569 requests/s (p50 68 µs, 67.1 µs of CPU per request) with the spin against 6,583
//! (p50 138 µs, 71.1 µs) with a rule that stopped it for one client, and uWSGI's 6,264 (p50
//! 150 µs, 87.3 µs) (`benchmarks/results/2026-11-27-spin-c1/`): the wake-up costs the CPU the
//! spin would have spent. `--spin off` gives that rate up where the CPU is wanted elsewhere.
//!
//! The limit (plain data, the caller passes what happened): no spin at first. A sleep that was
//! woken within `SHORT_SLEEP` says a longer look would have found the event: the limit grows
//! (`GROW_FROM`, then doubled, up to `SPIN_MOST`). A longer sleep halves it (to none under
//! `GROW_FROM`): an idle or lightly loaded server does not spin. So does a spin during which
//! the thread was preempted (another thread wanted its CPU: the client woken on it, app
//! threads, a database, a proxy on the same machine): the CPU a spin burns must be one nobody
//! else needs, and where others keep wanting it the spin stays at none.
//!
//! A spin that found nothing and was followed by a long sleep was wasted: the limit drops to
//! none, and the next short sleeps are not believed for a while (`held`: 2, 4, … up to
//! `HOLD_MOST` of them, doubled by each waste in a row, forgotten at a spin that finds its
//! event). Where short sleeps come between long ones (an app taking milliseconds: the answer's
//! wake-up is short, the wait for the next is not) the spin otherwise grew at every short sleep
//! and was wasted on the long one after (S13: 1-2% of spins found their event).
//!
//! `--spin auto` spins only while the process may use every CPU of the machine and its cgroup
//! is not throttled: in a container with a CPU quota a spin spends the quota the app threads
//! need, and a throttled loop serves nobody until the next period. The allowance
//! (`observe::allowance`) is read again every `READ_EVERY`, as the scheduler and the pool read
//! it, so that a process given a quota, or moved into a cgroup, while it runs follows it.

use std::time::{Duration, Instant};

use crate::config::SpinPolicy;
use crate::observe::allowance::{throttled_between, Allowance};

/// The longest look for events before sleeping.
pub const SPIN_MOST: Duration = Duration::from_micros(50);

/// The first limit, once a sleep was short.
pub const GROW_FROM: Duration = Duration::from_micros(10);

/// A sleep woken within this (the wake-up's own cost included) would have been caught by a
/// spin of `SPIN_MOST`.
pub const SHORT_SLEEP: Duration = Duration::from_micros(100);

/// The most short sleeps not believed after wasted spins.
pub const HOLD_MOST: u32 = 64;

/// How often `--spin auto` reads the allowance again (as `server::scheduler` and
/// `wsgi::pool::machine` do): a few small files, off the path of a request that is waiting.
pub const READ_EVERY: Duration = Duration::from_secs(1);

/// Readings for which `--spin auto` stays off after one saw the cgroup throttled. Assumes the
/// spin may have been the cause: on again at the next reading it would be throttled again
/// every other second, so it waits for ten quiet ones.
pub const THROTTLED_HOLD: u32 = 10;

/// `--spin auto`'s readings of the allowance.
#[derive(Debug)]
struct AutoReading {
    next: Instant,
    /// The cgroup's `nr_throttled` at the last reading.
    throttled: Option<u64>,
    /// Readings still to stay off for after throttling was seen.
    hold: u32,
}

impl AutoReading {
    /// A reading at `now`: whether the spin may run until the next. Only with every CPU of
    /// the machine (not `below`: a quota or cpuset gives the process fewer), and not for
    /// `THROTTLED_HOLD` readings after one that saw the cgroup throttled.
    fn judge(&mut self, below: bool, throttled: Option<u64>, now: Instant) -> bool {
        let before = std::mem::replace(&mut self.throttled, throttled);
        self.next = now + READ_EVERY;
        if throttled_between(before, throttled) {
            self.hold = THROTTLED_HOLD;
        } else {
            self.hold = self.hold.saturating_sub(1);
        }
        !below && self.hold == 0
    }
}

/// The loop's spin limit and what it learned (see the module doc).
#[derive(Debug, Default)]
pub struct Spin {
    /// Whether the policy lets it spin now: false for `--spin off`; for `auto`, as the last
    /// reading of the allowance said (`AutoReading::judge`).
    allowed: bool,
    /// `--spin auto`: when to read the allowance again, and what the last reading saw.
    auto: Option<AutoReading>,
    limit: Duration,
    /// The last spin ended without its event (the sleep after it tells whether it was close).
    missed: bool,
    /// Wasted spins in a row (a miss, then a long sleep).
    wasted: u32,
    /// Short sleeps still not to be believed.
    held: u32,
}

impl Spin {
    /// The spin `--spin` asks for (`auto`: see the module doc).
    pub fn new(policy: SpinPolicy) -> Spin {
        let mut spin = Spin {
            allowed: policy == SpinPolicy::On,
            ..Spin::default()
        };
        if policy == SpinPolicy::Auto {
            let now = Instant::now();
            spin.auto = Some(AutoReading {
                next: now,
                throttled: None,
                hold: 0,
            });
            spin.read_allowance(now);
        }
        spin
    }

    /// `--spin auto`: read the allowance again if `READ_EVERY` has passed since the last
    /// reading (`now`: a clock the caller read anyway).
    pub fn look_at_allowance(&mut self, now: Instant) {
        if self.auto.as_ref().is_some_and(|a| now >= a.next) {
            self.read_allowance(now);
        }
    }

    fn read_allowance(&mut self, now: Instant) {
        let a = Allowance::read();
        let throttled = a.throttling().map(|t| t.throttled);
        let below = a.below_machine();
        if let Some(auto) = self.auto.as_mut() {
            self.allowed = auto.judge(below, throttled, now);
        }
    }

    /// How long to look for events before sleeping.
    pub fn limit(&self) -> Duration {
        if self.allowed {
            self.limit
        } else {
            Duration::ZERO
        }
    }

    /// A spin ended, having `found` an event or not; the thread was `preempted` during it or
    /// not. (One that found its event without being preempted keeps the limit: it was long
    /// enough.)
    pub fn spun(&mut self, found: bool, preempted: bool) {
        self.missed = !found;
        if found {
            self.wasted = 0;
            self.held = 0;
        }
        if preempted {
            self.halve();
        }
    }

    /// A sleep (after the spin, if any) lasted `slept` and ended with events (`woken`) or on
    /// its timeout.
    pub fn woke(&mut self, slept: Duration, woken: bool) {
        let missed = std::mem::take(&mut self.missed);
        if woken && slept <= SHORT_SLEEP {
            if self.held > 0 && !missed {
                self.held -= 1;
            } else {
                self.limit = (self.limit * 2).clamp(GROW_FROM, SPIN_MOST);
            }
        } else if missed {
            self.limit = Duration::ZERO;
            self.wasted = (self.wasted + 1).min(HOLD_MOST.trailing_zeros());
            self.held = 1 << self.wasted;
        } else {
            self.halve();
        }
    }

    fn halve(&mut self) {
        self.limit /= 2;
        if self.limit < GROW_FROM {
            self.limit = Duration::ZERO;
        }
    }
}

/// The times the calling thread was preempted so far (`getrusage(RUSAGE_THREAD)`'s
/// involuntary context switches); 0 if the kernel does not say.
pub fn preemptions() -> i64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a valid, writable `rusage` for the call to fill; RUSAGE_THREAD asks
    // about the calling thread only.
    let r = unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) };
    if r != 0 {
        return 0;
    }
    // SAFETY: the call succeeded, so it filled `usage` (and zeroed memory is a valid rusage).
    let usage = unsafe { usage.assume_init() };
    usage.ru_nivcsw
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);

    /// `--spin on`: the spin may run.
    fn busy() -> Spin {
        Spin::new(SpinPolicy::On)
    }

    fn grown() -> Spin {
        let mut s = busy();
        for _ in 0..8 {
            s.woke(40 * US, true);
        }
        s
    }

    /// Short sleeps until the limit is back above none.
    fn short_sleeps_to_grow(s: &mut Spin) -> u32 {
        let mut n = 0;
        while s.limit().is_zero() {
            s.woke(40 * US, true);
            n += 1;
        }
        n
    }

    #[test]
    fn off_never_spins_and_on_grows_as_ever() {
        let mut off = Spin::new(SpinPolicy::Off);
        let mut on = busy();
        for _ in 0..8 {
            off.woke(40 * US, true);
            on.woke(40 * US, true);
        }
        assert_eq!(off.limit(), Duration::ZERO);
        assert_eq!(on.limit(), SPIN_MOST);
    }

    #[test]
    fn no_spin_until_sleeps_are_short_then_it_grows_to_the_most() {
        let mut s = busy();
        assert_eq!(s.limit(), Duration::ZERO);
        s.woke(40 * US, true);
        assert_eq!(s.limit(), GROW_FROM);
        s.woke(40 * US, true);
        assert_eq!(s.limit(), 2 * GROW_FROM);
        assert_eq!(grown().limit(), SPIN_MOST);
    }

    #[test]
    fn long_sleeps_and_timeouts_halve_it_down_to_none() {
        let mut s = grown();
        s.woke(Duration::from_millis(5), true);
        assert_eq!(s.limit(), SPIN_MOST / 2);
        s.woke(40 * US, false);
        assert_eq!(s.limit(), SPIN_MOST / 4);
        s.woke(Duration::from_millis(5), true);
        assert_eq!(s.limit(), Duration::ZERO, "under GROW_FROM: none");
    }

    #[test]
    fn a_preempted_spin_halves_it() {
        let mut s = grown();
        s.spun(true, false);
        assert_eq!(
            s.limit(),
            SPIN_MOST,
            "a spin that found its event changes nothing"
        );
        s.spun(true, true);
        assert_eq!(s.limit(), SPIN_MOST / 2);
        s.spun(true, true);
        s.spun(true, true);
        assert_eq!(s.limit(), Duration::ZERO, "preempted again and again: none");
    }

    #[test]
    fn a_miss_followed_by_a_short_sleep_grows_it() {
        let mut s = busy();
        s.woke(40 * US, true);
        s.spun(false, false);
        s.woke(30 * US, true);
        assert_eq!(
            s.limit(),
            2 * GROW_FROM,
            "the event came just after the spin"
        );
    }

    #[test]
    fn wasted_spins_stop_it_and_hold_off_the_short_sleeps_longer_each_time() {
        let mut s = grown();
        let mut holds = Vec::new();
        for _ in 0..8 {
            s.spun(false, false);
            s.woke(Duration::from_millis(2), true);
            assert_eq!(s.limit(), Duration::ZERO, "a wasted spin: none at once");
            holds.push(short_sleeps_to_grow(&mut s));
        }
        assert_eq!(
            holds,
            [3, 5, 9, 17, 33, 65, 65, 65],
            "held 2, 4, ... HOLD_MOST sleeps, then grown"
        );
    }

    #[test]
    fn a_spin_that_finds_its_event_forgets_the_waste() {
        let mut s = grown();
        for _ in 0..3 {
            s.spun(false, false);
            s.woke(Duration::from_millis(2), true);
            short_sleeps_to_grow(&mut s);
        }
        s.spun(true, false);
        s.spun(false, false);
        s.woke(Duration::from_millis(2), true);
        assert_eq!(short_sleeps_to_grow(&mut s), 3, "held 2 again, not 16");
    }

    fn reading() -> AutoReading {
        AutoReading {
            next: Instant::now(),
            throttled: None,
            hold: 0,
        }
    }

    /// `--spin auto` follows each reading of the allowance: off while the process has fewer
    /// CPUs than the machine, on again when it has them all.
    #[test]
    fn auto_follows_the_allowance_read_again() {
        let mut r = reading();
        let now = Instant::now();
        assert!(r.judge(false, None, now));
        assert_eq!(r.next, now + READ_EVERY);
        assert!(
            !r.judge(true, None, now),
            "a quota or cpuset below the machine"
        );
        assert!(r.judge(false, None, now), "the whole machine again");
    }

    /// Throttling seen between two readings turns it off for `THROTTLED_HOLD` readings.
    #[test]
    fn throttling_turns_auto_off_for_a_while() {
        let mut r = reading();
        let now = Instant::now();
        assert!(
            r.judge(false, Some(5), now),
            "no reading before: nothing seen"
        );
        assert!(r.judge(false, Some(5), now), "not throttled since");
        assert!(
            !r.judge(false, Some(6), now),
            "throttled since the last reading"
        );
        for n in 1..THROTTLED_HOLD {
            assert!(
                !r.judge(false, Some(6), now),
                "quiet reading {n}: still held"
            );
        }
        assert!(r.judge(false, Some(6), now), "ten quiet readings: on again");
        assert!(!throttled_between(None, Some(3)));
        assert!(!throttled_between(Some(3), None));
    }

    /// A `Spin` of `--spin auto` takes the reading's answer, and reads again only once
    /// `READ_EVERY` has passed.
    #[test]
    fn auto_reads_again_only_once_a_second() {
        let mut s = Spin::new(SpinPolicy::Auto);
        let next = s.auto.as_ref().unwrap().next;
        s.auto.as_mut().unwrap().throttled = Some(u64::MAX);
        s.look_at_allowance(next - READ_EVERY / 2);
        assert_eq!(s.auto.as_ref().unwrap().next, next, "not yet");
        assert_eq!(s.auto.as_ref().unwrap().throttled, Some(u64::MAX));
        s.look_at_allowance(next);
        assert!(
            s.auto.as_ref().unwrap().next >= next + READ_EVERY,
            "read again"
        );
        let on = Spin::new(SpinPolicy::On);
        assert!(on.auto.is_none() && on.allowed, "on: never read");
    }
}
