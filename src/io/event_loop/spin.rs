//! How long the loop looks for events before it sleeps: an adaptive spin, as the kernel's
//! `haltpoll` idle governor does for a virtual CPU.
//!
//! Why: a thread that sleeps in `epoll_wait` is woken by the kernel when an event comes, and
//! the wake-up costs the event's latency more than the loop's own work when the CPU it runs on
//! went idle meanwhile (on a virtual machine whose idle CPUs halt at once, a wake-up of one
//! costs 20-24 µs: `perf sched timehist`, S4's `ab -c1`). A client that sends one request at a
//! time (a new connection each, or keep-alive) sends the next one 30-40 µs after the answer, so
//! every request paid that wake-up: S4 `ab -c1` ran 10,800-12,000 requests/s against uWSGI's
//! 15,400-16,500 (whose four threads, all woken for each connection, keep both CPUs awake), and
//! `wrk -c1` 12,800. Looking for events for up to 50 µs before sleeping took them to
//! 15,600-16,000 and 29,300.
//!
//! The rule (plain data, the caller passes what happened): no spin at first. A sleep that was
//! woken within `SHORT_SLEEP` says a longer look would have found the event: the limit grows
//! (`GROW_FROM`, then doubled, up to `SPIN_MOST`). A longer sleep halves it (to none under
//! `GROW_FROM`): an idle or lightly loaded server does not spin. So does a spin during which
//! the thread was preempted (another thread wanted its CPU: the client woken on it, app
//! threads, a database, a proxy on the same machine): the CPU a spin burns must be one nobody
//! else needs, and where others keep wanting it the spin stays at none. (Turning it off for a
//! second at the first preemption, the first version, never let it start under `ab -c1`: the
//! client, woken on the loop's CPU by the answer, preempts the spin now and then.)
//!
//! A spin that found nothing and was followed by a long sleep was wasted: the limit drops to
//! none, and the next short sleeps are not believed for a while (`held`: 2, 4, … up to
//! `HOLD_MOST` of them, doubled by each waste in a row, forgotten at a spin that finds its
//! event). Where short sleeps come between long ones (an app taking milliseconds: the answer's
//! wake-up is short, the wait for the next is not) the spin otherwise grew at every short sleep
//! and was wasted on the long one after (S13: 1-2% of spins found their event); where the
//! client answers within the spin (S4), the spins keep finding theirs and nothing is held.

use std::time::Duration;

use crate::config::SpinPolicy;
use crate::observe::allowance::Allowance;

/// The longest look for events before sleeping.
pub const SPIN_MOST: Duration = Duration::from_micros(50);

/// The first limit, once a sleep was short.
pub const GROW_FROM: Duration = Duration::from_micros(10);

/// A sleep woken within this (the wake-up's own cost included) would have been caught by a
/// spin of `SPIN_MOST`.
pub const SHORT_SLEEP: Duration = Duration::from_micros(100);

/// The most short sleeps not believed after wasted spins.
pub const HOLD_MOST: u32 = 64;

/// The loop's spin limit and what it learned (see the module doc).
#[derive(Debug, Default)]
pub struct Spin {
    /// `--spin off`, or `auto` where the process may not use every CPU of the machine
    /// (`observe::allowance`: a CPU quota or cpuset below them): the limit stays at none.
    off: bool,
    limit: Duration,
    /// The last spin ended without its event (the sleep after it tells whether it was close).
    missed: bool,
    /// Wasted spins in a row (a miss, then a long sleep).
    wasted: u32,
    /// Short sleeps still not to be believed.
    held: u32,
}

impl Spin {
    /// The spin `--spin` asks for: `auto` spins only where the process may use every CPU of
    /// the machine (in a container with a CPU quota, a spin spends the quota the app threads
    /// need, and a throttled loop serves nobody until the next period).
    pub fn new(policy: SpinPolicy) -> Spin {
        let off = match policy {
            SpinPolicy::On => false,
            SpinPolicy::Off => true,
            SpinPolicy::Auto => Allowance::read().below_machine(),
        };
        Spin {
            off,
            ..Spin::default()
        }
    }

    /// How long to look for events before sleeping.
    pub fn limit(&self) -> Duration {
        if self.off {
            Duration::ZERO
        } else {
            self.limit
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

    fn grown() -> Spin {
        let mut s = Spin::default();
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
        let mut on = Spin::new(SpinPolicy::On);
        for _ in 0..8 {
            off.woke(40 * US, true);
            on.woke(40 * US, true);
        }
        assert_eq!(off.limit(), Duration::ZERO);
        assert_eq!(on.limit(), SPIN_MOST);
    }

    #[test]
    fn no_spin_until_sleeps_are_short_then_it_grows_to_the_most() {
        let mut s = Spin::default();
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
        let mut s = Spin::default();
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
}
