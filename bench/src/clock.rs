//! Wall-clock timestamps comparable across processes, the bench's own CPU time, and
//! percentiles.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Nanoseconds since the Unix epoch (the clock Redis uses for expiry, so a timestamp can
/// be compared with `PEXPIRETIME`).
pub fn now_ns() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
}

/// Sleeps until the wall clock reaches `at_ns`.
pub fn sleep_until(at_ns: u64) {
    let now = now_ns();
    if at_ns > now {
        std::thread::sleep(Duration::from_nanos(at_ns - now));
    }
}

/// CPU seconds (user + system) used by this process, and by its waited-for children.
pub fn cpu_seconds() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<f64> = rest
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0.0))
        .collect();
    // utime, stime, cutime, cstime are fields 14..=17 of the line, 12..=15 after ')'.
    let ticks = |i: usize| fields.get(i).copied().unwrap_or(0.0) / CLOCK_TICKS;
    (ticks(11) + ticks(12), ticks(13) + ticks(14))
}

/// `sysconf(_SC_CLK_TCK)` on Linux.
const CLOCK_TICKS: f64 = 100.0;

/// The `p`-th percentile (0..=100) of `values`, by nearest rank; 0 when empty.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}
