//! Deciding from a glance: what a few field lookups tell of a read-write lock the module
//! wrote (its `@w` mark, the asking owner's own fields, the writer's lease) is enough for
//! most acquisitions, releases and renewals; the rest read the whole hash
//! ([`RwState::from_fields`](crate::rwlock::RwState::from_fields)).

use crate::rwlock::{self, RwHolder, RwMode, RwRelease, RwState, RwStep, MAX_HOLDERS};

/// A read-write lock seen through a few field lookups, for one owner.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Glance {
    /// The hash's number of fields (0: no key).
    pub fields: usize,
    /// It has the module's `@w` mark.
    pub marked: bool,
    /// The writer (the `@w` value), when one holds.
    pub writer: Option<Vec<u8>>,
    /// The writer's lease end, when it was looked up.
    pub writer_deadline: Option<i64>,
    /// The asking owner's own holding, if it has one.
    pub mine: Option<RwHolder>,
}

/// The glance decides, or the whole hash must be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quick<T> {
    Decided(T),
    Slow,
}

impl Glance {
    /// The owner's holding, when it has one whose lease has not ended; `Err` when it has
    /// one whose lease ended (the whole hash is then read, to take it out).
    fn live_mine(&self, now_ms: i64) -> Result<Option<&RwHolder>, ()> {
        match &self.mine {
            Some(h) if h.lapsed(now_ms) => Err(()),
            mine => Ok(mine.as_ref()),
        }
    }
}

/// What `owner` asking for `mode` gets, from a glance; `queued`: waits are queued.
pub fn acquire(g: &Glance, owner: &[u8], mode: RwMode, queued: bool, now_ms: i64) -> Quick<RwStep> {
    if g.fields == 0 {
        return Quick::Decided(rwlock::acquire(&RwState::default(), owner, mode, queued));
    }
    if !g.marked {
        return Quick::Slow;
    }
    match g.live_mine(now_ms) {
        Err(()) => return Quick::Slow,
        Ok(Some(mine)) => {
            let state = RwState {
                holders: vec![mine.clone()],
            };
            return Quick::Decided(rwlock::acquire(&state, owner, mode, queued));
        }
        Ok(None) => {}
    }
    if queued {
        return Quick::Decided(RwStep::Contended);
    }
    match (mode, &g.writer) {
        (RwMode::Read, Some(_)) => match g.writer_deadline {
            Some(deadline) if deadline > now_ms => Quick::Decided(RwStep::Contended),
            _ => Quick::Slow,
        },
        // At most (fields - 2) / 2 holders: each has a count and an `@h:` field.
        (RwMode::Read, None) if g.fields.saturating_sub(2) / 2 < MAX_HOLDERS => {
            Quick::Decided(RwStep::Fresh)
        }
        _ => Quick::Slow,
    }
}

/// What releasing one hold of `mode` does, from a glance.
pub fn release(
    g: &Glance,
    owner: &[u8],
    mode: RwMode,
    token: Option<i64>,
    now_ms: i64,
) -> Quick<RwRelease> {
    if !g.marked {
        return Quick::Slow;
    }
    match g.live_mine(now_ms) {
        Err(()) => Quick::Slow,
        Ok(None) => Quick::Decided(RwRelease::NotHeld),
        Ok(Some(mine)) => {
            let state = RwState {
                holders: vec![mine.clone()],
            };
            Quick::Decided(rwlock::release(&state, owner, mode, token))
        }
    }
}

/// The owner's holding to renew (`Some(None)`: it holds nothing), from a glance.
pub fn renewal(g: &Glance, token: Option<i64>, now_ms: i64) -> Quick<Option<RwHolder>> {
    if !g.marked && g.fields > 0 {
        return Quick::Slow;
    }
    match g.live_mine(now_ms) {
        Err(()) => Quick::Slow,
        Ok(mine) => Quick::Decided(mine.filter(|h| token.is_none_or(|t| h.token == t)).cloned()),
    }
}

#[cfg(test)]
#[path = "rwglance_tests.rs"]
mod tests;
