//! Judges a history: every waiter got exactly one reply; no token was issued twice; no two
//! holdings of one key overlapped in time, unless both were read holds of a read-write lock. Times are the clients', read conservatively, so
//! that a reported overlap is one the servers really allowed:
//! - a holding starts when its grant reply arrived (the server granted it before);
//! - it lasts at least until the latest `send + lease - 1 ms` of its grant and of every
//!   renewal answered 1 (the server set each lease after its request was sent, from its
//!   clock in whole milliseconds, which can be up to 1 ms behind), cut at the sending
//!   of a release answered 0 (it ended after that), and at the sending of a force release
//!   of its key answered 1 that could have removed it: one whose reply came after the
//!   holding's acquire was sent (the server may have granted it at any time in between,
//!   and its grant reply may come after the force release's).

use std::collections::BTreeMap;

use crate::history::{Event, Op, Outcome};

/// One holding: a fresh grant and what the client knows of its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holding {
    pub key: String,
    pub owner: String,
    pub token: i64,
    /// When its `LOCK.ACQUIRE` was sent.
    pub asked: u64,
    pub start: u64,
    pub end: u64,
    /// A read hold of a read-write lock: other read holds may overlap it.
    pub shared: bool,
}

/// Every problem found in `events`.
pub fn violations(events: &[Event]) -> Vec<String> {
    let mut found = replies(events);
    let holdings = holdings(events);
    found.extend(repeated_tokens(&holdings));
    found.extend(overlaps(&holdings));
    found
}

/// Commands whose reply never came from a live node, or came twice.
fn replies(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter(|e| matches!(e.outcome, Outcome::NoReply | Outcome::Extra(_)))
        .map(|e| format!("reply: {e:?}"))
        .collect()
}

/// Every grant, with its end as the client can bound it.
pub fn holdings(events: &[Event]) -> Vec<Holding> {
    let mut held: Vec<Holding> = Vec::new();
    for e in events {
        if let (Op::Acquire { lease, shared, .. }, Outcome::Int(token)) = (&e.op, &e.outcome) {
            held.push(Holding {
                key: e.key.clone(),
                owner: e.owner.clone(),
                token: *token,
                asked: e.sent,
                start: e.received,
                end: e.sent + ms(*lease),
                shared: *shared,
            });
        }
    }
    for e in events {
        let ends = |h: &Holding| h.key == e.key && h.owner == e.owner;
        match (&e.op, &e.outcome) {
            (Op::Renew { lease }, Outcome::Int(1)) => held
                .iter_mut()
                .filter(|h| ends(h))
                .for_each(|h| h.end = h.end.max(e.sent + ms(*lease))),
            (Op::Release, Outcome::Int(0) | Outcome::Lost | Outcome::NoReply) => held
                .iter_mut()
                .filter(|h| ends(h))
                .for_each(|h| h.end = h.end.min(e.sent)),
            _ => {}
        }
    }
    for e in events {
        if e.op == Op::Force && matches!(e.outcome, Outcome::Int(1) | Outcome::Lost) {
            held.iter_mut()
                .filter(|h| h.key == e.key && h.asked < e.received)
                .for_each(|h| h.end = h.end.min(e.sent));
        }
    }
    held
}

/// A lease in µs, less the 1 ms the server's millisecond clock can lag.
fn ms(n: i64) -> u64 {
    (u64::try_from(n).unwrap_or(0) * 1000).saturating_sub(1000)
}

/// Tokens that two fresh holdings got.
pub fn repeated_tokens(holdings: &[Holding]) -> Vec<String> {
    let mut by_token: BTreeMap<i64, &Holding> = BTreeMap::new();
    let mut found = Vec::new();
    for h in holdings {
        if let Some(first) = by_token.insert(h.token, h) {
            found.push(format!(
                "token {} issued twice: {first:?} and {h:?}",
                h.token
            ));
        }
    }
    found
}

/// Two holdings of one key at the same time, unless both are read holds.
pub fn overlaps(holdings: &[Holding]) -> Vec<String> {
    let mut by_key: BTreeMap<&str, Vec<&Holding>> = BTreeMap::new();
    for h in holdings.iter().filter(|h| h.start < h.end) {
        by_key.entry(&h.key).or_default().push(h);
    }
    let mut found = Vec::new();
    for list in by_key.values_mut() {
        list.sort_by_key(|h| h.start);
        // The holdings not over when the next one starts.
        let mut open: Vec<&Holding> = Vec::new();
        for h in list.iter() {
            open.retain(|b| h.start < b.end);
            for before in open.iter().filter(|b| !(b.shared && h.shared)) {
                found.push(format!("overlap: {before:?} and {h:?}"));
            }
            open.push(h);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(op: Op, owner: &str, sent: u64, received: u64, outcome: Outcome) -> Event {
        let key = "k".to_owned();
        let owner = owner.to_owned();
        Event {
            op,
            key,
            owner,
            sent,
            received,
            outcome,
        }
    }

    fn acquire(owner: &str, sent: u64, received: u64, token: i64) -> Event {
        let op = Op::Acquire {
            lease: 100,
            wait: None,
            shared: false,
        };
        event(op, owner, sent, received, Outcome::Int(token))
    }

    fn read(owner: &str, sent: u64, received: u64, token: i64) -> Event {
        let op = Op::Acquire {
            lease: 100,
            wait: None,
            shared: true,
        };
        event(op, owner, sent, received, Outcome::Int(token))
    }

    #[test]
    fn read_holds_may_overlap_and_a_write_hold_may_not() {
        let reads = [read("a", 0, 1_000, 5), read("b", 2_000, 3_000, 6)];
        assert_eq!(violations(&reads), Vec::<String>::new());
        let mixed = [
            read("a", 0, 1_000, 5),
            read("b", 2_000, 3_000, 6),
            acquire("w", 4_000, 5_000, 7),
        ];
        let found = violations(&mixed);
        assert_eq!(found.len(), 2, "{found:?}");
    }

    #[test]
    fn the_checker_catches_two_holders_and_a_repeated_token() {
        let history = [acquire("a", 0, 1_000, 5), acquire("b", 50_000, 51_000, 5)];
        let found = violations(&history);
        assert!(found.iter().any(|v| v.starts_with("overlap")), "{found:?}");
        assert!(found.iter().any(|v| v.starts_with("token 5")), "{found:?}");
    }

    #[test]
    fn a_release_renewal_or_force_release_bounds_a_holding() {
        let released = [
            acquire("a", 0, 1_000, 5),
            event(Op::Release, "a", 40_000, 41_000, Outcome::Int(0)),
            acquire("b", 45_000, 46_000, 6),
        ];
        assert_eq!(violations(&released), Vec::<String>::new());
        let renewed = [
            acquire("a", 0, 1_000, 5),
            event(
                Op::Renew { lease: 100 },
                "a",
                60_000,
                61_000,
                Outcome::Int(1),
            ),
            acquire("b", 120_000, 121_000, 6),
        ];
        assert_eq!(overlaps(&holdings(&renewed)).len(), 1);
        let forced = [
            acquire("a", 0, 1_000, 5),
            event(Op::Force, "", 30_000, 31_000, Outcome::Int(1)),
            acquire("b", 32_000, 33_000, 6),
        ];
        assert_eq!(violations(&forced), Vec::<String>::new());
        // The force release's reply came before the grant's, yet it removed that holding.
        let crossed = [
            acquire("a", 0, 30_500, 5),
            event(Op::Force, "", 30_000, 30_200, Outcome::Int(1)),
            acquire("b", 30_100, 30_400, 6),
        ];
        assert_eq!(violations(&crossed), Vec::<String>::new());
    }

    #[test]
    fn a_missing_or_second_reply_is_reported() {
        let op = Op::Acquire {
            lease: 100,
            wait: Some(10),
            shared: false,
        };
        let history = [
            event(op.clone(), "a", 0, 9_000_000, Outcome::NoReply),
            event(op, "b", 0, 1, Outcome::Extra("Int(3)".into())),
        ];
        assert_eq!(violations(&history).len(), 2);
    }
}
