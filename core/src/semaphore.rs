//! The semaphore's state machine: a total of permits, and holders (owners) each with the
//! permits it holds, its own token and its own lease. No Redis types.
//!
//! A semaphore is a hash: `permits` → the total, `@used` → the permits held now (the sum
//! over holders, kept up to date so that most commands read a few fields), `<owner>` → the
//! permits that owner holds, `@h:<owner>` → `<token> <lease end in Unix ms>`, and `@next`
//! → no later than the earliest lease end (so that a few fields tell that no lease ended).
//! [`SemState::from_fields`] reads it; [`acquire`] and [`release`] decide what a command
//! does. The queue is served in order without barging: the first wait is served first, and
//! nobody passes it (see [`acquire`]'s `queued`).

use std::collections::HashMap;

use crate::args::strict_i64;
pub use crate::layout::{NEXT_FIELD, TOTAL_FIELD, USED_FIELD};
pub use crate::rwlock::{meta_value, parse_meta, HOLDER_PREFIX};

/// The largest total: 2^31 - 1.
pub const MAX_PERMITS: i64 = i32::MAX as i64;
/// Most holders of one semaphore at once: a newcomer beyond them waits.
pub const MAX_HOLDERS: usize = 1024;
/// Most fields a semaphore's hash has: `permits`, `@used`, `@next` and two per holder.
pub const MAX_FIELDS: usize = 3 + 2 * MAX_HOLDERS;

/// One holder of a semaphore.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SemHolder {
    pub owner: Vec<u8>,
    pub permits: i64,
    pub token: i64,
    /// When its lease ends (Unix ms).
    pub deadline_ms: i64,
}

impl SemHolder {
    /// Whether its lease ended by `now_ms`.
    pub fn lapsed(&self, now_ms: i64) -> bool {
        self.deadline_ms <= now_ms
    }
}

/// A semaphore: its total and its holders.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SemState {
    pub total: i64,
    pub holders: Vec<SemHolder>,
}

/// The hash does not have the shape of a semaphore.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotASemaphore;

impl SemState {
    /// Reads a semaphore from its hash: `permits` (0 to 2^31-1), `@used`, and for each
    /// holder a positive count and an `@h:` field.
    pub fn from_fields<F, V>(fields: &[(F, V)]) -> Result<SemState, NotASemaphore>
    where
        F: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let mut total = None;
        let mut counts: Vec<(&[u8], i64)> = Vec::new();
        let mut metas: HashMap<&[u8], (i64, i64)> = HashMap::new();
        for (field, value) in fields {
            let (field, value) = (field.as_ref(), value.as_ref());
            if field == TOTAL_FIELD {
                let n = strict_i64(value).filter(|n| (0..=MAX_PERMITS).contains(n));
                total = Some(n.ok_or(NotASemaphore)?);
            } else if field == USED_FIELD || field == NEXT_FIELD {
                strict_i64(value).ok_or(NotASemaphore)?;
            } else if let Some(owner) = field.strip_prefix(HOLDER_PREFIX) {
                metas.insert(owner, parse_meta(value).ok_or(NotASemaphore)?);
            } else if field.first() == Some(&b'@') {
                return Err(NotASemaphore);
            } else {
                let count = strict_i64(value).filter(|c| *c > 0).ok_or(NotASemaphore)?;
                counts.push((field, count));
            }
        }
        let total = total.ok_or(NotASemaphore)?;
        if counts.len() != metas.len() || counts.len() > MAX_HOLDERS {
            return Err(NotASemaphore);
        }
        let mut holders = Vec::with_capacity(counts.len());
        for (owner, permits) in counts {
            let (token, deadline_ms) = *metas.get(owner).ok_or(NotASemaphore)?;
            holders.push(SemHolder {
                owner: owner.to_vec(),
                permits,
                token,
                deadline_ms,
            });
        }
        Ok(SemState { total, holders })
    }

    pub fn holder(&self, owner: &[u8]) -> Option<&SemHolder> {
        self.holders.iter().find(|h| h.owner == owner)
    }

    /// The permits held, by every holder.
    pub fn used(&self) -> i64 {
        self.holders.iter().map(|h| h.permits).sum()
    }

    /// The permits free now: the total less those held (below 0 when the total was
    /// lowered under what is held).
    pub fn available(&self) -> i64 {
        self.total - self.used()
    }

    /// The owners whose lease ended by `now_ms`.
    pub fn lapsed(&self, now_ms: i64) -> Vec<Vec<u8>> {
        let lapsed = self.holders.iter().filter(|h| h.lapsed(now_ms));
        lapsed.map(|h| h.owner.clone()).collect()
    }

    /// Takes `owner` out.
    pub fn remove(&mut self, owner: &[u8]) {
        self.holders.retain(|h| h.owner != owner);
    }

    /// Makes `holder` the holding of its owner (added if new).
    pub fn put(&mut self, holder: SemHolder) {
        match self.holders.iter_mut().find(|h| h.owner == holder.owner) {
            Some(h) => *h = holder,
            None => self.holders.push(holder),
        }
    }

    /// The earliest lease end of its holders.
    pub fn next_deadline(&self) -> Option<i64> {
        self.holders.iter().map(|h| h.deadline_ms).min()
    }
}

/// What an acquisition does to a semaphore.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SemStep {
    /// A fresh holding of the owner: a new token.
    Fresh,
    /// The owner holds already: it holds `permits` in all now, same token.
    Reenter { permits: i64, token: i64 },
    /// It must wait.
    Contended,
    /// More permits than the semaphore has: it could never be granted.
    TooMany { total: i64 },
}

/// What `owner` asking for `permits` (≥ 1) gets, the lapsed holders taken out first;
/// `queued`: some wait is queued ahead. Without barging: a newcomer (or a holder adding
/// permits) waits behind a queued wait even when enough permits are free for it.
pub fn acquire(state: &SemState, owner: &[u8], permits: i64, queued: bool) -> SemStep {
    if permits > state.total {
        return SemStep::TooMany { total: state.total };
    }
    if queued || permits > state.available() {
        return SemStep::Contended;
    }
    match state.holder(owner) {
        Some(h) => SemStep::Reenter {
            permits: h.permits.saturating_add(permits),
            token: h.token,
        },
        None if state.holders.len() >= MAX_HOLDERS => SemStep::Contended,
        None => SemStep::Fresh,
    }
}

/// What a release does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SemRelease {
    /// The owner still holds this many permits.
    Remaining(i64),
    /// The owner holds nothing now.
    Gone,
    /// The owner holds fewer permits than that (or none, or with another token).
    NotHeld,
}

/// Gives back `permits` of `owner` (`None`: all it holds), with `token` if given.
pub fn release(
    state: &SemState,
    owner: &[u8],
    permits: Option<i64>,
    token: Option<i64>,
) -> SemRelease {
    let Some(h) = state
        .holder(owner)
        .filter(|h| token.is_none_or(|t| h.token == t))
    else {
        return SemRelease::NotHeld;
    };
    match h.permits - permits.unwrap_or(h.permits) {
        0 => SemRelease::Gone,
        left if left > 0 => SemRelease::Remaining(left),
        _ => SemRelease::NotHeld,
    }
}

#[cfg(test)]
#[path = "semaphore_tests.rs"]
mod tests;
