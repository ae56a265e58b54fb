//! The checker's rules for semaphores and latches (pure, unit-tested in
//! `check_sem_tests.rs`). A semaphore: at no moment do the permits that workers believed
//! they held exceed its total; a token is never given to two owners; a fresh holding's
//! token is above those of the key's holdings that ended before it was asked. A latch: a
//! waiter released with 1 was not released before the last count-down was sent, and a wait
//! answered 0 lasted its whole `WAIT`.

use std::collections::{BTreeMap, BTreeSet};

use crate::history::Event;
use crate::history_sem::{Latch, SemSpan};

/// Every semaphore's total: the workers set it so (`SEM.PERMITS key 3`) and never change it.
pub const SEM_TOTAL: u64 = 3;
/// A wait answered 0 may end this much before its `WAIT` (the server counts milliseconds).
const TIMER_SLACK_US: u64 = 1000;

/// The semaphores' and latches' counts (the checker adds them to its own).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct SemCounts {
    pub acquisitions: usize,
    pub overlaps: usize,
    pub repeated_tokens: usize,
    pub backwards_tokens: usize,
    pub latch_waits: usize,
    pub latch_early: usize,
}

/// Judges the semaphore spans and latch events of `events`.
pub fn counts(events: &[Event]) -> SemCounts {
    let spans = spans_by_key(events);
    let by_sem = |e: &&Event| matches!(e, Event::Acquire { ok: true, worker, .. } if worker.starts_with(SEM_WORKERS));
    SemCounts {
        acquisitions: events.iter().filter(by_sem).count(),
        overlaps: spans.values().map(|s| over_total(s).len()).sum(),
        repeated_tokens: spans.values().map(|s| repeated(s)).sum(),
        backwards_tokens: spans.values().map(|s| backwards(s).len()).sum(),
        latch_waits: latch_waits(events).count(),
        latch_early: early(events).len(),
    }
}

/// The names of the semaphore workers begin so (their acquisitions are `sem_acquisitions`).
pub const SEM_WORKERS: &str = "sem";

/// One line per semaphore over its permits and token backwards (latch waits: [`early`]).
pub fn describe(events: &[Event]) -> Vec<String> {
    let spans = spans_by_key(events);
    let mut lines = Vec::new();
    for (key, s) in &spans {
        for (at, holders) in over_total(s) {
            lines.push(format!(
                "semaphore over its permits on {key} at {at}: {holders}"
            ));
        }
        for (a, b) in backwards(s) {
            lines.push(format!(
                "token backwards on {key}: {} then {}",
                show(a),
                show(b)
            ));
        }
    }
    lines
}

fn show(s: &SemSpan) -> String {
    let (owner, token, permits) = (&s.owner, s.token, s.permits);
    format!(
        "{owner} token={token} permits={permits} [{}..{}]",
        s.from_us, s.to_us
    )
}

fn spans_by_key(events: &[Event]) -> BTreeMap<&str, Vec<&SemSpan>> {
    let mut by_key: BTreeMap<&str, Vec<&SemSpan>> = BTreeMap::new();
    for e in events {
        if let Event::Sem(s) = e {
            by_key.entry(s.key.as_str()).or_default().push(s);
        }
    }
    by_key
}

/// Each moment (a span's start) at which the spans believed then hold more than the total,
/// with who held what.
fn over_total(spans: &[&SemSpan]) -> Vec<(u64, String)> {
    let mut found = Vec::new();
    for s in spans {
        let at = s.from_us;
        let now: Vec<&&SemSpan> = spans
            .iter()
            .filter(|o| o.from_us <= at && at < o.to_us)
            .collect();
        if now.iter().map(|o| o.permits).sum::<u64>() > SEM_TOTAL {
            let who: Vec<String> = now.iter().map(|o| show(o)).collect();
            found.push((at, who.join(" / ")));
        }
    }
    found
}

/// Tokens that more than one owner was given: one per extra owner.
fn repeated(spans: &[&SemSpan]) -> usize {
    let mut owners: BTreeMap<u64, BTreeSet<&str>> = BTreeMap::new();
    for s in spans {
        owners.entry(s.token).or_default().insert(&s.owner);
    }
    owners.values().map(|o| o.len() - 1).sum()
}

/// Holdings (owner and token) whose token is not above that of a holding that had ended
/// (its last span) before they were asked: (the ended one, the later one).
fn backwards<'a>(spans: &[&'a SemSpan]) -> Vec<(&'a SemSpan, &'a SemSpan)> {
    let mut last: BTreeMap<(&str, u64), &SemSpan> = BTreeMap::new();
    for s in spans {
        let e = last.entry((s.owner.as_str(), s.token)).or_insert(s);
        if s.to_us > e.to_us {
            *e = s;
        }
    }
    let mut found = Vec::new();
    for b in last.values() {
        let ended = last
            .values()
            .filter(|a| a.owner != b.owner && a.to_us < b.sent_us && a.token >= b.token);
        if let Some(a) = ended.max_by_key(|a| a.token) {
            found.push((*a, *b));
        }
    }
    found
}

fn latch_waits(events: &[Event]) -> impl Iterator<Item = &Latch> {
    events.iter().filter_map(|e| match e {
        Event::Latch(w @ Latch::Wait { .. }) => Some(w),
        _ => None,
    })
}

/// The latch waits that broke the rule, one line each.
/// One line per latch wait that ended early (for the report).
pub fn early(events: &[Event]) -> Vec<String> {
    let (mut counts, mut downs) = (BTreeMap::new(), BTreeMap::<&str, Vec<u64>>::new());
    for e in events {
        match e {
            Event::Latch(Latch::Set { key, count }) => _ = counts.insert(key.as_str(), *count),
            Event::Latch(Latch::Down { key, sent_us }) => {
                downs.entry(key.as_str()).or_default().push(*sent_us);
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    for w in latch_waits(events) {
        let Latch::Wait {
            worker,
            key,
            sent_us,
            got_us,
            wait_ms,
            released,
        } = w
        else {
            continue;
        };
        let mut sent = downs.get(key.as_str()).cloned().unwrap_or_default();
        sent.sort_unstable();
        let count = counts.get(key.as_str()).copied().unwrap_or(0) as usize;
        // The count reaches zero only once `count` count-downs were sent.
        let zero_us = if count == 0 {
            Some(0)
        } else {
            sent.get(count - 1).copied()
        };
        let waited = got_us.saturating_sub(*sent_us);
        let what = if *released && zero_us.is_none_or(|z| *got_us < z) {
            let z = zero_us.map_or("never".to_owned(), |z| z.to_string());
            format!("released on {key} at {got_us}; zero at the earliest at {z}")
        } else if !*released && waited + TIMER_SLACK_US < wait_ms * 1000 {
            format!("timed out on {key} after {waited} us, before its WAIT of {wait_ms} ms")
        } else {
            continue;
        };
        found.push(format!(
            "latch wait ended early: {worker} (sent at {sent_us}) {what}"
        ));
    }
    found
}

#[cfg(test)]
#[path = "check_sem_tests.rs"]
mod tests;
