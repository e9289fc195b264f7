//! Spreading connections over worker processes that share one listening socket.
//!
//! With `--workers N` every worker waits on the same listening sockets, and the kernel wakes
//! all of them for a new connection: the first to call `accept` gets it. Left alone, the worker
//! that is already running (hot on its core) wins most races: measured with two workers and
//! `wrk -c64`, one served 127,821 requests and the other 24,522. So each worker publishes its
//! number of open connections in a table the master shares with all of them (a `memfd`, one
//! `u32` per worker slot), and a worker that has more than the least loaded one plus `SLACK`
//! leaves the connection to the others. It looks again shortly (`DEFER`), and takes the
//! connection itself if nobody has after `DEFER_LIMIT` looks, so a client never waits for a
//! worker that is stuck in a long app call. A shared socket (not `SO_REUSEPORT`, one socket
//! per worker) keeps what reloads need: a connection waiting in the backlog is taken by
//! whichever worker is serving, and no socket with connections queued in it is ever closed.
//! `EPOLLEXCLUSIVE` is not available through mio and, where used, is known to favour the most
//! recently waiting process: counting connections balances by what each worker holds.
//!
//! The table's word after its `slots` entries is its high-water mark: one more than the
//! highest slot any worker opened (each raises it as it maps the table, `open`; it never goes
//! down, and vacant slots below it are skipped as before). A worker looks only at the entries
//! below it, one or two with one worker, rather than every slot: reading all 1,024 entries at
//! each accept cost about 12,500 instructions a connection (callgrind, uWSGI's protocol behind
//! nginx, a new connection per request: a quarter of the worker's 51,000).

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

/// A slot no live worker owns.
pub const VACANT: u32 = u32::MAX;

/// The flag a retired worker (past `--max-requests`, its replacement booting) sets on its
/// entry: the others count it out (it accepts no connection more, `io::request_limit`), so
/// they do not leave connections to it.
pub const RETIRING: u32 = 1 << 31;

/// A worker may hold this many connections more than the least loaded one and still accept.
const SLACK: u32 = 1;

/// How long a worker that left a connection to the others waits before it looks again.
pub const DEFER: Duration = Duration::from_millis(2);

/// After this many looks (`DEFER` apart) a waiting connection is taken whatever the counts.
pub const DEFER_LIMIT: u32 = 5;

/// This worker's view of the shared table.
pub struct Balance {
    table: *const AtomicU32,
    slots: usize,
    mine: usize,
    /// This worker retires: its entry carries [`RETIRING`].
    retiring: AtomicBool,
}

// SAFETY: the table is a MAP_SHARED mapping of atomics, valid until `Drop`; every access goes
// through `AtomicU32`, so sharing the pointer between threads is sound.
unsafe impl Send for Balance {}
// SAFETY: as above.
unsafe impl Sync for Balance {}

impl Balance {
    /// Map the master's table (`fd`, `slots` entries of 4 bytes and the high-water mark after
    /// them) as worker `mine`, and raise the mark to cover `mine`.
    pub fn open(fd: RawFd, slots: usize, mine: usize) -> io::Result<Balance> {
        if slots == 0 || mine >= slots {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "balance slot out of range",
            ));
        }
        let len = (slots + 1) * std::mem::size_of::<AtomicU32>();
        // SAFETY: a fresh shared mapping of `len` bytes of an fd the caller owns; the result
        // is checked before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let b = Balance {
            table: p as *const AtomicU32,
            slots,
            mine,
            retiring: AtomicBool::new(false),
        };
        b.slot(slots).fetch_max(mine as u32 + 1, Ordering::Relaxed);
        Ok(b)
    }

    /// Entry `i` of the table; `i == slots` is the high-water mark.
    fn slot(&self, i: usize) -> &AtomicU32 {
        debug_assert!(i <= self.slots);
        // SAFETY: i < slots, inside the mapping, which lives as long as `self`; page-aligned
        // base, so every u32 is aligned.
        unsafe { &*self.table.add(i) }
    }

    /// Publish this worker's number of open connections.
    pub fn publish(&self, open: usize) {
        let flag = if self.retiring.load(Ordering::Relaxed) {
            RETIRING
        } else {
            0
        };
        self.slot(self.mine).store(
            open.min(RETIRING as usize - 1) as u32 | flag,
            Ordering::Relaxed,
        );
    }

    /// From now on this worker retires (see [`RETIRING`]); `open`: its connections now.
    pub fn retire(&self, open: usize) {
        self.retiring.store(true, Ordering::Relaxed);
        self.publish(open);
    }

    /// The least number of connections held by another worker that serves (neither vacant
    /// nor retiring); None if there is none.
    fn least_serving_other(&self) -> Option<u32> {
        let used = (self.slot(self.slots).load(Ordering::Relaxed) as usize).min(self.slots);
        (0..used)
            .filter(|&i| i != self.mine)
            .map(|i| self.slot(i).load(Ordering::Relaxed))
            .filter(|&v| v != VACANT && v & RETIRING == 0)
            .min()
    }

    /// Whether a worker holding `open` connections should take the next one now.
    pub fn may_accept(&self, open: usize) -> bool {
        match self.least_serving_other() {
            Some(least) => (open as u64) <= u64::from(least) + u64::from(SLACK),
            None => true,
        }
    }
}

impl Drop for Balance {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `open`, with its length; not used after this.
        unsafe {
            libc::munmap(
                self.table as *mut libc::c_void,
                (self.slots + 1) * std::mem::size_of::<AtomicU32>(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(slots: usize) -> RawFd {
        // SAFETY: memfd_create with a valid C string; checked.
        let fd = unsafe { libc::memfd_create(c"balance-test".as_ptr(), 0) };
        assert!(fd >= 0);
        // SAFETY: a valid fd just created.
        assert_eq!(
            unsafe { libc::ftruncate(fd, ((slots + 1) * 4) as libc::off_t) },
            0
        );
        fd
    }

    fn vacate_all(b: &Balance) {
        for i in 0..b.slots {
            b.slot(i).store(VACANT, Ordering::Relaxed);
        }
    }

    #[test]
    fn alone_a_worker_always_accepts() {
        let fd = table(4);
        let a = Balance::open(fd, 4, 0).unwrap();
        vacate_all(&a);
        a.publish(1000);
        assert!(a.may_accept(1000));
    }

    #[test]
    fn a_retired_worker_is_counted_out() {
        let fd = table(4);
        let old = Balance::open(fd, 4, 0).unwrap();
        let other = Balance::open(fd, 4, 1).unwrap();
        vacate_all(&old);
        old.publish(0);
        other.publish(50);
        assert!(!other.may_accept(50), "the idle one is there to take it");
        old.retire(0);
        // The other does not compare itself with a worker that takes nothing.
        assert!(other.may_accept(50));
        old.publish(0);
        assert!(other.may_accept(50), "publishing keeps the flag");
    }

    #[test]
    fn the_busier_worker_leaves_connections_to_the_least_loaded() {
        let fd = table(4);
        let a = Balance::open(fd, 4, 0).unwrap();
        let b = Balance::open(fd, 4, 1).unwrap();
        let c = Balance::open(fd, 4, 2).unwrap();
        vacate_all(&a);
        a.publish(10);
        b.publish(8);
        c.publish(9);
        assert!(!a.may_accept(10));
        assert!(b.may_accept(8));
        assert!(c.may_accept(9), "within the slack of the least loaded");
        b.publish(9);
        assert!(a.may_accept(10));
    }

    #[test]
    fn a_vacant_slot_is_not_a_worker() {
        let fd = table(2);
        let a = Balance::open(fd, 2, 0).unwrap();
        vacate_all(&a);
        a.publish(50);
        assert!(a.may_accept(50));
        let b = Balance::open(fd, 2, 1).unwrap();
        b.publish(0);
        assert!(!a.may_accept(50));
    }

    #[test]
    fn only_the_slots_below_the_high_water_mark_are_read() {
        let fd = table(4);
        let a = Balance::open(fd, 4, 0).unwrap();
        vacate_all(&a);
        a.publish(50);
        a.slot(3).store(0, Ordering::Relaxed); // no worker opened slot 3: not read
        assert!(a.may_accept(50));
        let _d = Balance::open(fd, 4, 3).unwrap(); // its worker maps the table: it counts
        assert!(!a.may_accept(50));
    }
}
