//! What the benchmarks read about a process from /proc: CPU time and memory figures.

use std::fs;

/// CPU time of all of a process's threads, in nanoseconds, from schedstat (finer than the
/// 10 ms ticks of /proc/PID/stat).
#[allow(dead_code)]
pub fn cpu_ns(pid: &str) -> Option<u64> {
    let tasks = fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut total = 0;
    for task in tasks.flatten() {
        let stat = fs::read_to_string(task.path().join("schedstat")).ok()?;
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

/// A `/proc/PID/status` figure in KiB (`VmHWM:`, `VmRSS:`).
#[allow(dead_code)]
pub fn status_kib(pid: &str, key: &str) -> Option<u64> {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
