//! The checker's counts of what the watchers saw (`watch.rs`): leaked holds and stalls.
//! Pure (no I/O), unit-tested in `check_watch_tests.rs`.
//!
//! - A **leaked hold**: a worker's owner seen holding a key on the servers while no worker
//!   believed it might (not acquiring, holding or releasing it), in consecutive samples
//!   for more than 1 s, outside the span of a fault that cut clients off a server or stopped
//!   it (a grant nobody could be told of, or a release that could not arrive, ends with its
//!   lease: up to 3.5 s after such a fault).
//! - A **stall**: a heartbeat answered more than 250 ms after it was sent, outside the
//!   silent windows of its server (a fault stopped, killed, paused or failed it over on
//!   purpose), not while the resource's own heartbeat (the control) was late too, and not
//!   when the server's main thread and the prober spent half of that time or more waiting
//!   for a CPU (the machine's load).

use std::collections::{BTreeMap, BTreeSet};

use crate::history::{Event, Window};

/// A hold nobody believes in counts once it lasts longer than this.
pub const LEAK_US: u64 = 1_000_000;
/// A fault's window also excuses the lease of a hold made during it (the longest, 3 s).
const LEASE_AFTER_US: u64 = 3_500_000;
/// Beliefs and samples are stamped on different threads: a belief this close counts.
const BELIEF_SLACK_US: u64 = 50_000;
/// A silent window also excuses heartbeats sent just before it and answered after it, and
/// the server's catching up after it.
const SILENT_BEFORE_US: u64 = 100_000;
const SILENT_AFTER_US: u64 = 1_000_000;
/// The control prober's server name.
pub const CONTROL: &str = "resource";

/// A hold that no worker believed in, from the first to the last sample that saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leak {
    pub key: String,
    pub owner: String,
    pub from_us: u64,
    pub to_us: u64,
}

/// The spans during which each (key, owner) was believed possibly held.
fn beliefs(events: &[Event]) -> BTreeMap<(&str, &str), Vec<(u64, u64)>> {
    let mut marks: BTreeMap<(&str, &str), Vec<(u64, bool)>> = BTreeMap::new();
    for e in events {
        if let Event::Belief {
            t_us,
            key,
            owner,
            begin,
        } = e
        {
            marks.entry((key, owner)).or_default().push((*t_us, *begin));
        }
    }
    let mut spans = BTreeMap::new();
    for (at, mut marks) in marks {
        // At one instant, a begin before an end: the belief spans it.
        marks.sort_by_key(|&(t, begin)| (t, !begin));
        let (mut depth, mut from, mut list) = (0i64, 0, Vec::new());
        for (t, begin) in marks {
            if begin && depth == 0 {
                from = t;
            }
            depth += if begin { 1 } else { -1 };
            if !begin && depth == 0 {
                list.push((from, t));
            }
            depth = depth.max(0);
        }
        if depth > 0 {
            // Never ended (a killed child process): believed from then on.
            list.push((from, u64::MAX));
        }
        spans.insert(at, list);
    }
    spans
}

fn intersects((a, b): (u64, u64), (c, d): (u64, u64)) -> bool {
    a <= d && c <= b
}

/// The leaked holds of a history (see the module's text).
pub fn leaked_holds(events: &[Event]) -> Vec<Leak> {
    let excused: Vec<(u64, u64)> = windows(events)
        .map(|w| (w.from_us, w.to_us.saturating_add(LEASE_AFTER_US)))
        .collect();
    let counts = |l: &Leak| {
        let span = (l.from_us, l.to_us);
        span.1.saturating_sub(span.0) > LEAK_US && !excused.iter().any(|&w| intersects(w, span))
    };
    episodes(events).into_iter().filter(counts).collect()
}

/// The samples of a history, in the order they were sent: (sent, answered, key, owners).
fn samples_of(events: &[Event]) -> Vec<(u64, u64, &str, &[String])> {
    let mut samples: Vec<(u64, u64, &str, &[String])> = events
        .iter()
        .filter_map(|e| match e {
            Event::Sample {
                sent_us,
                got_us,
                key,
                owners,
            } => Some((*sent_us, *got_us, key.as_str(), owners.as_slice())),
            _ => None,
        })
        .collect();
    samples.sort_by_key(|s| s.0);
    samples
}

/// Every episode of a judged owner seen holding a key in consecutive samples while no
/// belief touched them: from the first sample's answer to the last sample's send.
fn episodes(events: &[Event]) -> Vec<Leak> {
    let believed = beliefs(events);
    let judged: BTreeSet<&str> = believed.keys().map(|&(_, owner)| owner).collect();
    let unbelieved = |key: &str, owner: &str, (sent, got): (u64, u64)| {
        let span = (sent.saturating_sub(BELIEF_SLACK_US), got + BELIEF_SLACK_US);
        let spans = believed.get(&(key, owner)).map_or(&[][..], Vec::as_slice);
        judged.contains(owner) && !spans.iter().any(|&s| intersects(s, span))
    };
    let leak = |(key, owner): (&str, &str), (from_us, to_us): (u64, u64)| Leak {
        key: key.to_owned(),
        owner: owner.to_owned(),
        from_us,
        to_us,
    };
    let (mut found, mut open) = (Vec::new(), BTreeMap::<(&str, &str), (u64, u64)>::new());
    for (sent, got, key, owners) in samples_of(events) {
        let now: Vec<&str> = owners
            .iter()
            .map(String::as_str)
            .filter(|o| unbelieved(key, o, (sent, got)))
            .collect();
        let ended = |&(k, o): &(&str, &str)| k == key && !now.contains(&o);
        let ended: Vec<(&str, &str)> = open.keys().filter(|at| ended(at)).copied().collect();
        for at in ended {
            found.extend(open.remove(&at).map(|span| leak(at, span)));
        }
        for owner in now {
            open.entry((key, owner)).or_insert((got, sent)).1 = sent;
        }
    }
    found.extend(open.into_iter().map(|(at, span)| leak(at, span)));
    found
}

fn windows(events: &[Event]) -> impl Iterator<Item = &Window> {
    events.iter().filter_map(|e| match e {
        Event::Window(w) => Some(w),
        _ => None,
    })
}

/// The stalls of a history (see the module's text): (server, sent, answered) each.
pub fn stalls(events: &[Event]) -> Vec<(&str, u64, u64)> {
    // (server, sent, answered, whether mostly spent waiting for a CPU: the machine's load)
    let all: Vec<(&str, u64, u64, bool)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Stall {
                server,
                sent_us,
                got_us,
                starved_us,
            } => {
                let busy_machine = starved_us * 2 >= got_us.saturating_sub(*sent_us);
                Some((server.as_str(), *sent_us, *got_us, busy_machine))
            }
            _ => None,
        })
        .collect();
    let control: Vec<(u64, u64)> = all
        .iter()
        .filter(|s| s.0 == CONTROL)
        .map(|&(_, a, b, _)| (a, b))
        .collect();
    let silent: Vec<&Window> = windows(events).filter(|w| w.silent).collect();
    let excused = |&(server, sent, got, busy_machine): &(&str, u64, u64, bool)| {
        let by_fault = silent.iter().any(|w| {
            let span = (
                w.from_us.saturating_sub(SILENT_BEFORE_US),
                w.to_us + SILENT_AFTER_US,
            );
            (w.server == "*" || w.server == server) && intersects(span, (sent, got))
        });
        busy_machine || by_fault || control.iter().any(|&c| intersects(c, (sent, got)))
    };
    all.into_iter()
        .filter(|s| s.0 != CONTROL && !excused(s))
        .map(|(server, sent, got, _)| (server, sent, got))
        .collect()
}

/// One line per leaked hold and stall (for the report).
pub fn describe(events: &[Event]) -> Vec<String> {
    let leaks = leaked_holds(events).into_iter().map(|l| {
        let ms = (l.to_us - l.from_us) / 1000;
        let after = last_fault(events, l.from_us).unwrap_or("no fault");
        format!(
            "leaked hold on {}: owner={} held by no worker's belief for {ms}ms [{}..{}] (after {after})",
            l.key, l.owner, l.from_us, l.to_us
        )
    });
    let stalls = stalls(events).into_iter().map(|(server, sent, got)| {
        let ms = (got - sent) / 1000;
        let after = last_fault(events, sent).unwrap_or("no fault");
        format!("stall on {server}: a PING sent at {sent} answered {ms}ms later (after {after})")
    });
    leaks.chain(stalls).collect()
}

/// The last fault that started before `t_us`.
fn last_fault(events: &[Event], t_us: u64) -> Option<&str> {
    let faults = events.iter().filter_map(|e| match e {
        Event::Fault { t_us: at, what } if *at <= t_us => Some((*at, what.as_str())),
        _ => None,
    });
    faults.max_by_key(|&(at, _)| at).map(|(_, what)| what)
}

#[cfg(test)]
#[path = "check_watch_tests.rs"]
mod tests;
