//! The loop's timers for its tasks: [`sleep`] and [`timeout`], kept in one heap by deadline
//! ([`Timers`], in the task set's shared part); the loop's wait ends at the earliest and fires
//! those due. A timer moved later ([`Sleep::reset`]) keeps its place in the heap and is put
//! back at its new deadline when the old one comes: a connection's idle timer, pushed back at
//! each stream, costs no heap operation per stream. A timer that fired is queued again when
//! it is next polled before its (new) deadline, so one timer serves any number of waits
//! (QUIC's loss and idle timers, a connection's idle timer after each fire).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

struct Entry {
    at: Instant,
    waker: Option<Waker>,
    /// The deadline of the heap entry that stands for this timer (`None`: none is queued: it
    /// fired, or was never polled). Other heap entries of it are stale and dropped when they
    /// come out.
    queued_at: Option<Instant>,
}

struct Due(Instant, Arc<Mutex<Entry>>);

impl PartialEq for Due {
    fn eq(&self, o: &Self) -> bool {
        self.0 == o.0
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Due {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.cmp(&o.0)
    }
}

/// Every timer of the loop's tasks.
#[derive(Default)]
pub struct Timers {
    heap: Mutex<BinaryHeap<Reverse<Due>>>,
}

thread_local! {
    /// The timers of the task set polling a task on this thread (`tasks.rs` sets it).
    static CURRENT: std::cell::RefCell<Option<Arc<Timers>>> = const { std::cell::RefCell::new(None) };
}

/// Make `timers` this thread's while a task set polls its tasks; returns the previous ones.
pub fn enter(timers: Option<Arc<Timers>>) -> Option<Arc<Timers>> {
    CURRENT.with(|c| c.replace(timers))
}

impl Timers {
    fn add(&self, at: Instant, entry: &Arc<Mutex<Entry>>) {
        self.heap
            .lock()
            .unwrap()
            .push(Reverse(Due(at, Arc::clone(entry))));
    }

    pub fn next_due(&self) -> Option<Instant> {
        self.heap.lock().unwrap().peek().map(|r| r.0 .0)
    }

    /// Wake the timers due at `now`; those moved later go back in at their new deadline,
    /// those dropped (and stale entries) leave.
    pub fn fire(&self, now: Instant) {
        let mut heap = self.heap.lock().unwrap();
        while heap.peek().is_some_and(|r| r.0 .0 <= now) {
            let Reverse(Due(when, entry)) = heap.pop().expect("peeked");
            if Arc::strong_count(&entry) == 1 {
                continue;
            }
            let mut e = entry.lock().unwrap();
            if e.queued_at != Some(when) {
                continue;
            }
            if e.at > now {
                let at = e.at;
                e.queued_at = Some(at);
                drop(e);
                heap.push(Reverse(Due(at, entry)));
                continue;
            }
            e.queued_at = None;
            if let Some(w) = e.waker.take() {
                w.wake();
            }
        }
    }
}

/// A timer of the loop: ready at its deadline.
pub struct Sleep {
    entry: Arc<Mutex<Entry>>,
    timers: Arc<Timers>,
}

/// A timer ready `d` from now (inside a task of the loop).
pub fn sleep(d: Duration) -> Sleep {
    let timers = CURRENT.with(|c| c.borrow().clone().expect("polled by the loop's task set"));
    sleep_until(timers, Instant::now() + d)
}

/// A timer of `timers` ready at `at` (from any thread: QUIC's timers, `io::h3::runtime`).
pub fn sleep_until(timers: Arc<Timers>, at: Instant) -> Sleep {
    Sleep {
        entry: Arc::new(Mutex::new(Entry {
            at,
            waker: None,
            queued_at: None,
        })),
        timers,
    }
}

impl Sleep {
    /// Move the deadline to `d` from now.
    pub fn reset(&mut self, d: Duration) {
        self.reset_at(Instant::now() + d);
    }

    /// Move the deadline to `at`. Later: the queued entry is put back when it comes out;
    /// earlier: a new one is queued (the old one becomes stale).
    pub fn reset_at(&mut self, at: Instant) {
        let mut e = self.entry.lock().unwrap();
        e.at = at;
        if e.queued_at.is_some_and(|q| at < q) {
            e.queued_at = Some(at);
            drop(e);
            self.timers.add(at, &self.entry);
        }
    }

    pub fn poll_due(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let mut e = self.entry.lock().unwrap();
        if Instant::now() >= e.at {
            return Poll::Ready(());
        }
        if !e.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            e.waker = Some(cx.waker().clone());
        }
        if e.queued_at.is_none() {
            let at = e.at;
            e.queued_at = Some(at);
            drop(e);
            self.timers.add(at, &self.entry);
        }
        Poll::Pending
    }
}

impl Future for Sleep {
    type Output = ();
    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.get_mut().poll_due(cx)
    }
}

/// `f` did not end within its time.
#[derive(Debug)]
pub struct Elapsed;

/// `f`'s output, or [`Elapsed`] if `d` passes first.
pub async fn timeout<F: Future>(d: Duration, f: F) -> Result<F::Output, Elapsed> {
    let mut timer = sleep(d);
    let mut f = pin!(f);
    poll_fn(|cx| {
        if let Poll::Ready(v) = f.as_mut().poll(cx) {
            return Poll::Ready(Ok(v));
        }
        timer.poll_due(cx).map(|()| Err(Elapsed))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_timer_that_fired_fires_again_after_a_reset() {
        let timers = Arc::new(Timers::default());
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&count));
        let mut cx = Context::from_waker(&waker);
        let t0 = Instant::now() + Duration::from_secs(3600);
        let mut timer = sleep_until(Arc::clone(&timers), t0);
        assert!(timer.poll_due(&mut cx).is_pending());
        timers.fire(t0);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        // Moved later after it fired, then polled: queued again, and fires at the new time.
        let t1 = t0 + Duration::from_secs(60);
        timer.reset_at(t1);
        assert!(timer.poll_due(&mut cx).is_pending());
        assert_eq!(timers.next_due(), Some(t1));
        timers.fire(t0 + Duration::from_secs(30));
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        timers.fire(t1);
        assert_eq!(count.0.load(Ordering::SeqCst), 2);
        // Moved earlier while queued: fires at the earlier time, once.
        let t2 = t1 + Duration::from_secs(60);
        timer.reset_at(t2 + Duration::from_secs(60));
        assert!(timer.poll_due(&mut cx).is_pending());
        timer.reset_at(t2);
        timers.fire(t2);
        assert_eq!(count.0.load(Ordering::SeqCst), 3);
        timers.fire(t2 + Duration::from_secs(60));
        assert_eq!(count.0.load(Ordering::SeqCst), 3);
        assert_eq!(timers.next_due(), None);
    }
}
