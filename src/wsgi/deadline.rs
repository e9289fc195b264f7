//! `--timeout`: what becomes of an app call that runs too long. The server answers the client,
//! says where the call is stuck, and ends the call where Python lets it:
//!
//! - every app call registers itself here ([`Deadlines::enter`]) while the option is on, and
//!   leaves when the request is over ([`Deadlines::leave`]);
//! - a watcher thread ([`Deadlines::watch`]) finds calls past the deadline. If the response's
//!   head was not sent yet, it writes a `504 Gateway Timeout` itself; in every case it shuts
//!   the socket down (`shutdown(2)`, both ways; both through `io::transport`'s
//!   `answer_and_close`), so the client is answered or sees the end at
//!   once, and an app blocked on `wsgi.input` gets its end of file. It then logs, once, the
//!   request line and the Python stack of the thread running the call;
//! - a call still registered at the watcher's next look (the shutdown alone ends one waiting
//!   on its client) gets `sluicegate.RequestTimeout` raised inside its thread (`interrupt`),
//!   so that it unwinds and its thread is free ([`Watched`] is a call's way through these);
//! - a call still registered [`UNWIND_GRACE`] after the raise is inside C code, where Python
//!   cannot raise (or it swallowed the exception): the watcher says so once, with its stack;
//! - who writes the head is decided by one compare-and-swap on a per-call [`HeadGate`]: the
//!   sender claims it before encoding the app's head, the watcher before writing its 504. The
//!   loser writes nothing (the sender then treats the client as gone).
//!
//! Calls past the deadline that have not returned yet are "stuck"; the supervisor reads their
//! number from the stats and has the worker replaced gracefully past `--max-stuck`.
//!
//! The socket stays open while a call is registered (the connection is the request's until
//! `run_request` returns, and `leave` comes before that), and the watcher touches it only
//! under the registry's lock: it never writes to a descriptor that was closed and reused.

use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use pyo3::Python;
use slab::Slab;

use super::interrupt::Interrupt;
use crate::io::transport::Cut;

/// The timeout of a registry kept only to list calls in flight (`/debug/requests`).
pub const NO_DEADLINE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// How long a call may take to unwind after `RequestTimeout` was raised in it before the
/// watcher logs that it is inside C code where Python cannot raise. A call in Python code
/// unwinds within a few switch intervals of the interpreter (5 ms each) once it gets the GIL.
pub const UNWIND_GRACE: Duration = Duration::from_secs(1);

/// The gate's states: nothing sent, head claimed by the app's response, claimed by the watcher;
/// an interim answer (`103 Early Hints`) being written, and the same cut by the watcher, which
/// then closes the connection without its 504 (written into the middle of a 103 the client had
/// not yet taken whole, its bytes became part of the 103's header block).
const UNSENT: u8 = 0;
const APP_HEAD: u8 = 1;
const TIMED_OUT: u8 = 2;
const INTERIM: u8 = 3;
const INTERIM_CUT: u8 = 4;

/// Who sends the response's head: the app's response or the watcher's 504. Claimed once.
#[derive(Default)]
pub struct HeadGate(AtomicU8);

impl HeadGate {
    /// The app's response claims the head; false if the watcher answered already.
    pub fn claim_for_app(&self) -> bool {
        match self
            .0
            .compare_exchange(UNSENT, APP_HEAD, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(now) => now == APP_HEAD,
        }
    }

    /// An interim answer is about to be written; false if the watcher answered or cut the
    /// request already (then nothing more is written). [`HeadGate::end_interim`] after it.
    pub fn begin_interim(&self) -> bool {
        self.0
            .compare_exchange(UNSENT, INTERIM, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The interim answer was written whole (or failed): the head is unsent again, unless the
    /// watcher cut the request meanwhile.
    pub fn end_interim(&self) {
        let _ = self
            .0
            .compare_exchange(INTERIM, UNSENT, Ordering::AcqRel, Ordering::Acquire);
    }

    /// The watcher's claim: true if it may write its 504 (nothing was sent). An interim answer
    /// on its way is cut instead (the connection closes after its partial bytes).
    fn claim_for_watcher(&self) -> bool {
        let cas = |from, to| {
            self.0
                .compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire)
        };
        loop {
            match cas(UNSENT, TIMED_OUT) {
                Ok(_) => return true,
                // Unless it was written whole just now: then the head is unsent again.
                Err(INTERIM) if cas(INTERIM, INTERIM_CUT).is_ok() => return false,
                Err(INTERIM) => continue,
                Err(_) => return false,
            }
        }
    }

    /// The watcher answered 504 for this call, or cut it while an interim answer was written.
    pub fn timed_out(&self) -> bool {
        matches!(self.0.load(Ordering::Acquire), TIMED_OUT | INTERIM_CUT)
    }

    /// The watcher answered 504 for this call (its bytes were sent).
    pub fn answered(&self) -> bool {
        self.0.load(Ordering::Acquire) == TIMED_OUT
    }
}

/// One registered app call.
struct Call {
    /// The request's connection (or HTTP/2 stream), which the watcher answers and ends
    /// (`io::transport`).
    transport: Cut,
    started: Instant,
    /// The thread running the call, as Python names it (`threading.get_ident()`).
    thread: u64,
    /// "METHOD TARGET", for the log line.
    label: String,
    gate: Arc<HeadGate>,
    /// Whether `RequestTimeout` was raised in it, or may still be (`interrupt`).
    interrupt: Arc<Interrupt>,
    watched: Watched,
}

/// Where a call is in the watcher's eyes. Moves forward only, one step per look at most.
#[derive(Clone, Copy)]
enum Watched {
    /// Within the deadline.
    Running,
    /// Past it: answered (or cut) and logged. `RequestTimeout` is raised at the next look if
    /// the call is still here: the shutdown alone ends a call that waits on its
    /// client (`wsgi.input`, a full socket), and it is given that look's time to leave.
    Expired,
    /// `RequestTimeout` was raised in it at this instant (or could not be: `interrupt` says).
    Raised(Instant),
    /// Still here [`UNWIND_GRACE`] after the raise: said once, nothing more to do.
    Lingering,
}

/// A registered call's handle, given back to [`Deadlines::leave`].
pub struct Ticket {
    key: usize,
    pub gate: Arc<HeadGate>,
    interrupt: Arc<Interrupt>,
}

/// What the watcher does about a call at one look (the raise and the logs need the
/// interpreter, so they are done outside the registry's lock: `server::report`).
pub enum Step {
    /// It just passed the deadline: log it, with whether a 504 was sent (else the head had
    /// been sent and the connection was only closed).
    Passed { answered: bool },
    /// Raise `RequestTimeout` in it (`Interrupt::raise_in`).
    Raise,
    /// It is still in the app this long after the raise.
    Lingering { waited: Duration },
}

/// One call the watcher acts on.
pub struct Expired {
    pub label: String,
    pub thread: u64,
    pub age: Duration,
    pub step: Step,
    pub interrupt: Arc<Interrupt>,
}

/// The registry of app calls and the deadline they share.
pub struct Deadlines {
    timeout: Duration,
    calls: Mutex<Slab<Call>>,
    /// Calls past the deadline still in the app (shared with the event loop's counters).
    stuck: Arc<AtomicUsize>,
    /// Calls that passed the deadline, ever.
    expired_total: AtomicU64,
    stop: Mutex<bool>,
    stop_cv: Condvar,
}

impl Deadlines {
    pub fn new(timeout: Duration, stuck: Arc<AtomicUsize>) -> Deadlines {
        Deadlines {
            timeout,
            calls: Mutex::new(Slab::new()),
            stuck,
            expired_total: AtomicU64::new(0),
            stop: Mutex::new(false),
            stop_cv: Condvar::new(),
        }
    }

    /// Register the app call about to run on this thread for the request on `fd`.
    pub fn enter(&self, transport: impl Into<Cut>, label: String) -> Ticket {
        let gate = Arc::new(HeadGate::default());
        let interrupt = Arc::new(Interrupt::default());
        let call = Call {
            transport: transport.into(),
            started: Instant::now(),
            thread: current_thread_ident(),
            label,
            gate: Arc::clone(&gate),
            interrupt: Arc::clone(&interrupt),
            watched: Watched::Running,
        };
        let key = self.calls.lock().unwrap().insert(call);
        Ticket {
            key,
            gate,
            interrupt,
        }
    }

    /// The request is over (before its socket may be closed). True if it had timed out. A
    /// `RequestTimeout` still pending on this thread for the call is withdrawn (`py`: the
    /// thread is attached, as every caller is).
    pub fn leave(&self, py: Python<'_>, ticket: Ticket) -> bool {
        ticket.interrupt.returned(py);
        self.remove(ticket)
    }

    /// `leave` but for the interrupt: the registry's part.
    fn remove(&self, ticket: Ticket) -> bool {
        let call = self.calls.lock().unwrap().remove(ticket.key);
        let expired = !matches!(call.watched, Watched::Running);
        if expired {
            self.stuck.fetch_sub(1, Ordering::Relaxed);
        }
        expired
    }

    /// Every call in flight: its request line, its thread, its age, and whether it is stuck.
    pub fn in_flight(&self) -> Vec<(String, u64, Duration, bool)> {
        let now = Instant::now();
        self.calls
            .lock()
            .unwrap()
            .iter()
            .map(|(_, c)| {
                (
                    c.label.clone(),
                    c.thread,
                    now.saturating_duration_since(c.started),
                    !matches!(c.watched, Watched::Running),
                )
            })
            .collect()
    }

    /// How many calls are in flight (no copy of their labels).
    pub fn in_flight_count(&self) -> usize {
        self.calls.lock().unwrap().len()
    }

    /// App calls past the deadline that have not returned.
    pub fn stuck(&self) -> usize {
        self.stuck.load(Ordering::Relaxed)
    }

    /// App calls that passed the deadline since the start.
    pub fn expired_total(&self) -> u64 {
        self.expired_total.load(Ordering::Relaxed)
    }

    /// The watcher's loop, until [`Deadlines::stop`]: every tenth of the timeout (between
    /// 10 ms and 1 s), time out the calls past it and hand each to `report` (outside the lock).
    /// `answer` is the 504's bytes.
    pub fn watch(&self, answer: impl Fn() -> Vec<u8>, report: impl Fn(Vec<Expired>)) {
        let tick = (self.timeout / 10).clamp(Duration::from_millis(10), Duration::from_secs(1));
        loop {
            {
                let stop = self.stop.lock().unwrap();
                let (stop, _) = self.stop_cv.wait_timeout(stop, tick).unwrap();
                if *stop {
                    return;
                }
            }
            let expired = self.expire(Instant::now(), &answer);
            if !expired.is_empty() {
                report(expired);
            }
        }
    }

    pub fn stop(&self) {
        *self.stop.lock().unwrap() = true;
        self.stop_cv.notify_all();
    }

    /// One look at `now`: each call's next step, if it has one (see [`Watched`]).
    fn expire(&self, now: Instant, answer: &impl Fn() -> Vec<u8>) -> Vec<Expired> {
        let mut out = Vec::new();
        let mut calls = self.calls.lock().unwrap();
        for (_, call) in calls.iter_mut() {
            let age = now.saturating_duration_since(call.started);
            let step = match call.watched {
                Watched::Running if age >= self.timeout => {
                    call.watched = Watched::Expired;
                    Step::Passed {
                        answered: self.answer(call, answer),
                    }
                }
                Watched::Expired => {
                    call.watched = Watched::Raised(now);
                    Step::Raise
                }
                Watched::Raised(at)
                    if now.saturating_duration_since(at) >= UNWIND_GRACE
                        && call.interrupt.raised() =>
                {
                    call.watched = Watched::Lingering;
                    Step::Lingering {
                        waited: now.saturating_duration_since(at),
                    }
                }
                _ => continue,
            };
            out.push(Expired {
                label: call.label.clone(),
                thread: call.thread,
                age,
                step,
                interrupt: Arc::clone(&call.interrupt),
            });
        }
        out
    }

    /// A call just past the deadline: counted, its client answered 504 if its head is still
    /// unsent (true), and its connection ended.
    fn answer(&self, call: &Call, answer: &impl Fn() -> Vec<u8>) -> bool {
        self.stuck.fetch_add(1, Ordering::Relaxed);
        self.expired_total.fetch_add(1, Ordering::Relaxed);
        let answered = call.gate.claim_for_watcher();
        // One small write on a socket nobody else writes (the gate is ours), then the
        // connection ends. `call.transport` is open while the call is registered (see the
        // module doc).
        let bytes = answered.then(answer);
        call.transport.answer_and_close(bytes.as_deref());
        answered
    }
}

/// The current thread's identity as Python's `threading.get_ident()` gives it (on Linux,
/// `pthread_self()`), so the watcher finds the call's frame in `sys._current_frames()`.
fn current_thread_ident() -> u64 {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as u64 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::transport::Transport;

    #[test]
    fn the_gate_is_claimed_once() {
        let g = HeadGate::default();
        assert!(g.claim_for_app());
        assert!(g.claim_for_app(), "the app may claim again (later blocks)");
        assert!(!g.claim_for_watcher());
        assert!(!g.timed_out());

        let g = HeadGate::default();
        assert!(g.claim_for_watcher());
        assert!(!g.claim_for_app());
        assert!(g.timed_out());
    }

    #[test]
    fn a_call_past_the_deadline_is_answered_once_and_counted_until_it_leaves() {
        use std::io::Read;
        use std::os::fd::AsRawFd;
        let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        let d = Deadlines::new(Duration::from_millis(0), Arc::default());
        let t = d.enter(Transport::Plain(a.as_raw_fd()), "GET /slow".into());
        let first = d.expire(Instant::now(), &|| b"HTTP/1.1 504 X\r\n\r\n".to_vec());
        assert_eq!(first.len(), 1);
        assert!(matches!(first[0].step, Step::Passed { answered: true }));
        assert_eq!(first[0].label, "GET /slow");
        // Still there at the next look: the interrupt is due, once.
        let second = d.expire(Instant::now(), &Vec::new);
        assert!(second.len() == 1 && matches!(second[0].step, Step::Raise));
        assert!(
            d.expire(Instant::now(), &Vec::new).is_empty(),
            "reported once"
        );
        assert_eq!((d.stuck(), d.expired_total()), (1, 1));
        assert!(!t.gate.claim_for_app());
        // The answer, then the end of the stream (the watcher shut the socket down).
        let mut got = Vec::new();
        b.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"HTTP/1.1 504 X\r\n\r\n");
        assert!(d.remove(t));
        assert_eq!((d.stuck(), d.expired_total()), (0, 1));
    }

    #[test]
    fn a_call_still_there_after_the_raise_is_told_once_after_the_grace() {
        let d = Deadlines::new(Duration::from_millis(0), Arc::default());
        let t = d.enter(Transport::Plain(-1), "GET /c".into());
        assert!(t.gate.claim_for_app(), "no 504 to write on this socket");
        let t0 = Instant::now();
        let steps = |at: Instant| -> Vec<Step> {
            d.expire(at, &Vec::new)
                .into_iter()
                .map(|e| e.step)
                .collect()
        };
        assert!(matches!(steps(t0)[..], [Step::Passed { answered: false }]));
        assert!(matches!(steps(t0)[..], [Step::Raise]));
        // The watcher raised (what `Interrupt::raise_in` does with the interpreter).
        t.interrupt.pretend_raised();
        assert!(steps(t0 + UNWIND_GRACE / 2).is_empty(), "within the grace");
        let late = steps(t0 + UNWIND_GRACE);
        assert!(matches!(late[..], [Step::Lingering { waited }] if waited == UNWIND_GRACE));
        assert!(steps(t0 + 10 * UNWIND_GRACE).is_empty(), "told once");
        assert!(d.remove(t));
    }

    #[test]
    fn a_call_that_returned_before_the_raise_is_not_told_lingering() {
        let d = Deadlines::new(Duration::from_millis(0), Arc::default());
        let t = d.enter(Transport::Plain(-1), "GET /r".into());
        assert!(t.gate.claim_for_app());
        let t0 = Instant::now();
        assert_eq!(d.expire(t0, &Vec::new).len(), 1);
        assert_eq!(d.expire(t0, &Vec::new).len(), 1, "the raise is due");
        // Not raised (the call had returned: `Raised::TooLate`): nothing to tell.
        assert!(d.expire(t0 + 10 * UNWIND_GRACE, &Vec::new).is_empty());
        assert!(d.remove(t));
    }

    #[test]
    fn a_call_whose_head_was_sent_is_only_cut() {
        let d = Deadlines::new(Duration::from_millis(0), Arc::default());
        let t = d.enter(Transport::Plain(-1), "GET /stream".into());
        assert!(t.gate.claim_for_app());
        let e = d.expire(Instant::now(), &|| panic!("no 504 after the app's head"));
        assert_eq!(e.len(), 1);
        assert!(matches!(e[0].step, Step::Passed { answered: false }));
        assert!(d.remove(t));
    }
}
