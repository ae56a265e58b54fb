//! Taking a read-write lock for a command (`RWLOCK.ACQUIRE`, `RWLOCK.WAIT`): lapsed
//! holders go first, then the queue is served before any newcomer, then a newcomer gets a
//! fresh holding through the one door if nobody is queued and its mode fits, or the holder
//! reenters. The command then blocks, queues a ticket, or answers that the lock is taken.
//! Also how a read-write lock's holdings end: a release, a grant nobody took.

use redis_module::raw;

use crate::handoff::door::{self, Attempt};
use crate::handoff::{expiry, rw_serve};
use crate::host::gate;
use crate::host::node;
use crate::store::{entry_of, publish, LockKey, Mode, Name, Over};
use crate::waits::queues;
use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::kind::Family;
use rlock_core::registry::Db;
use rlock_core::rwglance::{self, Quick};
use rlock_core::rwlock::{self, Kind, RwHolder, RwMode, RwRelease, RwState, RwStep, MAX_HOLDERS};

/// Acquires or reenters `mode` of the read-write lock `key_name` for `owner`, with a
/// lease of `lease` ms, if it can now. Most calls decide from a few field lookups; the rest
/// read the whole hash.
pub fn attempt(
    ctx: *mut raw::RedisModuleCtx,
    key_name: *mut raw::RedisModuleString,
    owner: Name<'_>,
    (mode, lease): (RwMode, i64),
) -> Result<Attempt, LockError> {
    let key = LockKey::open(ctx, key_name, Mode::Write)?;
    let db = node::selected_db(ctx);
    let queued = queues::lane_len(db, key.name(), Family::Rw) > 0;
    let glance = key.glance(&owner)?;
    match rwglance::acquire(&glance, owner.bytes, mode, queued, node::now_ms()) {
        Quick::Decided(step) => {
            let taken = Taken {
                others: glance.fields > 0,
                check_at: glance.writer_deadline,
            };
            decide(ctx, (key, db), owner, (mode, lease), (step, taken))
        }
        Quick::Slow => attempt_whole(ctx, (key, db), owner, (mode, lease)),
    }
}

/// [`attempt`] on the whole hash: lapsed holders out, the queue served first.
fn attempt_whole(
    ctx: *mut raw::RedisModuleCtx,
    (key, db): (LockKey, Db),
    owner: Name<'_>,
    (mode, lease): (RwMode, i64),
) -> Result<Attempt, LockError> {
    let (mut state, pruned) = rw_serve::live_state(ctx, &key)?;
    if queues::lane_len(db, key.name(), Family::Rw) > 0 {
        let freed = pruned && state.holders.is_empty();
        if let Some(at) = rw_serve::serve(ctx, db, &key, state, (true, freed))? {
            expiry::arm(ctx, db, key.name(), at);
        }
        state = key.read_rw()?.unwrap_or_default();
    }
    let queued = queues::lane_len(db, key.name(), Family::Rw) > 0;
    let step = rwlock::acquire(&state, owner.bytes, mode, queued);
    let taken = Taken {
        others: !state.holders.is_empty(),
        check_at: state.next_deadline(),
    };
    decide(ctx, (key, db), owner, (mode, lease), (step, taken))
}

/// What the lock was found holding, for [`decide`].
struct Taken {
    /// Someone holds it (a fresh holding is written beside others).
    others: bool,
    /// When to check it again if the caller waits: the first lease to end, if known.
    check_at: Option<i64>,
}

/// Carries out `step` for `owner`.
fn decide(
    ctx: *mut raw::RedisModuleCtx,
    (key, db): (LockKey, Db),
    owner: Name<'_>,
    (mode, lease): (RwMode, i64),
    (step, taken): (RwStep, Taken),
) -> Result<Attempt, LockError> {
    let check_at = taken.check_at;
    match step {
        RwStep::Fresh => match take_free(ctx, &key, owner, (mode, lease), taken.others)? {
            Ok(token) => Ok(Attempt::Held(token)),
            Err(later) => Ok(Attempt::Contended {
                key,
                db,
                held_back: later.or(check_at),
            }),
        },
        RwStep::Reenter {
            reads,
            writes,
            token,
        } => {
            gate::reentries(node::now_ms())?;
            let deadline_ms = node::now_ms().saturating_add(lease);
            let holder = RwHolder {
                owner: owner.bytes.to_vec(),
                reads,
                writes,
                token,
                deadline_ms: Some(deadline_ms),
            };
            key.apply_rw(&entry_of(owner, &holder))?;
            expiry::lease_moved(ctx, key.name(), deadline_ms);
            counters::REENTERED.bump();
            Ok(Attempt::Held(token))
        }
        RwStep::Contended => Ok(Attempt::Contended {
            key,
            db,
            held_back: check_at,
        }),
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
    let over = if others { Over::Other } else { Over::Nothing };
    let taken = door::take_in_command(ctx, key, over, (owner, Kind::Rw(mode), lease_ms))?;
    Ok(taken.map(|(token, deadline_ms)| {
        expiry::lease_moved(ctx, key.name(), deadline_ms);
        rw_serve::count_fresh(mode);
        token
    }))
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
    let glance = key.glance(&owner)?;
    let step = match rwglance::release(&glance, owner.bytes, mode, token, node::now_ms()) {
        Quick::Decided(step) => step,
        Quick::Slow => return release_whole(ctx, key, owner, (mode, token)),
    };
    // A reader leaving a lock others still hold serves nobody: the first queued wait is a
    // writer (a reader would have come in), unless readers were at the limit.
    let near_limit = glance.fields.saturating_sub(2) / 2 + 1 >= MAX_HOLDERS;
    let left = match (step, glance.mine) {
        (RwRelease::NotHeld, _) | (_, None) => return Ok(None),
        (RwRelease::Gone, Some(holder)) => {
            let exists = key.apply_rw(&rw_serve::gone(owner))? && live_left(ctx, key)?;
            changed(ctx, key, exists, holder.writes > 0 || near_limit)?;
            0
        }
        (
            RwRelease::Remaining {
                reads,
                writes,
                left,
            },
            Some(mut holder),
        ) => {
            let downgraded = holder.writes > 0 && writes == 0;
            (holder.reads, holder.writes) = (reads, writes);
            key.apply_rw(&entry_of(owner, &holder))?;
            if downgraded {
                changed(ctx, key, true, true)?;
            }
            left
        }
    };
    counters::RELEASED.bump();
    Ok(Some(left))
}

/// After a release decided at a glance: a lock left with no holder goes to its queue, or is
/// published free; one still held is served from the whole hash when the release may let
/// the first wait in (`may_serve`: a writer left, or readers were at the limit).
fn changed(
    ctx: *mut raw::RedisModuleCtx,
    key: &LockKey,
    exists: bool,
    may_serve: bool,
) -> Result<(), LockError> {
    let queued = queues::queue_len(node::selected_db(ctx), key.name()) > 0;
    match (exists, queued) {
        (false, true) => after_change(ctx, key, RwState::default(), true),
        (false, false) if !node::replayed_in_cluster(ctx) => {
            publish::rw_release_message(ctx, key.name())
        }
        (true, true) if may_serve => {
            let (state, _) = rw_serve::live_state(ctx, key)?;
            after_change(ctx, key, state, true)
        }
        _ => Ok(()),
    }
}

/// Whether a holder whose lease has not ended is left in `key`, after a holder left it.
/// When none is, the lapsed ones are taken out, which deletes the key: a lock nobody holds
/// is free, its release published, its queue served, as when its last holder leaves.
fn live_left(ctx: *mut raw::RedisModuleCtx, key: &LockKey) -> Result<bool, LockError> {
    if key.rw_has_live_holder(node::now_ms())? {
        return Ok(true);
    }
    let (state, _) = rw_serve::live_state(ctx, key)?;
    Ok(!state.holders.is_empty())
}

/// [`release`] on the whole hash, lapsed holders taken out first.
fn release_whole(
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
