//! Unit tests of the scheduler: the watchdog's look-by-look state (`Watch`), without threads or
//! clocks, and the mode switch back from dispatch.

use super::*;

/// Look at `seq` after one tick has passed.
fn step(w: &mut Watch, now: &mut Instant, seq: u64) -> Look {
    *now += w.tick;
    w.look(seq, *now, false)
}

#[test]
fn a_call_spanning_looks_is_read_at_powers_of_two_then_taken_when_cpu_bound() {
    let mut now = Instant::now();
    let mut w = Watch::new(now);
    assert_eq!(
        step(&mut w, &mut now, 1),
        Look::Calm,
        "first sight of the call"
    );
    let mut reads = Vec::new();
    let mut looks = 0u32;
    loop {
        looks += 1;
        match step(&mut w, &mut now, 1) {
            Look::Running {
                read_state,
                cpu_bound: false,
                ..
            } => reads.push(read_state),
            Look::Running {
                cpu_bound: true, ..
            } => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        &reads[..8],
        &[true, true, false, true, false, false, false, true]
    );
    // 50 ms at the 250 µs tick, counted from the first look that saw it running.
    assert_eq!(looks, 201);
    w.judged(true);
    assert!(matches!(
        step(&mut w, &mut now, 1),
        Look::Running {
            first: true,
            read_state: true,
            cpu_bound: false
        }
    ));
}

#[test]
fn dispatch_mode_lasts_while_a_call_taken_over_still_runs() {
    let mut s = Scheduler::new(Policy::Adaptive);
    s.epoch = Instant::now()
        .checked_sub(REVERT_AFTER * 2)
        .expect("the clock is past its start");
    s.note_slow();
    assert!(!s.inline_now(), "a slow call starts dispatch mode");
    s.last_slow.store(0, Ordering::Relaxed);
    s.taken_running.fetch_add(1, Ordering::Relaxed);
    assert!(
        !s.inline_now(),
        "quiet for REVERT_AFTER, but the taken-over call may hold the GIL in C"
    );
    s.taken_over_call_ended();
    assert!(s.inline_now(), "it has ended: back to inline");
}

#[test]
fn calm_looks_back_off_the_tick_and_a_long_call_brings_it_back() {
    let mut now = Instant::now();
    let mut w = Watch::new(now);
    let mut seq = 0;
    for _ in 0..(CALM_LOOKS * 4) {
        seq += 2; // one quick call between every two looks
        assert_eq!(step(&mut w, &mut now, seq), Look::Calm);
    }
    assert_eq!(w.tick, TICK_MAX);
    seq += 1;
    step(&mut w, &mut now, seq);
    assert!(matches!(step(&mut w, &mut now, seq), Look::Running { .. }));
    assert_eq!(w.tick, TICK_MIN);
}

/// Back off to `TICK_MAX` with one quick call between every two looks.
fn backed_off(now: &mut Instant) -> (Watch, u64) {
    let mut w = Watch::new(*now);
    let mut seq = 0;
    for _ in 0..(CALM_LOOKS * 5) {
        seq += 2;
        assert_eq!(step(&mut w, now, seq), Look::Calm);
    }
    assert_eq!(w.tick, TICK_MAX);
    (w, seq)
}

#[test]
fn a_call_first_seen_at_a_long_tick_is_looked_at_again_one_short_tick_later() {
    let mut now = Instant::now();
    let (mut w, seq) = backed_off(&mut now);
    assert_eq!(w.next_sleep(false), TICK_MAX);
    assert_eq!(step(&mut w, &mut now, seq + 1), Look::Calm, "first sight");
    assert_eq!(w.next_sleep(false), TICK_MIN);
    now += TICK_MIN;
    assert!(matches!(
        w.look(seq + 1, now, false),
        Look::Running {
            first: true,
            read_state: true,
            ..
        }
    ));
    // A quick call found at a look has ended by the re-look: back to the long tick.
    assert_eq!(step(&mut w, &mut now, seq + 3), Look::Calm);
    assert_eq!(w.next_sleep(false), TICK_MIN);
    now += TICK_MIN;
    assert_eq!(w.look(seq + 4, now, false), Look::Calm);
    assert_eq!(w.next_sleep(false), TICK_MAX);
}

/// Under steady load nearly every look finds a call it has not seen before: the watchdog
/// looks again one `TICK_MIN` after such a look, but not again after that re-look, so it keeps
/// the long tick between pairs of looks; a call first seen at the re-look that blocks is still
/// judged one tick later (within `TICK_MIN` plus a tick of its start). What went wrong: each
/// re-look that found yet another call asked for another re-look, and the watchdog woke every
/// `TICK_MIN` for as long as the load lasted.
#[test]
fn under_steady_calls_a_re_look_is_not_followed_by_another() {
    let mut now = Instant::now();
    let (mut w, mut seq) = backed_off(&mut now);
    let mut sleeps = Vec::new();
    for _ in 0..8 {
        seq += 2; // a new call in flight at every look (odd numbers)
        assert_eq!(w.look(seq + 1, now, false), Look::Calm);
        let sleep = w.next_sleep(false);
        sleeps.push(sleep);
        now += sleep;
    }
    assert_eq!(
        sleeps,
        [TICK_MIN, TICK_MAX, TICK_MIN, TICK_MAX, TICK_MIN, TICK_MAX, TICK_MIN, TICK_MAX]
    );
    // The call first seen at a re-look blocks: the next look, one tick later, judges it.
    assert_eq!(w.look(seq + 3, now, false), Look::Calm);
    assert_eq!(w.next_sleep(false), TICK_MIN, "first sight at a long tick");
    now += TICK_MIN;
    assert_eq!(
        w.look(seq + 5, now, false),
        Look::Calm,
        "first sight at the re-look"
    );
    assert_eq!(w.next_sleep(false), TICK_MAX);
    now += TICK_MAX;
    assert!(matches!(
        w.look(seq + 5, now, false),
        Look::Running {
            first: true,
            read_state: true,
            ..
        }
    ));
}

#[test]
fn a_call_that_ends_by_itself_restores_the_tick_and_a_takeover_does_not() {
    let mut now = Instant::now();
    let (mut w, seq) = backed_off(&mut now);
    step(&mut w, &mut now, seq + 1);
    for _ in 0..3 {
        assert!(matches!(
            step(&mut w, &mut now, seq + 1),
            Look::Running { .. }
        ));
        assert_eq!(w.next_sleep(false), TICK_MIN);
    }
    assert_eq!(step(&mut w, &mut now, seq + 2), Look::Calm);
    assert_eq!(
        w.tick, TICK_MAX,
        "preempted or computing, not blocked: no closer look"
    );
    step(&mut w, &mut now, seq + 3);
    assert!(matches!(
        step(&mut w, &mut now, seq + 3),
        Look::Running { .. }
    ));
    w.judged(true);
    // The taken-over call's number moved on (`take_parked`): calm looks from the short tick.
    assert_eq!(step(&mut w, &mut now, seq + 4), Look::Calm);
    assert_eq!(w.tick, TICK_MIN);
}

#[test]
fn rare_calls_at_the_longest_tick_make_it_doze_and_close_calls_wake_it_for_good() {
    let mut now = Instant::now();
    let mut w = Watch::new(now);
    let mut seq = 0u64;
    let mut dozed = false;
    for i in 0..2000 {
        if i % 8 == 0 {
            seq += 2; // one call every 8 looks
        }
        if step(&mut w, &mut now, seq) == Look::Doze {
            dozed = true;
            break;
        }
    }
    assert!(
        dozed && w.sparse,
        "rare calls at TICK_MAX make the watchdog doze"
    );
    now += SPARSE_GAP * 2;
    w.woken(now);
    assert!(
        w.sparse,
        "a call long after the last wake keeps sparse mode"
    );
    now += SPARSE_GAP / 2;
    w.woken(now);
    assert!(!w.sparse, "calls close together end sparse mode");
    assert_eq!(w.tick, TICK_MIN);
}

#[test]
fn no_calls_for_a_second_dozes_but_never_while_a_call_runs() {
    let mut now = Instant::now();
    let mut w = Watch::new(now);
    let mut saw_doze = false;
    for _ in 0..20_000 {
        if step(&mut w, &mut now, 4) == Look::Doze {
            saw_doze = true;
            break;
        }
    }
    assert!(saw_doze);
    let mut w = Watch::new(now);
    for _ in 0..20_000 {
        let l = step(&mut w, &mut now, 5);
        assert_ne!(
            l,
            Look::Doze,
            "a running call (odd number) is never left unwatched"
        );
        if let Look::Running {
            cpu_bound: true, ..
        } = l
        {
            w.judged(true);
        }
    }
}

/// Look after the sleep the watchdog chose (`next_sleep`), at `seq`.
fn after_sleep(w: &mut Watch, now: &mut Instant, seq: u64) -> Look {
    *now += w.next_sleep(false);
    w.look(seq, *now, false)
}

/// Calls stop at the longest tick: the watchdog dozes (sparse mode) at `seq`; a call wakes it
/// and ends, it dozes again, and a second call soon after wakes it for good (`woken`, sparse
/// mode over). Returns the number at that second wake (odd: the call is in flight).
fn woken_by_close_calls(now: &mut Instant) -> (Watch, u64) {
    let (mut w, seq) = backed_off(now);
    while step(&mut w, now, seq) != Look::Doze {}
    assert_eq!(w.tick, TICK_MAX);
    *now += SPARSE_GAP * 2;
    w.woken(*now);
    assert_eq!(after_sleep(&mut w, now, seq + 1), Look::Calm);
    assert_eq!(after_sleep(&mut w, now, seq + 2), Look::Doze);
    *now += SPARSE_GAP / 4;
    w.woken(*now);
    assert!(!w.sparse);
    (w, seq + 3)
}

/// The call that wakes the watchdog from a doze is watched from `TICK_MIN`, then the tick goes
/// back to the longest. What went wrong: every wake-up ramped the tick up again from `TICK_MIN`
/// (64 looks at each of 250 µs, 500 µs, 1 ms, 2 ms), so each run of streamed responses after a
/// pause paid 256 looks, about 1.5 wake-ups per S3 fetch over 200 fetches, though every call
/// left the loop at its second block.
#[test]
fn a_quick_call_after_a_doze_brings_the_longest_tick_back() {
    let mut now = Instant::now();
    let (mut w, mut seq) = woken_by_close_calls(&mut now);
    assert_eq!(
        w.next_sleep(false),
        TICK_MIN,
        "the waking call is looked at soon"
    );
    assert_eq!(
        after_sleep(&mut w, &mut now, seq),
        Look::Calm,
        "first sight"
    );
    assert_eq!(w.next_sleep(false), TICK_MIN, "and looked at again soon");
    // It left the loop (it ended, or its response streams and was handed off).
    seq += 1;
    assert_eq!(after_sleep(&mut w, &mut now, seq), Look::Calm);
    assert_eq!(w.next_sleep(false), TICK_MAX, "no ramp up from TICK_MIN");
    for _ in 0..CALM_LOOKS * 4 {
        seq += 2; // a quick call between every two looks
        assert_eq!(after_sleep(&mut w, &mut now, seq), Look::Calm);
        assert_eq!(w.next_sleep(false), TICK_MAX);
    }
}

/// A call that wakes the watchdog and blocks is judged as soon as before (at its second look,
/// `2 × TICK_MIN` after the wake), and after its takeover the tick ramps up from `TICK_MIN`.
#[test]
fn a_call_after_a_doze_is_judged_at_the_short_tick_and_a_takeover_ramps_up() {
    let mut now = Instant::now();
    let (mut w, seq) = woken_by_close_calls(&mut now);
    let woke = now;
    assert_eq!(after_sleep(&mut w, &mut now, seq), Look::Calm);
    assert!(matches!(
        after_sleep(&mut w, &mut now, seq),
        Look::Running {
            first: true,
            read_state: true,
            ..
        }
    ));
    assert_eq!(now - woke, TICK_MIN * 2);
    w.judged(true);
    assert_eq!(after_sleep(&mut w, &mut now, seq + 1), Look::Calm);
    assert_eq!(w.next_sleep(false), TICK_MIN);
}

/// After a takeover the server is in dispatch mode, where no call runs inline: the watchdog's
/// next look dozes. What went wrong: it ramped its tick up from `TICK_MIN` with nothing to
/// judge, 319 looks here before it dozed (64 at each of 250 µs, 500 µs, 1 ms and 2 ms, then
/// 4 ms ones until the sequence number had stood still for a second), each a wake-up taking a
/// core from a busy pool. A call that runs inline again (the mode over) wakes it and is
/// watched from `TICK_MIN`.
#[test]
fn after_a_takeover_dispatch_mode_leaves_the_watchdog_dozing() {
    let mut now = Instant::now();
    let (mut w, seq) = backed_off(&mut now);
    step(&mut w, &mut now, seq + 1);
    assert!(matches!(
        step(&mut w, &mut now, seq + 1),
        Look::Running { .. }
    ));
    w.judged(true);
    // `take_parked` moved the number on: even, nothing parked, the mode dispatch.
    let mut ticking = 0;
    loop {
        now += w.next_sleep(false);
        if w.look(seq + 2, now, true) == Look::Doze {
            break;
        }
        ticking += 1;
        assert!(ticking < 1000, "still ticking at {:?}", w.tick);
    }
    assert_eq!(ticking, 0, "looks with nothing to judge before dozing");
    // A call that parks wakes it (`park`), whatever the mode says (it may have parked just
    // before a pool call switched it): watched from the short tick, never left to a doze.
    now += REVERT_AFTER;
    w.woken(now);
    assert_eq!(w.next_sleep(false), TICK_MIN);
    now += TICK_MIN;
    assert_eq!(w.look(seq + 3, now, true), Look::Calm, "first sight");
    now += TICK_MIN;
    assert!(matches!(
        w.look(seq + 3, now, true),
        Look::Running { first: true, .. }
    ));
    w.judged(true);
    now += TICK_MIN;
    assert_eq!(w.look(seq + 4, now, true), Look::Doze);
}

/// The counters of a pool call's thread at its start and end (ms of run delay and CPU, sleeps).
fn ends(
    before: (f64, f64, u64),
    after: (f64, f64, u64),
) -> Option<(call_time::Ends, call_time::Ends)> {
    let e = |(delay, cpu, sleeps): (f64, f64, u64)| call_time::Ends {
        delay: Some(Duration::from_secs_f64(delay / 1e3)),
        cpu: Some(Duration::from_secs_f64(cpu / 1e3)),
        sleeps: Some(sleeps),
    };
    Some((e(before), e(after)))
}

fn ms(ms: f64) -> Duration {
    Duration::from_secs_f64(ms / 1e3)
}

/// Timings measured on 6.18 (a thread computing 0.3 ms calls in a cgroup of 0.1 CPU): a call
/// stopped by the quota that never slept is judged by its CPU clock, whether the run delay
/// counted the stop (73.2 of 73.5 ms) or missed it (0 of 12.3 ms); by the wall less the run
/// delay, the second was a slow call of 12.3 ms.
#[test]
fn a_throttled_pool_call_that_never_slept_is_judged_by_its_cpu_clock() {
    let counted = call_time::judged(ms(73.51), ends((5.0, 9.0, 3), (78.19, 9.32, 3)));
    assert_eq!(counted, ms(0.32));
    let missed = call_time::judged(ms(12.33), ends((5.0, 9.0, 3), (5.0, 9.31, 3)));
    assert_eq!(missed, ms(0.31));
    assert!(missed <= SLOW_CALL);
}

/// A call that slept (a voluntary switch) is judged by the wall less its run delay: measured,
/// 14.41 ms on the wall with a sleep and 12.02 ms of run delay is 2.39 ms, slow; a call with no
/// quota (no counters) by the wall; and where the CPU clock or the sleeps are unknown, by the
/// wall less the run delay.
#[test]
fn a_pool_call_that_slept_is_judged_by_the_wall_less_its_run_delay() {
    let slept = call_time::judged(ms(14.41), ends((5.0, 9.0, 3), (17.02, 9.36, 4)));
    assert!(slept > SLOW_CALL && slept.abs_diff(ms(2.39)) < Duration::from_micros(1));
    assert_eq!(call_time::judged(ms(50.0), None), ms(50.0));
    let (before, mut after) = ends((5.0, 9.0, 3), (45.0, 9.1, 3)).unwrap();
    after.sleeps = None;
    let unknown = call_time::judged(ms(50.0), Some((before, after)));
    assert!(unknown.abs_diff(ms(10.0)) < Duration::from_micros(1));
}

/// The judge at look `n` (a read of the thread's state at each, 250 µs apart) of a call whose
/// thread's CPU clock stands still (it waits), found `found`, with other work waiting.
fn judge_waiting(j: &mut Judge, t0: Instant, n: u32, found: Found) -> Verdict {
    let cpu = Some(ms(3.0));
    let now = t0 + TICK_MIN * n;
    j.look(n == 1, true, false, now, cpu, || found, || true)
}

/// Under a CPU quota a loop thread waited for the GIL that a thread the quota had stopped held
/// (measured: `sg-control`, a Python thread that polls its socket every 500 ms): read asleep,
/// the call was taken over as a blocking one at the first read, and the server went to
/// dispatch mode. A wait for the GIL behind a runnable thread whose CPU does not move stays;
/// the same wait read as asleep (the GIL's holder asleep holding it) is taken over as blocked;
/// behind a holder that computes, the call is charged the process's CPU and taken over as
/// hogging once that passes `PREEMPT_CPU`.
#[test]
fn a_call_waiting_for_the_gil_behind_a_runnable_thread_is_not_blocked() {
    let t0 = Instant::now();
    let stopped = Found::ForGil {
        process_cpu: Some(ms(40.0)),
    };
    let mut j = Judge::default();
    for n in 1..=64 {
        assert_eq!(judge_waiting(&mut j, t0, n, stopped), Verdict::Leave, "{n}");
    }
    let mut j = Judge::default();
    assert_eq!(
        judge_waiting(&mut j, t0, 1, Found::Asleep),
        Verdict::Blocked
    );
    let mut j = Judge::default();
    let mut taken = None;
    for n in 1..=64 {
        let computing = Found::ForGil {
            process_cpu: Some(ms(40.0) + TICK_MIN * n),
        };
        let v = judge_waiting(&mut j, t0, n, computing);
        if v != Verdict::Leave {
            taken = Some((v, TICK_MIN * (n - 1)));
            break;
        }
    }
    let (v, charged) = taken.expect("taken over");
    assert!(
        v == Verdict::Hogging && charged >= PREEMPT_CPU,
        "{v:?} {charged:?}"
    );
    assert!(charged < PREEMPT_CPU + TICK_MIN, "{charged:?}");
}
