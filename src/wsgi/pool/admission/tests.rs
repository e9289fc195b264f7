//! Unit tests of admission's bookkeeping and judgements (no threads, no clocks).

use super::*;
use crate::wsgi::pool::climb::DOWN_FLOOR;

const MS: Duration = Duration::from_millis(1);
const FAST: u64 = 1;
const SLOW: u64 = 2;

#[test]
fn calls_are_admitted_up_to_the_limit_then_wait_in_order() {
    let mut a = Admission::new(2);
    for _ in 0..2 {
        assert!(a.has_room(Class::Short));
        a.admit(Class::Short);
    }
    assert!(!a.has_room(Class::Short));
    a.wait("c", FAST, Class::Short);
    a.wait("d", FAST, Class::Short);
    assert!(a.admit_next().is_none(), "no room: nothing is admitted");
    a.finished(Class::Short, true, FAST, Some(MS));
    assert_eq!(
        a.admit_next().map(|j| j.0),
        Some("c"),
        "first in, first out"
    );
    assert!(a.admit_next().is_none());
    assert_eq!(a.runnable(Class::Short), 2);
    assert_eq!(a.stats.runnable_peak, [2, 0, 0]);
    assert_eq!(a.stats.queued, 2);
}

#[test]
fn a_demoted_call_frees_its_room_once() {
    let mut a = Admission::new(1);
    a.admit(Class::Short);
    a.wait("b", FAST, Class::Short);
    a.demote(Class::Short, SLOW, true);
    assert_eq!(a.admit_next().map(|j| j.0), Some("b"));
    // The demoted call finishing does not free a second room.
    a.finished(Class::Short, false, FAST, Some(MS));
    assert!(!a.has_room(Class::Short));
    a.finished(Class::Short, true, FAST, Some(MS));
    assert!(a.has_room(Class::Short));
    assert_eq!(a.stats.demoted, 1);
    assert_eq!(a.stats.runnable_peak[0], 1);
    // The demoted call's route is now admitted without counting...
    assert_eq!(a.class_of(SLOW), Class::Blocking);
    assert!(a.has_room(Class::Blocking));
    // ...except one call in PROBATION_EVERY, judged again; if it is watched and finishes
    // unblocked, the route is no longer blocking.
    let classes: Vec<(Class, bool)> = (0..PROBATION_EVERY)
        .map(|_| a.classify(SLOW, true))
        .collect();
    assert_eq!(
        classes
            .iter()
            .filter(|c| **c == (Class::Blocking, false))
            .count(),
        PROBATION_EVERY as usize - 1
    );
    assert!(classes.contains(&(Class::Short, true)));
    a.admit(Class::Short);
    a.finished(Class::Short, true, SLOW, Some(MS));
    assert_eq!(
        a.class_of(SLOW),
        Class::Blocking,
        "finishing counted says nothing unless it was watched"
    );
    a.unblocked(SLOW);
    assert_eq!(a.class_of(SLOW), Class::Short);
}

#[test]
fn queued_calls_of_a_route_seen_blocking_are_admitted_at_once() {
    // A fresh server: the route is unknown (short), its first call is admitted, the next
    // ones queue behind it with a call of another route.
    let mut a = Admission::new(1);
    a.admit(Class::Short);
    a.wait("slow-1", SLOW, Class::Short);
    a.wait("fast", FAST, Class::Short);
    a.wait("slow-2", SLOW, Class::Short);
    // The first call is seen sleeping: every queued call of its route goes in the blocking
    // class's room, keeping its place by arrival; the other route's call takes the short
    // room.
    a.demote(Class::Short, SLOW, true);
    let admitted: Vec<(&str, Class)> = std::iter::from_fn(|| a.admit_next())
        .map(|j| (j.0, j.2))
        .collect();
    assert_eq!(
        admitted,
        [
            ("slow-1", Class::Blocking),
            ("fast", Class::Short),
            ("slow-2", Class::Blocking)
        ]
    );
    assert_eq!(a.runnable(Class::Short), 1);
    assert_eq!(a.queued_now(), 0);
}

#[test]
fn a_lock_wait_releases_nothing() {
    let mut a = Admission::new(1);
    a.admit(Class::Short);
    a.wait("slow-1", SLOW, Class::Short);
    a.demote(Class::Short, SLOW, false);
    assert_eq!(
        a.admit_next().map(|j| (j.0, j.2)),
        Some(("slow-1", Class::Short)),
        "admitted in its room, counted"
    );
    assert_eq!(a.class_of(SLOW), Class::Short);
}

#[test]
fn a_blocking_call_needs_no_room_of_the_other_classes() {
    let mut a = Admission::new(1);
    a.admit(Class::Short);
    a.admit(Class::Long);
    a.wait("blocking", SLOW, Class::Blocking);
    assert_eq!(a.queued_now(), 1);
    assert_eq!(
        a.admit_next().map(|j| (j.0, j.2)),
        Some(("blocking", Class::Blocking)),
        "both classes are full; it has room of its own"
    );
}

#[test]
fn the_blocking_room_grows_shrinks_and_follows_what_is_in_flight() {
    let mut a = Admission::new(1);
    for _ in 0..BLOCKING_FLOOR {
        assert!(a.has_room(Class::Blocking));
        a.admit(Class::Blocking);
    }
    assert!(!a.has_room(Class::Blocking), "the floor is full");
    a.wait("next", SLOW, Class::Blocking);
    assert!(a.blocking_waits());
    assert!(a.admit_next().is_none(), "no room: it waits");
    a.grow_blocking(Instant::now(), 0.0);
    assert_eq!(a.blocking_limit(), BLOCKING_FLOOR + BLOCKING_FLOOR / 4);
    assert_eq!(a.admit_next().map(|j| j.0), Some("next"));
    assert!(!a.blocking_waits());
    while a.blocking_limit() < BLOCKING_DOUBLE_FROM {
        a.grow_blocking(Instant::now(), 0.0);
    }
    let from = a.blocking_limit();
    a.grow_blocking(Instant::now(), 0.0);
    assert_eq!(
        a.blocking_limit(),
        2 * from,
        "doubles once past BLOCKING_DOUBLE_FROM"
    );
    a.grow_blocking(Instant::now(), 0.0);
    a.step_blocking(false);
    assert_eq!(a.blocking_limit(), 4 * from - 1);
    // Room nobody uses is kept for a while (a pause between bursts), then halved per
    // `BLOCKING_UNUSED`, never below the floor.
    let t0 = Instant::now();
    for _ in 0..=BLOCKING_FLOOR {
        a.finished(Class::Blocking, false, SLOW, Some(MS));
        a.settle_blocking(t0, MS);
    }
    assert_eq!(a.runnable(Class::Blocking), 0);
    assert_eq!(a.blocking_limit(), 4 * from - 1, "kept through a pause");
    a.settle_blocking(t0 + BLOCKING_UNUSED / 2, MS);
    assert_eq!(a.blocking_limit(), 4 * from - 1);
    a.settle_blocking(t0 + BLOCKING_UNUSED, MS);
    assert_eq!(a.blocking_limit(), 2 * from - 1);
    for i in 2..12 {
        a.settle_blocking(t0 + BLOCKING_UNUSED * i, MS);
    }
    assert_eq!(a.blocking_limit(), BLOCKING_FLOOR);
    for _ in 0..10 {
        a.step_blocking(false);
    }
    assert_eq!(a.blocking_limit(), BLOCKING_FLOOR);
    a.step_blocking(true);
    assert_eq!(
        a.blocking_limit(),
        BLOCKING_FLOOR,
        "given back only up to the floor"
    );
}

#[test]
fn a_descent_goes_below_the_floor_and_is_given_back_up_to_it() {
    let mut a: Admission<&str> = Admission::new(1);
    let mut t = Instant::now();
    // A blocking route's calls finish at a steady rate while the interpreter is busy.
    for _ in 0..400 {
        t += MS;
        a.admit(Class::Blocking);
        a.finished(Class::Blocking, false, SLOW, Some(MS));
        a.settle_blocking(t, MS);
    }
    assert!(a.descend_blocking(t, 0.9));
    assert_eq!(
        a.blocking_limit(),
        DOWN_FLOOR,
        "straight to the descent's floor"
    );
    a.step_blocking(false);
    assert_eq!(
        a.blocking_limit(),
        DOWN_FLOOR,
        "no convoy rule below the floor"
    );
    for _ in 0..BLOCKING_FLOOR {
        a.step_blocking(true);
    }
    assert_eq!(a.blocking_limit(), BLOCKING_FLOOR);
}

#[test]
fn a_call_is_judged_again_only_when_its_class_has_room() {
    let mut a: Admission<&str> = Admission::new(1);
    a.admit(Class::Long);
    a.record(SLOW, 4 * LONG_CALL);
    a.demote(Class::Long, SLOW, true);
    a.admit(Class::Long); // another long call holds the long room
    for _ in 0..2 * PROBATION_EVERY {
        assert_eq!(a.classify(SLOW, true), (Class::Blocking, false));
    }
    a.finished(Class::Long, true, FAST, Some(4 * LONG_CALL));
    let judged = (0..PROBATION_EVERY)
        .filter(|_| a.classify(SLOW, true) == (Class::Long, true))
        .count();
    assert_eq!(judged, 1);
}

#[test]
fn a_route_that_took_long_queues_in_the_long_class() {
    let mut a: Admission<&str> = Admission::new(1);
    assert_eq!(a.class_of(SLOW), Class::Short, "never seen: short");
    a.record(SLOW, 4 * LONG_CALL);
    assert_eq!(a.class_of(SLOW), Class::Long);
    // Smoothed: one fast call does not make it short again, several do.
    a.record(SLOW, Duration::ZERO);
    assert_eq!(a.class_of(SLOW), Class::Long);
    for _ in 0..8 {
        a.record(SLOW, Duration::ZERO);
    }
    assert_eq!(a.class_of(SLOW), Class::Short);
}

#[test]
fn short_calls_pass_long_ones_that_have_no_room() {
    let mut a = Admission::new(1);
    a.record(SLOW, 4 * LONG_CALL);
    a.admit(Class::Long);
    a.admit(Class::Short);
    a.wait("slow", SLOW, Class::Long);
    a.wait("fast", FAST, Class::Short);
    assert!(a.admit_next().is_none(), "both classes full");
    a.finished(Class::Short, true, FAST, Some(MS));
    assert_eq!(
        a.admit_next().map(|j| j.0),
        Some("fast"),
        "the short one passes"
    );
    a.finished(Class::Long, true, SLOW, Some(4 * LONG_CALL));
    assert_eq!(
        a.admit_next().map(|j| (j.0, j.2)),
        Some(("slow", Class::Long))
    );
}

#[test]
fn a_short_call_that_runs_long_frees_the_short_room_and_marks_its_route() {
    let mut a = Admission::new(1);
    a.admit(Class::Short);
    a.wait("same-route", SLOW, Class::Short);
    a.wait("fast", FAST, Class::Short);
    a.lengthen(SLOW);
    a.mark_long(SLOW, LONG_CALL);
    assert_eq!(a.runnable(Class::Short), 0);
    assert_eq!(a.runnable(Class::Long), 1);
    // The queued call to the same route now belongs to the long class (full): the fast
    // one behind it is admitted.
    assert_eq!(a.admit_next().map(|j| j.0), Some("fast"));
    assert!(a.admit_next().is_none());
    assert_eq!(a.queued_now(), 1);
    assert_eq!(a.stats.lengthened, 1);
}

#[test]
fn a_call_that_only_waited_past_long_call_leaves_its_route_short() {
    let mut a = Admission::new(1);
    a.admit(Class::Short);
    // Waited for the interpreter past LONG_CALL: moved to the long class, route unmarked,
    // and its wall time is not recorded when it finishes.
    a.lengthen(FAST);
    assert_eq!(a.runnable(Class::Short), 0);
    a.finished(Class::Long, true, FAST, None);
    assert_eq!(a.class_of(FAST), Class::Short);
    a.wait("next", FAST, Class::Short);
    assert_eq!(a.admit_next().map(|j| j.2), Some(Class::Short));
}

/// A short call that ran past `LONG_CALL` while the long class was full moved into it all the
/// same and freed the short room, which the next queued call of its route took, short: on a
/// loaded machine each was lengthened in turn, and a 3 ms CPU-bound route had 2 to 5 calls
/// counted long at once in a room of 1 (`test_admission.py`'s burst ran 3 at once).
#[test]
fn a_call_run_long_into_a_full_long_class_keeps_its_route_out_of_the_short_room() {
    let other = 3;
    let mut a = Admission::new(1);
    a.admit(Class::Long); // a long call of another route fills the long class
    a.admit(Class::Short);
    a.wait("same-route", SLOW, Class::Short);
    a.lengthen(SLOW);
    assert_eq!(a.runnable(Class::Long), 2, "it moved all the same");
    assert!(
        a.admit_next().is_none(),
        "its route's queued call must not take the short room it left"
    );
    assert!(
        !a.may_admit(SLOW, Class::Short),
        "nor a new call of its route"
    );
    // Another route's calls pass it (a health check behind a long call).
    assert!(a.may_admit(FAST, Class::Short));
    a.wait("fast", FAST, Class::Short);
    assert_eq!(
        a.admit_next().map(|j| (j.0, j.2)),
        Some(("fast", Class::Short))
    );
    a.finished(Class::Short, true, FAST, Some(MS));
    // Once the long class is within its room, the route is short again.
    a.finished(Class::Long, true, other, Some(4 * LONG_CALL));
    assert!(a.may_admit(SLOW, Class::Short));
    assert_eq!(
        a.admit_next().map(|j| (j.0, j.2)),
        Some(("same-route", Class::Short))
    );
}

/// Into a long class with room, a lengthened call leaves its route short (one short and one
/// long call of a route run at once, as the limit of each class allows).
#[test]
fn a_call_run_long_into_room_leaves_its_route_short() {
    let mut a = Admission::new(1);
    a.admit(Class::Short);
    a.wait("same-route", SLOW, Class::Short);
    a.lengthen(SLOW);
    assert_eq!(
        a.admit_next().map(|j| (j.0, j.2)),
        Some(("same-route", Class::Short))
    );
}

#[test]
fn no_limit_admits_everything() {
    let mut a: Admission<()> = Admission::new(0);
    for _ in 0..1000 {
        assert!(a.has_room(Class::Short));
        a.admit(Class::Short);
    }
    assert_eq!(a.stats.runnable_peak[0], 1000);
}

#[test]
fn a_call_is_blocked_when_it_waits_on_io_or_on_a_lock_while_the_interpreter_is_idle() {
    let w = MS;
    let idle = Duration::from_micros(100);
    let busy = Duration::from_micros(900);
    let never = || -> Waiting { panic!("not asked when the call used CPU") };
    // Sleeping, socket, database: blocked whatever the others do.
    assert_eq!(
        stalled(w, Duration::ZERO, idle, || Waiting::Io),
        Some(Waiting::Io)
    );
    assert_eq!(
        stalled(w, Duration::ZERO, busy, || Waiting::Io),
        Some(Waiting::Io)
    );
    // In futex while another app thread ran Python: waiting for the GIL.
    assert_eq!(stalled(w, Duration::ZERO, busy, || Waiting::Lock), None);
    // In futex while nobody ran Python: a Python lock.
    assert_eq!(
        stalled(w, Duration::ZERO, idle, || Waiting::Lock),
        Some(Waiting::Lock)
    );
    // Not in a system call: runnable on a busy machine, never demoted for that.
    assert_eq!(stalled(w, Duration::ZERO, idle, || Waiting::Unknown), None);
    // Computing.
    assert_eq!(stalled(w, Duration::from_micros(800), busy, never), None);
    assert_eq!(
        stalled(Duration::ZERO, Duration::ZERO, Duration::ZERO, never),
        None
    );
}

#[test]
fn calls_that_wait_for_a_thread_are_admitted_in_arrival_order_whatever_their_class() {
    // Every class has room; only threads are scarce (the pool is at its most): each free
    // thread takes the call that came first. A call judged again (short) among calls of a
    // blocking route is not passed by the blocking ones that came after it.
    let mut a = Admission::new(1);
    a.record(SLOW, 4 * LONG_CALL);
    a.wait("b1", FAST, Class::Blocking);
    a.wait("judged", FAST, Class::Short);
    a.wait("b2", FAST, Class::Blocking);
    a.wait("long", SLOW, Class::Long);
    a.wait("b3", FAST, Class::Blocking);
    let mut order = Vec::new();
    while let Some((job, route, class)) = a.admit_next() {
        order.push(job);
        a.finished(class, true, route, None); // its thread takes the next one
    }
    assert_eq!(order, ["b1", "judged", "b2", "long", "b3"]);
}

#[test]
fn short_calls_pass_an_older_long_one_only_so_many_times() {
    let mut a = Admission::new(1);
    a.record(SLOW, 4 * LONG_CALL);
    a.wait("long", SLOW, Class::Long);
    for _ in 0..2 * SHORT_FIRST {
        a.wait("short", FAST, Class::Short);
    }
    let mut order = Vec::new();
    while let Some((job, route, class)) = a.admit_next() {
        order.push(job);
        a.finished(class, true, route, None);
    }
    assert_eq!(
        order.iter().position(|j| *j == "long"),
        Some(SHORT_FIRST as usize)
    );
}

#[test]
fn routes_hash_by_path() {
    assert_eq!(route_hash(b"/a"), route_hash(b"/a"));
    assert_ne!(route_hash(b"/a"), route_hash(b"/b"));
    assert_ne!(route_hash(b"/a/b"), route_hash(b"/ab"));
}

#[test]
fn paths_that_differ_only_in_ids_are_one_route() {
    assert_eq!(route_hash(b"/users/42"), route_hash(b"/users/7"));
    assert_eq!(
        route_hash(b"/users/42/orders/9001"),
        route_hash(b"/users/1/orders/2")
    );
    assert_eq!(
        route_hash(b"/items/3f2b8c1e-9a4d-4e6f-8b2a-1c3d5e7f9a0b"),
        route_hash(b"/items/00000000-0000-4000-8000-000000000000")
    );
    assert_eq!(
        route_hash(b"/blobs/9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"),
        route_hash(b"/blobs/507f1f77bcf86cd799439011")
    );
    // Names stay names: a short hex word, a version, a digit inside a word.
    assert_ne!(route_hash(b"/cafe"), route_hash(b"/dead"));
    assert_ne!(route_hash(b"/v1/users"), route_hash(b"/v2/users"));
    assert_ne!(route_hash(b"/users/42"), route_hash(b"/users/42/orders"));
    assert_ne!(route_hash(b"/users/42"), route_hash(b"/accounts/42"));
    assert_ne!(route_hash(b"/page1"), route_hash(b"/page2"));
}

/// A room of hundreds of calls in flight, each using a thousandth of a core (calls that sleep),
/// does not descend however busy the app threads' share reads: those calls wait on something
/// other than the interpreter, and a room of two would run two at a time while the rest queue.
/// A room of a few calls at the same share (a busy interpreter's) still does.
#[test]
fn calls_that_each_use_little_of_a_busy_share_do_not_descend() {
    let mut a: Admission<&str> = Admission::new(1);
    let mut t = Instant::now();
    for _ in 0..400 {
        t += MS;
        a.admit(Class::Blocking);
        a.finished(Class::Blocking, false, SLOW, Some(MS));
        a.settle_blocking(t, MS);
    }
    a.set_room(500);
    assert!(!a.descend_blocking(t, 1.2), "1.2 of a core over 500 calls");
    assert_eq!(a.blocking_limit(), 500);
    a.set_room(8);
    assert!(a.descend_blocking(t, 0.9), "0.9 of a core over 8 calls");
    assert_eq!(a.blocking_limit(), DOWN_FLOOR);
}
