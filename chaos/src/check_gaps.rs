//! How long acquisitions stopped after each fault: the run's unavailability (measured, not
//! judged).

use crate::history::Event;

/// Per fault, the time from its start to the first successful acquisition after it (to
/// `end_us` when none came): (p50, max) in milliseconds.
pub fn unavailability(events: &[Event], end_us: u64) -> (u64, u64) {
    let mut gaps: Vec<u64> = gaps(events, end_us).into_iter().map(|(_, ms)| ms).collect();
    gaps.sort_unstable();
    let p50 = gaps.get(gaps.len() / 2).copied().unwrap_or(0);
    (p50, gaps.last().copied().unwrap_or(0))
}

/// The fault after which acquisitions stopped longest, and for how many milliseconds.
pub fn worst_fault(events: &[Event], end_us: u64) -> Option<(String, u64)> {
    gaps(events, end_us).into_iter().max_by_key(|&(_, ms)| ms)
}

/// Each fault's description and its gap in milliseconds.
fn gaps(events: &[Event], end_us: u64) -> Vec<(String, u64)> {
    let mut grants: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            Event::Acquire { t_us, ok: true, .. } => Some(*t_us),
            _ => None,
        })
        .collect();
    grants.sort_unstable();
    events
        .iter()
        .filter_map(|e| match e {
            Event::Fault { t_us, what } => Some((what.clone(), *t_us)),
            _ => None,
        })
        .map(|(what, f)| {
            let i = grants.partition_point(|&g| g < f);
            let next = grants.get(i).copied().unwrap_or(u64::MAX);
            (what, (next.min(end_us.max(f)) - f) / 1000)
        })
        .collect()
}
