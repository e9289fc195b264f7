//! One look window's judgement of one admitted call (`stalled`): blocked, and where
//! (`Waiting`). Plain functions of the readings the pool's watcher takes (`wsgi::pool::watch`),
//! kept apart from admission's bookkeeping, which acts on the verdict (`Admission::demote`).

use std::time::Duration;

/// A look window's share of CPU below which an admitted call counts as not running (1/10).
const STALLED_CPU_SHARE: u32 = 10;
/// App threads' CPU over a window below this share of it (1/2) means the interpreter was
/// mostly idle: the calls that did not run were waiting for something else than the GIL.
const IDLE_APP_SHARE: u32 = 2;

/// Where a thread that uses no CPU is waiting (from the kernel: `/proc/.../syscall`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waiting {
    /// In `futex`: the GIL, or a lock.
    Lock,
    /// In another system call: a sleep, a socket, a file, a database.
    Io,
    /// Not known (running, or the file cannot be read).
    Unknown,
}

/// One look window at one admitted call: is it blocked, and where? `call_cpu`: CPU its thread
/// used over the window; `app_cpu`: CPU every app thread used over it (the process minus the
/// event loop's and the watcher's threads); `waiting`: where the thread waits (asked only when
/// it used no CPU: it costs a file read). Blocked means waiting in a system call other than
/// `futex`, or in `futex` while the interpreter was idle (a Python lock, not the GIL). A thread
/// that is not in a system call at all is runnable: it used no CPU because the machine was
/// busy, and is never demoted for that.
pub fn stalled(
    window: Duration,
    call_cpu: Duration,
    app_cpu: Duration,
    waiting: impl FnOnce() -> Waiting,
) -> Option<Waiting> {
    if window.is_zero() || call_cpu >= window / STALLED_CPU_SHARE {
        return None;
    }
    match waiting() {
        Waiting::Io => Some(Waiting::Io),
        Waiting::Lock if app_cpu < window / IDLE_APP_SHARE => Some(Waiting::Lock),
        _ => None,
    }
}
