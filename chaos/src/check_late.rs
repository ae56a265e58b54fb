//! The checker's count of late losses: a holding the servers ended (an `end-holding` fault:
//! a force release or a `DEL` of a loss worker's key) whose holder was not told within
//! [`BOUND_US`] while it went on holding. Pure (no I/O), unit-tested in
//! `check_late_tests.rs`.
//!
//! A holder is told by the server's announcement (`LOCK.LISTEN`): `lost()` resolves within
//! milliseconds. Without it (the unsafe switch turns the client's listening off), the
//! watchdog finds the end at its next renewal, a third of the 2 s lease later: late. An end
//! during a fault's window, or within a second after it, is excused (a cut connection may
//! carry the announcement late; the watchdog still finds it).

use crate::history::Event;
use crate::history_sem::Held;

/// A holder must be told within this of its holding's end on the server.
pub const BOUND_US: u64 = 250_000;
/// After a fault's window, announcements may still be on their way for this long.
const AFTER_WINDOW_US: u64 = 1_000_000;

/// A late loss: the end on the server, and the holding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Late {
    pub ended_us: u64,
    pub held: Held,
}

/// Every late loss of `events`.
pub fn late_losses(events: &[Event]) -> Vec<Late> {
    let excused: Vec<(u64, u64)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Window(w) => Some((w.from_us, w.to_us.saturating_add(AFTER_WINDOW_US))),
            _ => None,
        })
        .collect();
    let held: Vec<&Held> = events
        .iter()
        .filter_map(|e| match e {
            Event::Held(h) => Some(h),
            _ => None,
        })
        .collect();
    let mut late = Vec::new();
    for e in events {
        let Event::Ended { t_us, key, owners } = e else {
            continue;
        };
        if excused.iter().any(|&(a, b)| a <= *t_us && *t_us <= b) {
            continue;
        }
        let deadline = t_us.saturating_add(BOUND_US);
        for h in &held {
            let ended_this = h.key == *key && owners.contains(&h.owner) && h.from_us <= *t_us;
            let kept_on = h.until_us > deadline && h.told_us.is_none_or(|t| t > deadline);
            if ended_this && kept_on {
                late.push(Late {
                    ended_us: *t_us,
                    held: (*h).clone(),
                });
            }
        }
    }
    late
}

/// One line per late loss (for the report).
pub fn describe(events: &[Event]) -> Vec<String> {
    let line = |l: Late| {
        let told = match l.held.told_us {
            Some(t) => format!("told {}ms after", t.saturating_sub(l.ended_us) / 1000),
            None => "never told".to_owned(),
        };
        format!(
            "late loss on {}: owner={} ended on the server at {}, {told}, held on until {}",
            l.held.key, l.held.owner, l.ended_us, l.held.until_us
        )
    };
    late_losses(events).into_iter().map(line).collect()
}

#[cfg(test)]
#[path = "check_late_tests.rs"]
mod tests;
