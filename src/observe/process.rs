//! The process's own figures for the standard `process_*` series (what Prometheus's client
//! libraries export): start time, CPU seconds, resident memory, open descriptors, read from
//! `/proc/self` when scraped (a few small reads, no state kept).

/// One reading of the process.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcessReadings {
    /// Seconds since the Unix epoch.
    pub start_time_seconds: f64,
    /// User and system CPU time.
    pub cpu_seconds: f64,
    pub resident_memory_bytes: u64,
    pub open_fds: u64,
}

/// Read `/proc/self`; None where it cannot be read (not Linux, no /proc mounted).
pub fn read() -> Option<ProcessReadings> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields are counted after
    // its last ')'. Field 3 (state) is then the first.
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    let (utime, stime, starttime, rss_pages) = (field(14)?, field(15)?, field(22)?, field(24)?);
    // SAFETY: sysconf has no pointer arguments.
    let (ticks, page) = unsafe {
        (
            libc::sysconf(libc::_SC_CLK_TCK),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let ticks = if ticks > 0 { ticks as f64 } else { 100.0 };
    let boot: u64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime ")?.trim().parse().ok())?;
    let open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
    Some(ProcessReadings {
        start_time_seconds: boot as f64 + starttime as f64 / ticks,
        cpu_seconds: (utime + stime) as f64 / ticks,
        resident_memory_bytes: rss_pages * page.max(0) as u64,
        // The directory's own descriptor, open while it was listed, is not counted.
        open_fds: open_fds.saturating_sub(1),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_is_read() {
        let p = super::read().expect("/proc/self");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(p.start_time_seconds > 1e9 && p.start_time_seconds <= now + 1.0);
        assert!(p.resident_memory_bytes > 0 && p.open_fds >= 3);
    }
}
