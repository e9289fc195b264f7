//! The blocking class's room under a CPU quota (`Admission::fit_quota`, `Admission::quota_cap`):
//! no more calls in flight than the quota can run.
//!
//! Why: a call that blocks (a sleep, a database wait) comes back wanting the GIL, and CPython's
//! waiters for it each wake every switch interval (5 ms) to ask for it again. While the calls
//! in flight need less CPU than the process may use, the GIL changes hands quickly and few
//! wait. Past it, they pile up: each waiter's wake-ups cost CPU, the quota's CPU goes to them,
//! the GIL's holder runs less, and more wait. Measured (S18's `s5`: 1,000 clients of an app
//! that sleeps 0.1 s, the server moved into a cgroup of 1 CPU): the room doubled from 459 to
//! 918 calls as a trial while the process used 57% of its quota, 800 threads then waited in
//! `futex`, and the rate fell from 4,000-6,000 requests/s at 230-300 µs of CPU each to 30-300
//! at 5-50 ms each (200-2,000 voluntary context switches per request), for seconds, since
//! the calls already in flight had to get through the convoy first. Calls left in the
//! admission queue cost nothing while they wait. So, under a quota only (without one, the
//! machine's other processes make the CPU the process may use unknowable; the room's other
//! rules judge): the room does not grow while the process used `QUOTA_FULL` of its quota or
//! more over the last reading (`climb::Climb::quota`), a growth goes no further than the room
//! at which the calls in flight would use `QUOTA_FULL` (`quota_room`), and two readings in a row
//! at or past it scale the room down to that (not below `BLOCKING_FLOOR`). The readings come
//! from the watcher's `wsgi::pool::machine` (every `MACHINE_SPAN`, 0.1 s or more, while calls
//! wait).
//!
//! Why two: calls that sleep alike come back in waves, and one 0.1 s reading may catch a wave
//! at 90% of the quota while the process uses three quarters of it over a second. Scaled down
//! on single readings, S5's room (1,000 clients, a 0.1 s sleep) at 1.5 CPUs came down from
//! about 1,040 to 700 over five seconds, never throttled, and 700 calls that each sleep 0.1 s
//! cap the rate at 7,000 a second. A quota used up stays up over the next reading too (S5 at 0.5
//! and 1 CPU: throttled in most periods), so the convoy's rule acts one reading later at most.

use super::super::climb::{INTERPRETER_BUSY, QUOTA_FULL};
use super::{Admission, Class, BLOCKING_FLOOR};

/// The share of the quota below which a reading grows the room towards it, while calls wait
/// for room and the interpreter is not the limit (see `Admission::fit_quota`).
pub const QUOTA_SPARE: f64 = 0.75;

/// The most a reading grows the room by (half again): the calls it admits show in the next
/// reading's CPU only once they run, a call's time later.
const SPARE_STEP: f64 = 1.5;

/// The room at which `in_flight` calls, which used `used` of the quota (a share; more than 1
/// over a burst), would use `QUOTA_FULL` of it: the calls' CPU scales with their count.
pub fn quota_room(in_flight: usize, used: f64) -> usize {
    if used <= 0.0 {
        return usize::MAX;
    }
    (in_flight as f64 * QUOTA_FULL / used).floor() as usize
}

impl<J> Admission<J> {
    /// A reading of the process's quota (`used`: the share of it used over the last span;
    /// None: no quota): remembered for growth (`quota_cap`, `Climb::may_grow`). At or past
    /// `QUOTA_FULL`, the reading before it too, the room comes down to what the calls in flight
    /// may use by the lower of the two (see the module doc). Below
    /// `QUOTA_SPARE`, while calls wait for room that the calls in flight use (half of it or
    /// more) and the app threads' `share` of a core is below `climb::INTERPRETER_BUSY` (calls
    /// that wait, not a busy interpreter, whose room the descent judges), it grows towards it,
    /// by `SPARE_STEP` at most: the GIL convoy rule and the trials keep a room of sleeping calls
    /// far below what the quota can run (S18's `s5` at 1.5 CPUs: 0.86 CPU used). A change ends
    /// a trial under way without a verdict (the rate it would be judged by was not its doing).
    pub fn fit_quota(&mut self, used: Option<f64>, share: f64) {
        let before = self.climb.quota_used();
        self.climb.quota(used);
        let Some(used) = used else {
            return;
        };
        let room = self.blocking_limit;
        let in_flight = self.runnable[Class::Blocking as usize].min(room);
        let full = before.filter(|&b| b >= QUOTA_FULL && used >= QUOTA_FULL);
        let to = if let Some(before) = full {
            quota_room(in_flight, used.min(before))
                .max(BLOCKING_FLOOR)
                .min(room)
        } else if used < QUOTA_SPARE
            && share < INTERPRETER_BUSY
            && self.blocking_waits()
            && 2 * in_flight >= room
        {
            let most = (room as f64 * SPARE_STEP) as usize;
            quota_room(in_flight, used).min(most).max(room)
        } else {
            room
        };
        if to != room {
            self.set_room(to);
            self.climb.capped();
        }
    }

    /// The room a growth to `to` may reach: under a quota, no further than what the calls in
    /// flight may use (`quota_room`), and at least one more than now.
    pub(super) fn quota_cap(&self, to: usize) -> usize {
        let Some(used) = self.climb.quota_used() else {
            return to;
        };
        let in_flight = self.runnable[Class::Blocking as usize].max(1);
        to.min(quota_room(in_flight, used).max(self.blocking_limit + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Admission<u32> {
        /// A reading while the interpreter is the limit: the room never grows by it.
        fn fit_quota_busy(&mut self, used: Option<f64>) {
            self.fit_quota(used, INTERPRETER_BUSY);
        }
    }

    #[test]
    fn the_room_scales_with_the_share_of_the_quota_used() {
        assert_eq!(
            quota_room(500, 0.45),
            1000,
            "half the quota's margin used: twice"
        );
        assert_eq!(
            quota_room(918, 1.0),
            826,
            "a throttled process: a tenth less"
        );
        assert_eq!(quota_room(400, 1.2), 300);
        assert_eq!(quota_room(10, 0.0), usize::MAX, "no CPU used says nothing");
    }

    /// 1,000 calls admitted at once under a quota the process then used in full: each
    /// reading at or past `QUOTA_FULL` after one that was too takes the room down by what the
    /// lower of the two was over, to the floor at most; a reading below it keeps the room, and
    /// one full reading alone (a wave of calls) does too.
    #[test]
    fn a_full_quota_takes_the_room_down_a_lower_use_keeps_it() {
        let mut a: Admission<u32> = Admission::new(0);
        a.set_room(1000);
        a.runnable[Class::Blocking as usize] = 1000;
        a.fit_quota_busy(Some(1.2));
        assert_eq!(a.blocking_limit(), 1000, "one full reading: a wave");
        a.fit_quota_busy(Some(1.0));
        assert_eq!(a.blocking_limit(), 900, "by the lower of the two");
        a.fit_quota_busy(Some(0.5));
        assert_eq!(a.blocking_limit(), 900);
        a.runnable[Class::Blocking as usize] = 5;
        a.fit_quota_busy(Some(1.0));
        assert_eq!(
            a.blocking_limit(),
            900,
            "after a reading below: a wave again"
        );
        a.fit_quota_busy(Some(1.0));
        assert_eq!(a.blocking_limit(), BLOCKING_FLOOR);
        a.fit_quota_busy(None);
        assert_eq!(
            a.blocking_limit(),
            BLOCKING_FLOOR,
            "no quota: the room stays"
        );
    }

    /// A growth under a quota stops where the calls in flight would use `QUOTA_FULL` of it,
    /// and does not happen at all once they used that much (after a first call finished);
    /// without a quota, the room doubles.
    #[test]
    fn growth_under_a_quota_stops_at_what_it_may_use() {
        let mut a: Admission<u32> = Admission::new(0);
        a.set_room(459);
        a.runnable[Class::Blocking as usize] = 459;
        a.fit_quota_busy(Some(0.57));
        assert_eq!(a.quota_cap(918), 724);
        assert_eq!(a.quota_cap(600), 600);
        a.fit_quota_busy(Some(0.89));
        assert_eq!(a.quota_cap(918), 464);
        a.fit_quota_busy(None);
        assert_eq!(a.quota_cap(918), 918);
    }

    /// A reading well below the quota, with calls waiting for a room their calls in flight
    /// fill, grows it towards what the quota can run, by half again at most, and only while the
    /// interpreter is not the limit.
    #[test]
    fn a_quota_left_unused_grows_the_room_towards_it() {
        let mut a: Admission<u32> = Admission::new(4);
        a.set_room(300);
        a.runnable[Class::Blocking as usize] = 300;
        a.wait(1, 7, Class::Blocking);
        a.fit_quota(Some(0.57), INTERPRETER_BUSY);
        assert_eq!(
            a.blocking_limit(),
            300,
            "a busy interpreter: the descent's room"
        );
        a.fit_quota(Some(0.57), 0.5);
        assert_eq!(a.blocking_limit(), 450, "half again at most");
        a.runnable[Class::Blocking as usize] = 450;
        a.fit_quota(Some(0.5), 0.5);
        assert_eq!(a.blocking_limit(), 675);
        a.runnable[Class::Blocking as usize] = 675;
        a.fit_quota(Some(0.7), 0.5);
        assert_eq!(a.blocking_limit(), 867, "up to what the quota can run");
        a.fit_quota(Some(0.8), 0.5);
        assert_eq!(
            a.blocking_limit(),
            867,
            "between QUOTA_SPARE and QUOTA_FULL: it stays"
        );
        a.runnable[Class::Blocking as usize] = 100;
        a.fit_quota(Some(0.3), 0.5);
        assert_eq!(
            a.blocking_limit(),
            867,
            "a room the calls in flight do not fill: it stays"
        );
    }

    /// Once a call has finished, a quota used at `QUOTA_FULL` or more stops every growth, even
    /// while the app threads' share of a core says the interpreter idles (the event loop's
    /// CPU is not theirs); below it, the room grows again.
    #[test]
    fn no_growth_while_the_quota_is_used_up() {
        let now = std::time::Instant::now();
        let mut a: Admission<u32> = Admission::new(0);
        a.runnable[Class::Blocking as usize] = BLOCKING_FLOOR;
        assert!(
            a.grow_blocking(now, 0.1),
            "before any call finished: at once"
        );
        a.climb.finished(now, std::time::Duration::from_millis(100));
        a.fit_quota_busy(Some(0.95));
        let room = a.blocking_limit();
        assert!(!a.grow_blocking(now, 0.1));
        assert_eq!(a.blocking_limit(), room);
        a.fit_quota_busy(Some(0.8));
        assert!(a.grow_blocking(now, 0.1));
        assert!(a.blocking_limit() > room);
    }
}
