//! Turns for script clients: Redisson's `RLock` and other clients that take a lock with a
//! Lua script and wait for its release message. They cannot queue, so a lock whose queue
//! always has a native waiter would never be free for them. A lock with waiters counts the
//! native grants since the scripts' last turn; when the scripts' share is due, the next
//! release frees the lock, publishes it, and holds native grants back for a bounded moment
//! (a reservation), in which a script client can take it.
//!
//! The share: with `natives` queued and `scripts` waiting script clients, a turn is due once
//! `grants × scripts ≥ natives`, so that each script client gets about as many turns as each
//! native waiter. A turn ends when a script client holds the lock, or when its time is up;
//! either way the native waiters come next. Each turn in a row that nobody took doubles the
//! natives' share before the next one (up to 64 times): a subscriber that never takes the
//! lock costs the queue less and less; a script client that takes one starts it over.

use std::collections::HashMap;
use std::hash::Hash;

use super::{Db, Registry};

/// A lock's turns for script clients.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Turns {
    /// Grants to native waiters since the scripts' last turn.
    grants: u64,
    /// When the scripts' running turn ends (Unix ms); 0: none, or it was taken.
    reserved_until: i64,
    /// Turns in a row that no script client took.
    unused: u32,
}

/// The most times the natives' share is doubled after turns nobody took.
const MOST_DOUBLINGS: u32 = 6;

/// Most locks whose turns are kept: past it they are all forgotten at once (a lock then
/// starts counting its natives' share again), so that locks handed on and then left to
/// expire never add up.
pub const MOST_TURNS: usize = 65_536;

/// Whether the scripts' turn is due after `grants` native grants, with `natives` queued
/// waiters and `scripts` waiting script clients, after `unused` turns in a row that nobody
/// took.
pub fn scripts_due(grants: u64, natives: usize, scripts: usize, unused: u32) -> bool {
    let (natives, scripts) = (natives as u64, scripts as u64);
    let share = natives.saturating_mul(1 << unused.min(MOST_DOUBLINGS));
    scripts > 0 && natives > 0 && grants.saturating_mul(scripts) >= share
}

impl<C: Copy + Eq + Hash> Registry<C> {
    /// Whether the scripts' turn on `key` may be due, whatever the number of script
    /// clients: somebody is queued and a native was granted it since their last turn.
    /// Cheap: no need to count the script clients when it says false.
    pub fn scripts_may_be_due(&self, db: Db, key: &[u8]) -> bool {
        self.queue_len(db, key) > 0 && self.turns_of(db, key).grants > 0
    }

    /// Starts the scripts' turn on `key` if it is due with `scripts` waiting script
    /// clients: fresh holdings are held back until `now + hold_ms`, which is returned.
    pub fn start_scripts_turn(
        &mut self,
        db: Db,
        key: &[u8],
        scripts: usize,
        now: i64,
        hold_ms: i64,
    ) -> Option<i64> {
        let natives = self.queue_len(db, key);
        let t = self.turns_of(db, key);
        if hold_ms <= 0 || !scripts_due(t.grants, natives, scripts, t.unused) {
            return None;
        }
        let until = now.saturating_add(hold_ms);
        let turn = Turns {
            grants: 0,
            reserved_until: until,
            unused: t.unused,
        };
        self.turns_mut(db, key).map(|t| *t = turn)?;
        Some(until)
    }

    /// When the scripts' running turn on `key` ends, if one is running at `now`.
    pub fn reserved_until(&self, db: Db, key: &[u8], now: i64) -> Option<i64> {
        let until = self.turns.get(&db)?.get(key)?.reserved_until;
        (until > now).then_some(until)
    }

    /// Someone holds `key`: the scripts' running turn, if any, was taken.
    pub fn end_scripts_turn(&mut self, db: Db, key: &[u8]) {
        if let Some(t) = self.turns.get_mut(&db).and_then(|d| d.get_mut(key)) {
            if t.reserved_until != 0 {
                *t = Turns {
                    reserved_until: 0,
                    unused: 0,
                    ..*t
                };
            }
        }
    }

    /// A native waiter of `key` was granted it: a turn still running was not taken.
    pub fn native_granted(&mut self, db: Db, key: &[u8]) {
        let Some(t) = self.turns_mut(db, key) else {
            return;
        };
        if t.reserved_until != 0 {
            t.reserved_until = 0;
            t.unused = t.unused.saturating_add(1);
        }
        t.grants = t.grants.saturating_add(1);
    }

    /// `key` is free with nobody queued: its turns start again from nothing.
    pub fn forget_turns(&mut self, db: Db, key: &[u8]) {
        if let Some(d) = self.turns.get_mut(&db) {
            d.remove(key);
            if d.is_empty() {
                self.turns.remove(&db);
            }
        }
    }

    /// Locks whose turns are kept now.
    pub fn turns_kept(&self) -> usize {
        self.turns.values().map(HashMap::len).sum()
    }

    fn turns_of(&self, db: Db, key: &[u8]) -> Turns {
        let turns = self.turns.get(&db).and_then(|d| d.get(key));
        turns.copied().unwrap_or_default()
    }

    /// The turns of `key`, made if none are kept (always `Some`).
    fn turns_mut(&mut self, db: Db, key: &[u8]) -> Option<&mut Turns> {
        let known = self.turns.get(&db).is_some_and(|d| d.contains_key(key));
        if !known && self.turns_kept() >= MOST_TURNS {
            self.turns.clear();
        }
        let d = self.turns.entry(db).or_default();
        if !known {
            d.insert(key.to_vec(), Turns::default());
        }
        d.get_mut(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Waiter;

    fn waiter(id: u64) -> Waiter<u64> {
        Waiter {
            id,
            client: id,
            owner: b"o".as_slice().into(),
            lease_ms: 1000,
            deadline_timer: None,
            wait_until: None,
            kind: Default::default(),
        }
    }

    #[test]
    fn a_turn_is_due_once_the_natives_had_their_share() {
        assert!(!scripts_due(0, 4, 4, 0), "right after a turn");
        assert!(
            scripts_due(1, 4, 4, 0),
            "one native grant per script client"
        );
        assert!(
            !scripts_due(3, 8, 2, 0),
            "8 natives, 2 scripts: 4 grants first"
        );
        assert!(scripts_due(4, 8, 2, 0));
        assert!(
            scripts_due(1, 1, 3, 0),
            "more scripts than natives: every other release"
        );
        assert!(!scripts_due(9, 4, 0, 0), "no script client waits");
        assert!(!scripts_due(9, 0, 4, 0), "no native waits");
        assert!(
            scripts_due(u64::MAX, usize::MAX, usize::MAX, 99),
            "no overflow"
        );
        assert!(
            !scripts_due(1, 1, 1, 1),
            "one unused turn: twice the natives' share"
        );
        assert!(scripts_due(2, 1, 1, 1));
        assert!(!scripts_due(63, 1, 1, 40), "at most 64 times");
        assert!(scripts_due(64, 1, 1, 40));
    }

    #[test]
    fn a_turn_holds_native_grants_back_until_it_ends() {
        let mut r: Registry<u64> = Registry::default();
        assert_eq!(r.start_scripts_turn(0, b"k", 2, 100, 50), None, "no queue");
        r.enqueue(0, b"k", waiter(1));
        r.enqueue(0, b"k", waiter(2));
        assert!(!r.scripts_may_be_due(0, b"k"));
        assert_eq!(
            r.start_scripts_turn(0, b"k", 2, 100, 50),
            None,
            "not due yet"
        );
        r.native_granted(0, b"k");
        assert!(r.scripts_may_be_due(0, b"k"));
        assert_eq!(
            r.start_scripts_turn(0, b"k", 2, 100, 0),
            None,
            "turns are off"
        );
        assert_eq!(r.start_scripts_turn(0, b"k", 2, 100, 50), Some(150));
        assert_eq!(r.reserved_until(0, b"k", 149), Some(150));
        assert_eq!(r.reserved_until(0, b"k", 150), None, "over at its end");
        assert!(!r.scripts_may_be_due(0, b"k"), "natives come next");
        r.end_scripts_turn(0, b"k");
        assert_eq!(
            r.reserved_until(0, b"k", 120),
            None,
            "a script client took it"
        );
        assert_eq!(r.reserved_until(1, b"k", 120), None, "another database");
    }

    #[test]
    fn the_natives_share_outlives_a_queue_that_empties_between_grants() {
        let mut r: Registry<u64> = Registry::default();
        r.enqueue(0, b"k", waiter(1));
        r.pop_first(0, b"k", crate::kind::Family::Lock);
        r.native_granted(0, b"k");
        r.enqueue(0, b"k", waiter(2));
        assert_eq!(r.start_scripts_turn(0, b"k", 1, 100, 50), Some(150));
        r.pop_first(0, b"k", crate::kind::Family::Lock);
        assert_eq!(
            r.reserved_until(0, b"k", 120),
            Some(150),
            "the turn outlives it too"
        );
        r.forget_turns(0, b"k");
        assert_eq!(r.reserved_until(0, b"k", 120), None);
        assert_eq!(r.turns_kept(), 0);
    }

    #[test]
    fn turns_nobody_takes_come_more_and_more_rarely_until_one_is_taken() {
        let mut r: Registry<u64> = Registry::default();
        r.enqueue(0, b"k", waiter(1));
        let mut releases_per_turn = Vec::new();
        for _ in 0..3 {
            let mut grants = 0;
            loop {
                r.native_granted(0, b"k");
                grants += 1;
                if r.start_scripts_turn(0, b"k", 1, 100, 50).is_some() {
                    break;
                }
            }
            releases_per_turn.push(grants);
        }
        assert_eq!(
            releases_per_turn,
            [1, 2, 4],
            "each unused turn doubles the share"
        );
        r.end_scripts_turn(0, b"k");
        r.native_granted(0, b"k");
        assert!(
            r.start_scripts_turn(0, b"k", 1, 100, 50).is_some(),
            "taken: over"
        );
    }

    #[test]
    fn the_turns_kept_are_bounded() {
        let mut r: Registry<u64> = Registry::default();
        for i in 0..MOST_TURNS + 10 {
            r.native_granted(0, format!("k{i}").as_bytes());
        }
        assert!(r.turns_kept() <= MOST_TURNS, "{}", r.turns_kept());
    }
}
