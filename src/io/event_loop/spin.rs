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

use std::time::Duration;

/// The longest look for events before sleeping.
pub const SPIN_MOST: Duration = Duration::from_micros(50);

/// The first limit, once a sleep was short.
pub const GROW_FROM: Duration = Duration::from_micros(10);

/// A sleep woken within this (the wake-up's own cost included) would have been caught by a
/// spin of `SPIN_MOST`.
pub const SHORT_SLEEP: Duration = Duration::from_micros(100);

/// The loop's spin limit and what it learned (see the module doc).
#[derive(Debug, Default)]
pub struct Spin {
    limit: Duration,
}

impl Spin {
    /// How long to look for events before sleeping.
    pub fn limit(&self) -> Duration {
        self.limit
    }

    /// A spin ended; the thread was `preempted` during it or not. (One that found an event
    /// without it changes nothing: the limit was long enough.)
    pub fn spun(&mut self, preempted: bool) {
        if preempted {
            self.halve();
        }
    }

    /// A sleep (after the spin, if any) lasted `slept` and ended with events (`woken`) or on
    /// its timeout.
    pub fn woke(&mut self, slept: Duration, woken: bool) {
        if woken && slept <= SHORT_SLEEP {
            self.limit = (self.limit * 2).clamp(GROW_FROM, SPIN_MOST);
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
        s.spun(false);
        assert_eq!(s.limit(), SPIN_MOST, "a spin not preempted changes nothing");
        s.spun(true);
        assert_eq!(s.limit(), SPIN_MOST / 2);
        s.spun(true);
        s.spun(true);
        assert_eq!(s.limit(), Duration::ZERO, "preempted again and again: none");
    }
}
