//! This process's own measures, read from Linux's `/proc` (0 where it cannot
//! be read): resident set, its peak, CPU time of all threads, minor page
//! faults.

use std::time::Duration;

/// A field of `/proc/PID/status` (`"VmHWM:"`, `"VmRSS:"`) in kB; `pid`
/// `None` is this process.
pub fn status_kb(pid: Option<u32>, field: &str) -> u64 {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_owned(),
    };
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// The resident set of this process now, in kB.
pub fn rss_kb() -> u64 {
    status_kb(None, "VmRSS:")
}

/// The peak resident set (VmHWM) of this process, in kB.
pub fn peak_rss_kb() -> u64 {
    status_kb(None, "VmHWM:")
}

/// The peak resident set (VmHWM) of process `pid` (a child), in kB.
pub fn peak_rss_kb_of(pid: u32) -> u64 {
    status_kb(Some(pid), "VmHWM:")
}

/// Resets the peak resident set to the current one (`5` to `clear_refs`,
/// Linux 4.0 and later; nothing where it is refused), so that the next peak
/// is of what runs after.
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// CPU time of every thread of this process so far (`schedstat`): beside
/// the wall time, it tells contention on a shared machine apart from work.
pub fn cpu_time() -> Duration {
    // The kernel brings a running thread's count up to date only at a tick
    // or a switch: a yield makes this thread's exact.
    std::thread::yield_now();
    let Ok(threads) = std::fs::read_dir("/proc/self/task") else {
        return Duration::ZERO;
    };
    let ns = threads
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(ns)
}

/// Minor page faults of this process so far (fresh memory touched).
pub fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Field 10; the fields after the command name are counted, since the
    // name is in parentheses and may hold spaces.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(7))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touching_memory_raises_the_resident_set_and_its_peak() {
        let before = peak_rss_kb();
        assert!(before > 0 && rss_kb() > 0);
        let faults = minor_faults();
        let block = vec![1u8; 64 << 20];
        assert!(peak_rss_kb() >= before + (32 << 10), "{} kB", peak_rss_kb());
        assert!(minor_faults() > faults);
        drop(std::hint::black_box(block));
        assert!(peak_rss_kb_of(std::process::id()) >= before);
    }

    #[test]
    fn cpu_time_grows_with_work() {
        let before = cpu_time();
        let mut x = 0u64;
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        assert!(cpu_time() > before);
    }
}
