//! Taking a read-write lock for a command (`RWLOCK.ACQUIRE`, `RWLOCK.WAIT`): lapsed
//! holders go first, then the queue is served before any newcomer, then a newcomer gets a
//! fresh holding through the one door if nobody is queued and its mode fits, or the holder
//! reenters. The command then blocks, queues a ticket, or answers that the lock is taken.
//! Also how a read-write lock's holdings end: a release, a grant nobody took.

use redis_module::raw;

use crate::handoff::door::{self, Claim, Door};
use crate::handoff::{expiry, rw_serve};
use crate::host::gate::{self, Verdict};
use crate::host::node;
use crate::store::{entry_of, LockKey, Mode, Name, Over};
use crate::waits::queues;
use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::registry::Db;
use rlock_core::rwlock::{self, Kind, RwHolder, RwMode, RwRelease, RwState, RwStep};

/// What an acquisition found, before any waiting.
pub enum RwAttempt {
    /// Acquired or reentered: the token.
    Held(i64),
    /// It must wait; check the lock again then (the first lease to end, or when the gate
    /// said), if known.
    Contended {
        key: LockKey,
        db: Db,
        check_at: Option<i64>,
    },
}

/// Acquires or reenters `mode` of the read-write lock `key_name` for `owner`, with a
/// lease of `lease` ms, if it can now.
pub fn attempt(
    ctx: *mut raw::RedisModuleCtx,
    key_name: *mut raw::RedisModuleString,
    owner: Name<'_>,
    (mode, lease): (RwMode, i64),
) -> Result<RwAttempt, LockError> {
    let key = LockKey::open(ctx, key_name, Mode::Write)?;
    let db = node::selected_db(ctx);
    let (mut state, pruned) = rw_serve::live_state(ctx, &key)?;
    if queues::queue_len(db, key.name()) > 0 {
        let freed = pruned && state.holders.is_empty();
        if let Some(at) = rw_serve::serve(ctx, db, &key, state, (true, freed))? {
            expiry::arm(ctx, db, key.name(), at);
        }
        state = key.read_rw()?.unwrap_or_default();
    }
    let queued = queues::queue_len(db, key.name()) > 0;
    let check_at = state.next_deadline();
    match rwlock::acquire(&state, owner.bytes, mode, queued) {
        RwStep::Fresh => {
            match take_free(ctx, &key, owner, (mode, lease), !state.holders.is_empty())? {
                Ok(token) => Ok(RwAttempt::Held(token)),
                Err(later) => Ok(RwAttempt::Contended {
                    key,
                    db,
                    check_at: later.or(check_at),
                }),
            }
        }
        RwStep::Reenter {
            reads,
            writes,
            token,
        } => {
            gate::renewals(node::now_ms())?;
            let deadline_ms = node::now_ms().saturating_add(lease);
            let holder = RwHolder {
                owner: owner.bytes.to_vec(),
                reads,
                writes,
                token,
                deadline_ms: Some(deadline_ms),
            };
            key.apply_rw(&entry_of(owner, &holder))?;
            counters::REENTERED.bump();
            Ok(RwAttempt::Held(token))
        }
        RwStep::Contended => Ok(RwAttempt::Contended { key, db, check_at }),
        RwStep::Upgrade => {
            counters::UPGRADES_REFUSED.bump();
            Err(LockError::Upgrade(owner.bytes.to_vec()))
        }
        RwStep::CountOverflow => Err(LockError::CountOverflow),
    }
}

/// A fresh holding through the one door: its token; or, when the gate holds it back, when
/// to ask again (if the gate said).
fn take_free(
    ctx: *mut raw::RedisModuleCtx,
    key: &LockKey,
    owner: Name<'_>,
    (mode, lease_ms): (RwMode, i64),
    others: bool,
) -> Result<Result<i64, Option<i64>>, LockError> {
    let claim = Claim {
        owner,
        lease_ms,
        wait_until: None,
        in_command: true,
        kind: Kind::Rw(mode),
    };
    let over = if others { Over::Other } else { Over::Nothing };
    Ok(match door::fresh_holding(ctx, key, over, &claim)? {
        Door::Held { token, .. } => {
            counters::ACQUIRED.bump();
            rw_serve::count_fresh(mode);
            Ok(token)
        }
        Door::Shut(Verdict::Later(at)) => Err(Some(at)),
        Door::Shut(_) => Err(None),
    })
}

/// Releases one hold of `mode` of `owner` (with `token`, if given): what is left of that
/// mode, or `None` if it held none. A holder's last hold ends its holding; a writer's last
/// write hold lets queued readers join; the queue is served and checked again as needed.
pub fn release(
    ctx: *mut raw::RedisModuleCtx,
    key: &LockKey,
    owner: Name<'_>,
    (mode, token): (RwMode, Option<i64>),
) -> Result<Option<i64>, LockError> {
    let (mut state, pruned) = rw_serve::live_state(ctx, key)?;
    let left = match rwlock::release(&state, owner.bytes, mode, token) {
        RwRelease::NotHeld => {
            after_change(ctx, key, state, pruned)?;
            return Ok(None);
        }
        RwRelease::Gone => {
            key.apply_rw(&rw_serve::gone(owner))?;
            state.remove(owner.bytes);
            0
        }
        RwRelease::Remaining {
            reads,
            writes,
            left,
        } => {
            let Some(mut holder) = state.holder(owner.bytes).cloned() else {
                return Ok(None);
            };
            (holder.reads, holder.writes) = (reads, writes);
            key.apply_rw(&entry_of(owner, &holder))?;
            state.put(holder);
            left
        }
    };
    counters::RELEASED.bump();
    after_change(ctx, key, state, true)?;
    Ok(Some(left))
}

/// Holders left or changed: serve the queue, publish the release if the lock is free and
/// nobody took it, and check the lock again when its first lease ends.
pub fn after_change(
    ctx: *mut raw::RedisModuleCtx,
    key: &LockKey,
    state: RwState,
    changed: bool,
) -> Result<(), LockError> {
    let db = node::selected_db(ctx);
    let freed = changed && state.holders.is_empty();
    if let Some(at) = rw_serve::serve(ctx, db, key, state, (true, freed))? {
        expiry::arm(ctx, db, key.name(), at);
    }
    Ok(())
}
