//! prctl(2) for the Python front: `_core.parent_death_signal(signum)` (PR_SET_PDEATHSIG), set in
//! each worker just forked (messages.py) and in each side command (side_commands.py), and
//! `_core.name_thread(name)` (PR_SET_NAME), each Python thread's name (thread_names.py); and
//! [`name_this_thread`], the name of a server thread whose role changes (`server/drive.rs`).
//! Here rather than through ctypes: importing ctypes cost every process of a master and its
//! workers about 0.6 MB of resident memory for these two calls.

use pyo3::prelude::*;

/// Have the kernel send `signum` to this process when its parent dies (PR_SET_PDEATHSIG).
/// Raises OSError if the kernel refuses it.
#[pyfunction]
pub fn parent_death_signal(signum: i32) -> PyResult<()> {
    let arg = libc::c_ulong::try_from(signum)
        .map_err(|_| pyo3::exceptions::PyValueError::new_err("a signal number is positive"))?;
    // SAFETY: PR_SET_PDEATHSIG takes one integer argument and touches no memory of ours.
    let rc = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, arg, 0, 0, 0) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    Ok(())
}

/// Give the calling thread `name` in the kernel's eyes (PR_SET_NAME: the first 15 bytes, up to
/// a NUL). Raises OSError if the kernel refuses it.
#[pyfunction]
pub fn name_thread(name: &str) -> PyResult<()> {
    Ok(name_this_thread(name)?)
}

/// Give the calling thread `name` (PR_SET_NAME: the first 15 bytes, up to a NUL), where `top
/// -H`, `ps -L`, a profiler and `/proc/PID/task/TID/comm` read it.
pub fn name_this_thread(name: &str) -> std::io::Result<()> {
    let mut buf = [0u8; 16];
    let bytes = name.as_bytes();
    let n = bytes
        .iter()
        .take(15)
        .position(|&b| b == 0)
        .unwrap_or(bytes.len().min(15));
    buf[..n].copy_from_slice(&bytes[..n]);
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes from the pointer:
    // `buf` is 16 bytes, its last one always 0, and lives across the call.
    let rc = unsafe { libc::prctl(libc::PR_SET_NAME, buf.as_ptr() as libc::c_ulong, 0, 0, 0) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
