//! What the read-write workers did: the steps the servers confirmed, counted for the run's
//! report on stderr (not judged: the checker judges the history).

use std::sync::atomic::{AtomicUsize, Ordering};

/// The steps the servers confirmed, counted for the run's report (not judged).
const STEPS: [&str; 7] = [
    "reentries",
    "upgrades_refused",
    "fenced_writes",
    "fenced_refused",
    "renewals",
    "downgrades",
    "ticket_grants",
];
static TALLY: [AtomicUsize; 7] = [const { AtomicUsize::new(0) }; 7];
pub const REENTRY: usize = 0;
pub const UPGRADE_REFUSED: usize = 1;
pub const FENCED_WRITE: usize = 2;
pub const FENCED_REFUSED: usize = 3;
pub const RENEWAL: usize = 4;
pub const DOWNGRADE: usize = 5;
pub const TICKET_GRANT: usize = 6;

pub fn tally(step: usize) {
    TALLY[step].fetch_add(1, Ordering::Relaxed);
}

/// The steps counted since the last call, as `name=count` pairs.
pub fn take_tally() -> String {
    let counts = STEPS.iter().zip(&TALLY);
    let pairs = counts.map(|(name, n)| format!("{name}={}", n.swap(0, Ordering::Relaxed)));
    pairs.collect::<Vec<_>>().join(" ")
}
