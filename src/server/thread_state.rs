//! The kernel's view of a server thread: whether it is asleep (a sleep, a socket or database
//! wait, a lock) or running, read from /proc. The watchdog of inline calls (`scheduler.rs`)
//! asks it before taking a call's loop away.

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
