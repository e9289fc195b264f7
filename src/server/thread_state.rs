//! The kernel's view of a server thread: whether it is asleep (a sleep, a socket or database
//! wait, a lock) or running, read from /proc. The watchdog of inline calls (`scheduler.rs`)
//! asks it before taking a call's loop away. And how long the calling thread has waited to run
//! (`run_delay`): under a CPU quota, the time the cgroup was throttled, which the clock on the
//! wall counts as if the call had taken it (when the kernel counts it there at all), and how
//! often it went to sleep (`sleeps`), which throttling never counts.

use std::cell::RefCell;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::Duration;

thread_local! {
    /// This thread's `/proc/thread-self/schedstat`, opened at its first use.
    static SCHEDSTAT: RefCell<Option<File>> = const { RefCell::new(None) };
}

/// The time the calling thread has spent runnable but not running, so far (`schedstat`'s
/// second field: the run queue's wait, which includes the periods its cgroup was throttled by
/// a CPU quota). One `pread` of a file kept open per thread; None where /proc does not say.
pub(super) fn run_delay() -> Option<Duration> {
    SCHEDSTAT.with(|cell| {
        let mut file = cell.borrow_mut();
        if file.is_none() {
            *file = File::open("/proc/thread-self/schedstat").ok();
        }
        let mut buf = [0u8; 64];
        let n = file.as_ref()?.read_at(&mut buf, 0).ok()?;
        let text = std::str::from_utf8(&buf[..n]).ok()?;
        let ns: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
        Some(Duration::from_nanos(ns))
    })
}

/// The times the calling thread went to sleep so far (`getrusage(RUSAGE_THREAD)`'s voluntary
/// context switches: a sleep, a socket or database wait, a lock, the GIL). A thread stopped by
/// a CPU quota or preempted stays runnable, and counts an involuntary switch instead (checked
/// on 6.18: a thread computing in a cgroup of 0.1 CPU, stopped for up to 84 ms at a time, counted none).
/// None where the kernel does not say.
pub(super) fn sleeps() -> Option<u64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a valid, writable `rusage` for the call to fill; RUSAGE_THREAD asks
    // about the calling thread only.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: the call succeeded, so it filled `usage` (and zeroed memory is a valid rusage).
    let usage = unsafe { usage.assume_init() };
    Some(usage.ru_nvcsw as u64)
}

/// Is the thread asleep in the kernel (state S or D in /proc), rather than running or waiting
/// for a CPU (R)? Read only when an inline call outlasts a tick, so its cost (one small file
/// read) stays off the hot path.
pub(super) fn thread_is_sleeping(tid: i32) -> bool {
    use std::io::Read;
    if tid == 0 {
        return false;
    }
    // The state is within the first 40 bytes ("tid (comm) S", comm at most 15 bytes): one read
    // of 128 (`fs::read` would stat the file and read it in growing pieces, 7 syscalls).
    let mut buf = [0u8; 128];
    let Ok(n) = std::fs::File::open(format!("/proc/self/task/{tid}/stat"))
        .and_then(|mut f| f.read(&mut buf))
    else {
        return false;
    };
    let stat = &buf[..n];
    // "tid (comm) S ...": comm may contain spaces or parentheses, so look after the last ')'
    // (the numeric fields that follow have none).
    let Some(close) = stat.iter().rposition(|&b| b == b')') else {
        return false;
    };
    matches!(stat.get(close + 2), Some(b'S') | Some(b'D'))
}

#[cfg(test)]
mod tests {
    /// The calling thread's run delay is read, and never goes down.
    #[test]
    fn the_run_delay_is_read_and_never_goes_down() {
        let a = super::run_delay().expect("/proc/thread-self/schedstat");
        let mut x = 0u64;
        for i in 0..1_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = super::run_delay().unwrap();
        assert!(b >= a);
    }

    /// A sleep of the calling thread is counted.
    #[test]
    fn a_sleep_is_counted() {
        let a = super::sleeps().expect("getrusage");
        std::thread::sleep(std::time::Duration::from_millis(1));
        let b = super::sleeps().unwrap();
        assert!(b > a, "{a} {b}");
    }
}
