//! The read-write lock's state machine: many readers or one writer, each holder (owner)
//! with its read and write holds counted, its own token and its own lease. No Redis types.
//!
//! The lock is a hash in Redisson's `RReadWriteLock` layout: `mode`, one field `<owner>`
//! per reader with its read count, `<owner>:write` with the writer's write count; the module
//! adds `@h:<owner>` → `<token> <lease deadline in Unix ms>` for each holder it made. A
//! holder without that field was made by a script-based client (Redisson): token 0, and its
//! lease is the key's TTL. [`RwState::from_fields`] reads the layout; [`acquire`] and
//! [`release`] decide what a command does.

use std::collections::HashMap;

use crate::args::strict_i64;

pub use crate::layout::{HOLDER_PREFIX, MODE_FIELD, WRITER_FIELD, WRITE_SUFFIX};

/// What the module writes in `mode`: to a Redisson client the lock is held by someone
/// else, exclusively, whatever rlock's holders hold (so it never joins them).
pub const MODE_VALUE: &[u8] = b"write";
/// Most holders of one read-write lock at once: a reader beyond them waits.
pub const MAX_HOLDERS: usize = 1024;
/// Most fields a read-write lock's hash has: `mode`, `@w` and three per holder.
pub const MAX_FIELDS: usize = 2 + 3 * MAX_HOLDERS;

pub use crate::kind::{Kind, RwMode};

/// One holder of a read-write lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RwHolder {
    pub owner: Vec<u8>,
    pub reads: i64,
    pub writes: i64,
    /// 0 for a holder a script-based client made.
    pub token: i64,
    /// When its lease ends (Unix ms); `None` for a script-based client's holder (the key's
    /// TTL is its lease).
    pub deadline_ms: Option<i64>,
}

impl RwHolder {
    /// Whether its lease ended by `now_ms`.
    pub fn lapsed(&self, now_ms: i64) -> bool {
        self.deadline_ms.is_some_and(|d| d <= now_ms)
    }

    /// Made by the module (it has a token and a lease of its own).
    pub fn native(&self) -> bool {
        self.deadline_ms.is_some()
    }
}

/// The holders of a read-write lock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RwState {
    pub holders: Vec<RwHolder>,
}

/// The hash does not have the shape of a read-write lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotARwLock;

impl RwState {
    /// Reads a read-write lock from its hash: a `mode` field (`read` or `write`), count
    /// fields (positive integers), and `@h:` fields for holders with counts.
    pub fn from_fields<F, V>(fields: &[(F, V)]) -> Result<RwState, NotARwLock>
    where
        F: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let mut holders: Vec<RwHolder> = Vec::new();
        // Where each owner is in `holders`: one lookup per field, not a search.
        let mut at: HashMap<&[u8], usize> = HashMap::new();
        let mut mode = false;
        let mut metas: Vec<(&[u8], i64, i64)> = Vec::new();
        for (field, value) in fields {
            let (field, value) = (field.as_ref(), value.as_ref());
            if field == MODE_FIELD {
                mode = matches!(value, b"read" | b"write");
            } else if field == WRITER_FIELD {
                continue;
            } else if let Some(owner) = field.strip_prefix(HOLDER_PREFIX) {
                let (token, deadline) = parse_meta(value).ok_or(NotARwLock)?;
                metas.push((owner, token, deadline));
            } else if field.first() == Some(&b'@') {
                return Err(NotARwLock);
            } else {
                let count = strict_i64(value).filter(|c| *c > 0).ok_or(NotARwLock)?;
                let (owner, write) = match field.strip_suffix(WRITE_SUFFIX) {
                    Some(owner) => (owner, true),
                    None => (field, false),
                };
                let i = *at.entry(owner).or_insert_with(|| {
                    holders.push(RwHolder {
                        owner: owner.to_vec(),
                        reads: 0,
                        writes: 0,
                        token: 0,
                        deadline_ms: None,
                    });
                    holders.len() - 1
                });
                let holder = &mut holders[i];
                if write {
                    holder.writes = count;
                } else {
                    holder.reads = count;
                }
            }
        }
        if !mode || holders.len() > MAX_HOLDERS {
            return Err(NotARwLock);
        }
        for (owner, token, deadline) in metas {
            let i = *at.get(owner).ok_or(NotARwLock)?;
            (holders[i].token, holders[i].deadline_ms) = (token, Some(deadline));
        }
        Ok(RwState { holders })
    }

    fn find_mut(&mut self, owner: &[u8]) -> Option<&mut RwHolder> {
        self.holders.iter_mut().find(|h| h.owner == owner)
    }

    pub fn holder(&self, owner: &[u8]) -> Option<&RwHolder> {
        self.holders.iter().find(|h| h.owner == owner)
    }

    /// The writer, if one holds.
    pub fn writer(&self) -> Option<&RwHolder> {
        self.holders.iter().find(|h| h.writes > 0)
    }

    /// The owners whose lease ended by `now_ms`.
    pub fn lapsed(&self, now_ms: i64) -> Vec<Vec<u8>> {
        self.holders
            .iter()
            .filter(|h| h.lapsed(now_ms))
            .map(|h| h.owner.clone())
            .collect()
    }

    /// Takes `owner` out (its lease ended, or its last hold went).
    pub fn remove(&mut self, owner: &[u8]) {
        self.holders.retain(|h| h.owner != owner);
    }

    /// Makes `holder` the holding of its owner (added if new).
    pub fn put(&mut self, holder: RwHolder) {
        match self.find_mut(&holder.owner) {
            Some(h) => *h = holder,
            None => self.holders.push(holder),
        }
    }

    /// The earliest lease deadline of its module-made holders.
    pub fn next_deadline(&self) -> Option<i64> {
        self.holders.iter().filter_map(|h| h.deadline_ms).min()
    }

    /// `read` when nobody holds write holds, else `write`.
    pub fn mode(&self) -> RwMode {
        match self.writer() {
            Some(_) => RwMode::Write,
            None => RwMode::Read,
        }
    }
}

/// `<token> <deadline>` of an `@h:` field.
pub fn parse_meta(value: &[u8]) -> Option<(i64, i64)> {
    let space = value.iter().position(|b| *b == b' ')?;
    let token = strict_i64(&value[..space]).filter(|t| *t >= 0)?;
    let deadline = strict_i64(&value[space + 1..])?;
    Some((token, deadline))
}

/// The value of an `@h:` field.
pub fn meta_value(token: i64, deadline_ms: i64) -> Vec<u8> {
    format!("{token} {deadline_ms}").into_bytes()
}

/// What an acquisition does to a read-write lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwStep {
    /// A fresh holding of the owner: a new token, the counts of `mode` at 1.
    Fresh,
    /// The owner holds already: its counts become these, its token stays.
    Reenter { reads: i64, writes: i64, token: i64 },
    /// It must wait.
    Contended,
    /// The owner holds read holds only and asks for a write hold.
    Upgrade,
    /// A count would overflow.
    CountOverflow,
}

/// What `owner` asking for `mode` gets, the lapsed holders taken out first; `queued`: some
/// wait is queued ahead (a newcomer does not overtake it).
pub fn acquire(state: &RwState, owner: &[u8], mode: RwMode, queued: bool) -> RwStep {
    if let Some(h) = state.holder(owner) {
        let (reads, writes) = match mode {
            RwMode::Read => (h.reads.checked_add(1), Some(h.writes)),
            RwMode::Write if h.writes == 0 => return RwStep::Upgrade,
            RwMode::Write => (Some(h.reads), h.writes.checked_add(1)),
        };
        return match (reads, writes) {
            (Some(reads), Some(writes)) => RwStep::Reenter {
                reads,
                writes,
                token: h.token,
            },
            _ => RwStep::CountOverflow,
        };
    }
    let free = match mode {
        RwMode::Read => state.writer().is_none() && state.holders.len() < MAX_HOLDERS,
        RwMode::Write => state.holders.is_empty(),
    };
    // A script-based client's holders share nothing with rlock's: its unlock deletes a
    // hash whose other readers have no timeout keys of its own kind.
    let foreign = state.holders.iter().any(|h| !h.native());
    if free && !queued && !foreign {
        RwStep::Fresh
    } else {
        RwStep::Contended
    }
}

/// What releasing one hold of `mode` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwRelease {
    /// The owner keeps a holding with these counts; `left` holds of `mode` remain.
    Remaining { reads: i64, writes: i64, left: i64 },
    /// That was the owner's last hold: it holds nothing now.
    Gone,
    /// The owner has no hold of `mode` (with that token, when given).
    NotHeld,
}

pub fn release(state: &RwState, owner: &[u8], mode: RwMode, token: Option<i64>) -> RwRelease {
    let Some(h) = state
        .holder(owner)
        .filter(|h| token.is_none_or(|t| h.token == t))
    else {
        return RwRelease::NotHeld;
    };
    let (reads, writes) = match mode {
        RwMode::Read if h.reads > 0 => (h.reads - 1, h.writes),
        RwMode::Write if h.writes > 0 => (h.reads, h.writes - 1),
        _ => return RwRelease::NotHeld,
    };
    if reads == 0 && writes == 0 {
        return RwRelease::Gone;
    }
    let left = match mode {
        RwMode::Read => reads,
        RwMode::Write => writes,
    };
    RwRelease::Remaining {
        reads,
        writes,
        left,
    }
}

#[cfg(test)]
#[path = "rwlock_tests.rs"]
mod tests;
