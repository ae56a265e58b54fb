//! The checker: judges a history. Pure (no I/O), unit-tested on hand-made histories in
//! `check_tests.rs`. Replica differences and crashes are counted by the run after it
//! settles and added to the counts here.

use std::collections::{BTreeMap, BTreeSet};

pub use crate::check_gaps::{unavailability, worst_fault};
use crate::history::{Event, Mode, Section, Wait};

/// The names of the read-write workers begin so (their acquisitions are `rw_acquisitions`).
pub const RW_WORKERS: &str = "rw";

/// Every safety count, and the run's size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub acquisitions: usize,
    pub faults: usize,
    pub overlaps: usize,
    pub stale_accepted: usize,
    pub repeated_tokens: usize,
    pub backwards_tokens: usize,
    pub lost_replies: usize,
    pub double_replies: usize,
    pub replica_diffs: usize,
    pub crashes: usize,
    /// Holds on the servers that no worker believed in for over 1 s (`check_watch.rs`).
    pub leaked_holds: usize,
    /// Heartbeats answered over 250 ms late, outside deliberate stops (`check_watch.rs`).
    pub stalls: usize,
    /// Acquisitions of the read-write workers (also in `acquisitions`).
    pub rw_acquisitions: usize,
    /// The overlaps on read-write locks (also in `overlaps`).
    pub rw_overlaps: usize,
    /// Replies of `RWLOCK.*` and `LOCK.FENCED` that their interface rules out.
    pub rw_wrong_replies: usize,
    /// Acquisitions of the semaphore workers (also in `acquisitions`).
    pub sem_acquisitions: usize,
    /// Moments a semaphore's believed holdings exceeded its permits (also in `overlaps`).
    pub sem_overlaps: usize,
    /// Latch waits answered (1 or 0), and those that broke the latch rule (`check_sem.rs`).
    pub latch_waits: usize,
    pub latch_early: usize,
    /// Holdings the servers ended whose holder was not told in time (`check_late.rs`).
    pub late_losses: usize,
}

impl Counts {
    /// The sum of the safety counts: 0 for a safe run.
    pub fn violations(&self) -> usize {
        self.overlaps
            + self.stale_accepted
            + self.repeated_tokens
            + self.backwards_tokens
            + self.lost_replies
            + self.double_replies
            + self.replica_diffs
            + self.crashes
            + self.leaked_holds
            + self.stalls
            + self.rw_wrong_replies
            + self.latch_early
            + self.late_losses
    }
}

/// Judges `events`.
pub fn judge(events: &[Event]) -> Counts {
    let sections = sections_of(events);
    let waits: Vec<&Wait> = events
        .iter()
        .filter_map(|e| match e {
            Event::Wait(w) => Some(w),
            _ => None,
        })
        .collect();
    let by_key = group_by_key(&sections);
    let mut counts = Counts {
        acquisitions: count(events, |e| matches!(e, Event::Acquire { ok: true, .. })),
        faults: count(events, |e| matches!(e, Event::Fault { .. })),
        overlaps: by_key.values().map(|s| overlaps(s)).sum(),
        stale_accepted: sections.iter().map(|s| stale_writes(s)).sum(),
        repeated_tokens: by_key.values().map(|s| repeated(s)).sum(),
        backwards_tokens: by_key.values().map(|s| backwards(s)).sum(),
        lost_replies: waits
            .iter()
            .filter(|w| w.replies == 0 && !w.conn_error)
            .count(),
        double_replies: waits.iter().filter(|w| w.replies > 1).count(),
        replica_diffs: 0,
        crashes: 0,
        leaked_holds: crate::check_watch::leaked_holds(events).len(),
        stalls: crate::check_watch::stalls(events).len(),
        rw_acquisitions: count(
            events,
            |e| matches!(e, Event::Acquire { ok: true, worker, .. } if worker.starts_with(RW_WORKERS)),
        ),
        rw_overlaps: by_key
            .values()
            .filter(|s| s.iter().any(|s| s.mode != Mode::Plain))
            .map(|s| overlaps(s))
            .sum(),
        rw_wrong_replies: count(events, |e| matches!(e, Event::Wrong { .. })),
        late_losses: crate::check_late::late_losses(events).len(),
        ..Counts::default()
    };
    let sem = crate::check_sem::counts(events);
    counts.overlaps += sem.overlaps;
    counts.repeated_tokens += sem.repeated_tokens;
    counts.backwards_tokens += sem.backwards_tokens;
    (counts.sem_acquisitions, counts.sem_overlaps) = (sem.acquisitions, sem.overlaps);
    (counts.latch_waits, counts.latch_early) = (sem.latch_waits, sem.latch_early);
    counts
}

fn count(events: &[Event], what: impl Fn(&Event) -> bool) -> usize {
    events.iter().filter(|e| what(e)).count()
}

fn group_by_key<'a>(sections: &[&'a Section]) -> BTreeMap<&'a str, Vec<&'a Section>> {
    let mut by_key: BTreeMap<&str, Vec<&Section>> = BTreeMap::new();
    for s in sections {
        by_key.entry(s.key.as_str()).or_default().push(s);
    }
    by_key
}

/// A holding: reentrant sections of one owner under one token are one holding.
fn holding(s: &Section) -> (&str, u64) {
    (s.owner.as_str(), s.token)
}

/// Pairs of sections of one key, of different holdings, both believed held throughout,
/// whose [begin, end] intervals (the resource's clock) intersect, unless both read.
fn overlaps(sections: &[&Section]) -> usize {
    overlapping(sections).len()
}

/// The overlapping pairs of [`overlaps`], to show what was found.
fn overlapping<'a>(sections: &[&'a Section]) -> Vec<(&'a Section, &'a Section)> {
    let mut believed: Vec<(u64, u64, &Section)> = sections
        .iter()
        .filter(|s| s.believed)
        .filter_map(|s| Some((s.begin.stamp_us, s.end?.stamp_us, *s)))
        .collect();
    believed.sort_by_key(|&(begin, _, _)| begin);
    let mut active: Vec<(u64, &Section)> = Vec::new();
    let mut found = Vec::new();
    for (begin, end, s) in believed {
        active.retain(|&(other_end, _)| other_end > begin);
        let both_read = |other: &Section| other.mode == Mode::Read && s.mode == Mode::Read;
        let others = active
            .iter()
            .filter(|(_, other)| holding(other) != holding(s) && !both_read(other));
        found.extend(others.map(|&(_, other)| (other, s)));
        active.push((end, s));
    }
    found
}

/// The critical sections of a history.
fn sections_of(events: &[Event]) -> Vec<&Section> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Section(s) => Some(s),
            _ => None,
        })
        .collect()
}

/// Every overlapping pair of sections, stale write and backwards token, one line each (for
/// the report).
pub fn describe(events: &[Event]) -> Vec<String> {
    let sections = sections_of(events);
    let by_key = group_by_key(&sections);
    let mut lines: Vec<String> = by_key
        .iter()
        .flat_map(|(key, s)| overlapping(s).into_iter().map(move |(a, b)| (key, a, b)))
        .map(|(key, a, b)| format!("overlap on {key}: {} / {}", show(a), show(b)))
        .collect();
    for s in sections.iter().filter(|s| stale_writes(s) > 0) {
        lines.push(format!("stale write accepted on {}: {}", s.key, show(s)));
    }
    for e in events {
        if let Event::Wrong { worker, key, what } = e {
            lines.push(format!("wrong reply on {key}: {worker}: {what}"));
        }
    }
    for (key, s) in &by_key {
        for (earlier, later) in backwards_pairs(s) {
            lines.push(format!(
                "token backwards on {key}: {} then {}",
                show(earlier),
                show(later)
            ));
        }
    }
    lines
}

fn show(s: &Section) -> String {
    let end = s.end.map_or(0, |w| w.stamp_us);
    format!(
        "{} owner={} {:?} token={} lease={}ms [{}..{}] begin_accepted={} believed={}",
        s.worker,
        s.owner,
        s.mode,
        s.token,
        s.lease_ms,
        s.begin.stamp_us,
        end,
        s.begin.accepted,
        s.believed
    )
}

/// Writes the resource accepted from a token below the highest it had accepted, or equal
/// to it but from another owner (two holders with one token).
fn stale_writes(s: &Section) -> usize {
    if !s.fenced {
        return 0;
    }
    let stale = |w: &crate::history::Write| {
        let token = s.token as i64;
        w.accepted && (token < w.max_before || (token == w.max_before && !w.same_holder))
    };
    [Some(s.begin), s.end]
        .iter()
        .flatten()
        .filter(|w| stale(w))
        .count()
}

/// Tokens of one key that more than one owner was given: one per extra owner.
fn repeated(sections: &[&Section]) -> usize {
    let mut owners: BTreeMap<u64, BTreeSet<&str>> = BTreeMap::new();
    for s in sections.iter().filter(|s| s.fenced && s.token > 0) {
        owners.entry(s.token).or_default().insert(&s.owner);
    }
    owners.values().map(|o| o.len() - 1).sum()
}

/// Believed sections whose token is lower than that of a holding of the key that had
/// already ended (its end write) before they began; a read section only against ended
/// sections that are not reads (readers share a lock: a later reader may end first).
fn backwards(sections: &[&Section]) -> usize {
    backwards_pairs(sections).len()
}

/// The sections of [`backwards`], each with the ended section of the highest token.
fn backwards_pairs<'a>(sections: &[&'a Section]) -> Vec<(&'a Section, &'a Section)> {
    let fenced: Vec<&Section> = sections.iter().copied().filter(|s| s.fenced).collect();
    let mut ends: Vec<(u64, &Section)> = fenced
        .iter()
        .filter_map(|s| Some((s.end?.stamp_us, *s)))
        .collect();
    ends.sort_by_key(|&(end, _)| end);
    let mut begins: Vec<&Section> = fenced.into_iter().filter(|s| s.believed).collect();
    begins.sort_by_key(|s| s.begin.stamp_us);
    // The highest token ended so far: of any section, and of sections other than reads.
    let (mut next, mut highest, mut found) = (0, [None::<&Section>; 2], Vec::new());
    for s in begins {
        while next < ends.len() && ends[next].0 < s.begin.stamp_us {
            let ended = ends[next].1;
            for (i, h) in highest.iter_mut().enumerate() {
                let counts = i == 0 || ended.mode != Mode::Read;
                if counts && h.is_none_or(|h| ended.token > h.token) {
                    *h = Some(ended);
                }
            }
            next += 1;
        }
        let against = highest[usize::from(s.mode == Mode::Read)];
        if let Some(h) = against.filter(|h| s.token < h.token) {
            found.push((h, s));
        }
    }
    found
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "check_rw_tests.rs"]
mod rw_tests;
