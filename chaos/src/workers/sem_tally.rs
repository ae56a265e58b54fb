//! What the semaphore and latch workers did: the steps the servers confirmed, counted for
//! the run's report on stderr (not judged: the checker judges the history).

use std::sync::atomic::{AtomicUsize, Ordering};

const STEPS: [&str; 7] = [
    "permits_added",
    "renewals",
    "partial_releases",
    "silent_deaths",
    "latch_opened",
    "latch_timed_out",
    "latch_tickets_opened",
];
static TALLY: [AtomicUsize; 7] = [const { AtomicUsize::new(0) }; 7];
pub const ADDED: usize = 0;
pub const RENEWAL: usize = 1;
pub const PARTIAL: usize = 2;
pub const DIED: usize = 3;
pub const OPENED: usize = 4;
pub const TIMED_OUT: usize = 5;
pub const TICKET_OPENED: usize = 6;

pub fn tally(step: usize) {
    TALLY[step].fetch_add(1, Ordering::Relaxed);
}

/// The steps counted since the last call, as `name=count` pairs.
pub fn take_tally() -> String {
    let counts = STEPS.iter().zip(&TALLY);
    let pairs = counts.map(|(name, n)| format!("{name}={}", n.swap(0, Ordering::Relaxed)));
    pairs.collect::<Vec<_>>().join(" ")
}
