//! The kernel's view of a server thread: whether it is asleep (a sleep, a socket or database
//! wait, a lock) or running, read from /proc, and whether a sleep is a wait for the GIL behind a
//! thread that can run (`thread_wait`). The watchdog of inline calls (`scheduler.rs`) asks it
//! before taking a call's loop away. And how long the calling thread has waited to run
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

/// Where the watchdog found a thread (`thread_wait`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wait {
    /// Running, or runnable: waiting for a CPU, or stopped by a CPU quota (state R).
    Runnable,
    /// Asleep in the kernel (state S or D): a sleep, a socket or database wait, a lock; or the
    /// GIL while no other thread of the process can run (its holder sleeps holding it).
    Asleep,
    /// Asleep waiting for the GIL while another thread of the process is runnable: the GIL's
    /// holder computes, or is stopped by the quota with the rest of the process. The app does
    /// not block: the call goes on when that thread has run.
    ForGil,
}

/// Where the thread `tid` of this process is: running or runnable, asleep in the kernel, or
/// asleep waiting for the GIL with some other thread of the process runnable. Read only when an
/// inline call outlasts a tick and its thread did not run since the previous look, so its cost
/// stays off the hot path: one small file read (`/proc/.../stat`); for a thread asleep on a
/// futex, one more (`/proc/.../syscall`: where it waits); for a wait on the GIL, the state of
/// the process's threads until one is found runnable.
///
/// Why: a thread that waits for the GIL sleeps on a futex, as one that blocks does. Under a CPU
/// quota the GIL can be given, while the quota stops the process, to another thread (a thread
/// that wakes every 500 ms to poll its socket, `sg-control`, in the measured case), which the
/// quota then stops holding it; the call's thread waits for the GIL until the next period (tens
/// of milliseconds at 0.1 CPU). Read as asleep, the call was taken over as a blocking one, and
/// the server went to dispatch mode (`tests/test_allowance.py`, one run in three).
pub(super) fn thread_wait(tid: i32) -> Wait {
    if tid == 0 {
        return Wait::Runnable;
    }
    match task_state(tid) {
        Some(b'S') => {}
        Some(b'D') => return Wait::Asleep,
        _ => return Wait::Runnable,
    }
    let Some(runtime) = runtime_state() else {
        return Wait::Asleep;
    };
    match waits_on_gil(&read_task(tid, "syscall", 256), runtime) {
        None => Wait::Runnable,
        Some(false) => Wait::Asleep,
        Some(true) if another_runnable() => Wait::ForGil,
        Some(true) => Wait::Asleep,
    }
}

/// The first bytes of `/proc/self/task/{tid}/{file}` (at most `max`; none where it cannot be
/// read): one `open` and one `read` (`fs::read` would stat the file and read it in growing
/// pieces, 7 syscalls).
fn read_task(tid: i32, file: &str, max: usize) -> Vec<u8> {
    use std::io::Read;
    let mut buf = vec![0u8; max];
    let n = std::fs::File::open(format!("/proc/self/task/{tid}/{file}"))
        .and_then(|mut f| f.read(&mut buf))
        .unwrap_or(0);
    buf.truncate(n);
    buf
}

/// The state letter of the thread `tid` (R, S, D...), from its `stat`.
fn task_state(tid: i32) -> Option<u8> {
    // The state is within the first 40 bytes ("tid (comm) S", comm at most 15 bytes).
    let stat = read_task(tid, "stat", 128);
    // "tid (comm) S ...": comm may contain spaces or parentheses, so look after the last ')'
    // (the numeric fields that follow have none).
    let close = stat.iter().rposition(|&b| b == b')')?;
    stat.get(close + 2).copied()
}

/// From a thread's `/proc/.../syscall` ("nr arg1 arg2 ...", or "running"): whether it waits on
/// a futex inside `runtime` (the interpreter's runtime state, `runtime_state`: a wait for the
/// GIL). None: it runs (it was woken since its state was read).
fn waits_on_gil(syscall: &[u8], runtime: (usize, usize)) -> Option<bool> {
    let text = std::str::from_utf8(syscall).unwrap_or("");
    let mut fields = text.split_whitespace();
    let nr = fields.next();
    if nr == Some("running") {
        return None;
    }
    let futex = nr.and_then(|n| n.parse::<libc::c_long>().ok()) == Some(libc::SYS_futex);
    let addr = fields
        .next()
        .and_then(|a| a.strip_prefix("0x"))
        .and_then(|a| usize::from_str_radix(a, 16).ok());
    Some(futex && addr.is_some_and(|a| a >= runtime.0 && a < runtime.1))
}

/// Is a thread of this process other than the calling one runnable (state R)? Stops at the
/// first found.
fn another_runnable() -> bool {
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return false;
    };
    tasks
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .any(|tid| tid != me && task_state(tid) == Some(b'R'))
}

/// Where the interpreter's runtime state lies in memory (`_PyRuntime`: its start and end). The
/// GIL's mutex and condition variables are inside it (`_PyRuntime.ceval.gil` up to CPython
/// 3.11; from 3.12 the main interpreter's `_gil`, and `_PyRuntime` holds the main interpreter),
/// so a futex wait at an address inside it is a wait for the GIL (checked on 3.11: a loop
/// thread waiting for the GIL slept on `_PyRuntime` + 0x208). The size is the symbol's, from
/// the dynamic symbol table (`dladdr1`, glibc). None where either is unknown (a wait is then
/// read as today: asleep).
fn runtime_state() -> Option<(usize, usize)> {
    static RUNTIME: std::sync::OnceLock<Option<(usize, usize)>> = std::sync::OnceLock::new();
    *RUNTIME.get_or_init(find_runtime_state)
}

#[cfg(all(target_env = "gnu", target_pointer_width = "64"))]
fn find_runtime_state() -> Option<(usize, usize)> {
    /// glibc's `RTLD_DL_SYMENT` (dlfcn.h): `dladdr1` returns the symbol's table entry.
    const RTLD_DL_SYMENT: libc::c_int = 1;
    // SAFETY: a NUL-terminated name; RTLD_DEFAULT searches the loaded objects (the interpreter
    // that loaded this extension exports `_PyRuntime`).
    let addr = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"_PyRuntime".as_ptr()) };
    if addr.is_null() {
        return None;
    }
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    let mut sym: *mut libc::c_void = std::ptr::null_mut();
    // SAFETY: `info` and `sym` are valid out-pointers; with RTLD_DL_SYMENT glibc stores in
    // `sym` a pointer to the symbol's `Elf64_Sym` (in the object's mapped symbol table), or
    // leaves it null.
    let found = unsafe { libc::dladdr1(addr, info.as_mut_ptr(), &mut sym, RTLD_DL_SYMENT) };
    if found == 0 || sym.is_null() {
        return None;
    }
    // SAFETY: non-null, it points to the symbol table entry, mapped while the object is loaded
    // (the interpreter, for the life of the process).
    let size = unsafe { (*(sym as *const libc::Elf64_Sym)).st_size } as usize;
    (size > 0).then(|| (addr as usize, addr as usize + size))
}

#[cfg(not(all(target_env = "gnu", target_pointer_width = "64")))]
fn find_runtime_state() -> Option<(usize, usize)> {
    None
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

    /// A wait on a futex inside the runtime state is one for the GIL; a futex elsewhere (a
    /// lock), another system call, or a thread running since are not. (Lines as read on 3.11:
    /// the loop thread waiting for the GIL, `_PyRuntime` at 0x7ff75314e540.)
    #[test]
    fn a_futex_inside_the_runtime_state_is_a_wait_for_the_gil() {
        let nr = libc::SYS_futex;
        let runtime = (0x7ff7_5314_e540, 0x7ff7_5314_e540 + 0x28b20);
        let gil = format!("{nr} 0x7ff75314e748 0x189 0x0 0x0 0x0 0xffffffff 0x7ff74f7d8fc0 0x7f");
        let lock = format!("{nr} 0x55f0cb5e1ff0 0x89 0x0 0x7f041f7d9490 0x0 0xffffffff 0x7f 0x7f");
        assert_eq!(super::waits_on_gil(gil.as_bytes(), runtime), Some(true));
        assert_eq!(super::waits_on_gil(lock.as_bytes(), runtime), Some(false));
        let other = format!(
            "{} 0x7ff75314e748 0x189 0x0 0x0 0x0 0xffffffff 0x7f 0x7f",
            nr + 1
        );
        assert_eq!(super::waits_on_gil(other.as_bytes(), runtime), Some(false));
        assert_eq!(super::waits_on_gil(b"running\n", runtime), None);
    }

    /// A thread that computes is runnable, seen from another.
    #[test]
    fn a_computing_thread_is_found_runnable() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            });
            let found = (0..1000).any(|_| super::another_runnable());
            stop.store(true, Ordering::Relaxed);
            assert!(found);
        });
    }
}
