//! Deciding from a glance: a semaphore's `permits` and `@used` fields and the asking
//! owner's own two fields are enough for most acquisitions, releases and renewals; the
//! rest (not enough permits free while a lease may have ended, per `@next`) read the whole hash
//! ([`SemState::from_fields`](crate::semaphore::SemState::from_fields)).

pub use crate::rwglance::Quick;
use crate::semaphore::{self, SemHolder, SemRelease, SemState, SemStep, MAX_HOLDERS};

/// A semaphore seen through a few field lookups, for one owner.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SemGlance {
    /// The hash's number of fields (0: no key).
    pub fields: usize,
    /// Its total, when the field is there and well formed.
    pub total: Option<i64>,
    /// The permits held, by every holder (lapsed ones too).
    pub used: i64,
    /// No holder's lease ends before this (Unix ms), when known.
    pub next: Option<i64>,
    /// The asking owner's own holding, if it has one.
    pub mine: Option<SemHolder>,
}

impl SemGlance {
    /// The owner's holding as a one-holder state, when the glance can decide for it:
    /// `Err` when the whole hash must be read (not a semaphore the module wrote, or the
    /// owner's lease ended).
    fn own(&self, now_ms: i64) -> Result<SemState, ()> {
        let total = self.total.ok_or(())?;
        if self.mine.as_ref().is_some_and(|h| h.lapsed(now_ms)) {
            return Err(());
        }
        Ok(SemState {
            total,
            holders: self.mine.iter().cloned().collect(),
        })
    }
}

/// What `owner` asking for `permits` gets, from a glance; `queued`: waits are queued.
pub fn acquire(
    g: &SemGlance,
    owner: &[u8],
    permits: i64,
    queued: bool,
    now_ms: i64,
) -> Quick<SemStep> {
    if g.fields == 0 {
        return Quick::Decided(semaphore::acquire(
            &SemState::default(),
            owner,
            permits,
            queued,
        ));
    }
    let Ok(mut own) = g.own(now_ms) else {
        return Quick::Slow;
    };
    if permits > own.total || queued {
        return Quick::Decided(semaphore::acquire(&own, owner, permits, queued));
    }
    // `permits`, `@used`, `@next` (while anyone holds) and two fields per holder.
    let holders = g.fields.saturating_sub(2) / 2;
    if own.total.saturating_sub(g.used) < permits
        || (own.holders.is_empty() && holders >= MAX_HOLDERS)
    {
        // A lapsed holder may give permits back: only the whole hash tells, unless no
        // lease has ended yet.
        return match g.next {
            Some(next) if next > now_ms => Quick::Decided(SemStep::Contended),
            _ => Quick::Slow,
        };
    }
    // The others' permits, as one holder the owner cannot be.
    let mine = own.holders.first().map_or(0, |h| h.permits);
    own.total = own.total.saturating_sub(g.used.saturating_sub(mine));
    Quick::Decided(semaphore::acquire(&own, owner, permits, false))
}

/// What giving back `permits` (`None`: all) does, from a glance.
pub fn release(
    g: &SemGlance,
    owner: &[u8],
    permits: Option<i64>,
    token: Option<i64>,
    now_ms: i64,
) -> Quick<SemRelease> {
    if g.fields == 0 {
        return Quick::Decided(SemRelease::NotHeld);
    }
    match g.own(now_ms) {
        Ok(own) => Quick::Decided(semaphore::release(&own, owner, permits, token)),
        Err(()) => Quick::Slow,
    }
}

/// The owner's holding to renew (`Some(None)`: it holds nothing), from a glance.
pub fn renewal(g: &SemGlance, token: Option<i64>, now_ms: i64) -> Quick<Option<SemHolder>> {
    if g.fields == 0 {
        return Quick::Decided(None);
    }
    match g.own(now_ms) {
        Ok(own) => Quick::Decided(
            own.holders
                .into_iter()
                .find(|h| token.is_none_or(|t| h.token == t)),
        ),
        Err(()) => Quick::Slow,
    }
}

#[cfg(test)]
#[path = "semglance_tests.rs"]
mod tests;
