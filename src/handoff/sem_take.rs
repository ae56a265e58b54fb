//! Taking permits of a semaphore for a command (`SEM.ACQUIRE`, `SEM.WAIT`): the queue is
//! served before any newcomer, then a newcomer gets a fresh holding through the one door if
//! nobody is queued and enough permits are free, or a holder adds permits to its holding.
//! The command then blocks, queues a ticket, or answers that the permits are taken. Also
//! how permits come back: a release, a grant nobody took.

use redis_module::raw;

use crate::handoff::door::{self, Attempt};
use crate::handoff::{expiry, sem_serve};
use crate::host::gate;
use crate::host::node;
use crate::store::{sem_entry, LockKey, Mode, Name, Over};
use crate::waits::queues;
use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::kind::Family;
use rlock_core::registry::Db;
use rlock_core::rwlock::Kind;
use rlock_core::semaphore::{self, SemHolder, SemRelease, SemState, SemStep};
use rlock_core::semglance::{self, Quick};

/// Takes `permits` of the semaphore `key_name` for `owner`, with a lease of `lease` ms, if
/// it can now. Most calls decide from a few field lookups; the rest read the whole hash.
pub fn attempt(
    ctx: *mut raw::RedisModuleCtx,
    key_name: *mut raw::RedisModuleString,
    owner: Name<'_>,
    (permits, lease): (i64, i64),
) -> Result<Attempt, LockError> {
    let key = LockKey::open(ctx, key_name, Mode::Write)?;
    let db = node::selected_db(ctx);
    let queued = queues::lane_len(db, key.name(), Family::Sem) > 0;
    let glance = key.sem_glance(&owner)?;
    let step = match semglance::acquire(&glance, owner.bytes, permits, queued, node::now_ms()) {
        Quick::Decided(step) => (step, glance.next),
        Quick::Slow => {
            let mut state = sem_serve::live_state(ctx, &key)?;
            if queues::lane_len(db, key.name(), Family::Sem) > 0 {
                after_change(ctx, &key, state)?;
                state = key.read_sem()?.unwrap_or_default();
            }
            let queued = queues::lane_len(db, key.name(), Family::Sem) > 0;
            let step = semaphore::acquire(&state, owner.bytes, permits, queued);
            (step, state.next_deadline())
        }
    };
    // A first wait that cannot be granted and leaves (its `WAIT` runs out...) has the
    // queue served again then (`blocked_wait::wait_left`).
    decide(ctx, (key, db), owner, (permits, lease), step)
}

/// Carries out `step` for `owner`; `check_at`: the first lease to end, if known.
fn decide(
    ctx: *mut raw::RedisModuleCtx,
    (key, db): (LockKey, Db),
    owner: Name<'_>,
    (permits, lease): (i64, i64),
    (step, check_at): (SemStep, Option<i64>),
) -> Result<Attempt, LockError> {
    match step {
        SemStep::Fresh => match take_free(ctx, &key, owner, (permits, lease))? {
            Ok(token) => Ok(Attempt::Held(token)),
            Err(later) => Ok(Attempt::Contended {
                key,
                db,
                held_back: later.or(check_at),
            }),
        },
        SemStep::Reenter {
            permits: all,
            token,
        } => {
            gate::reentries(node::now_ms())?;
            let holder = SemHolder {
                owner: owner.bytes.to_vec(),
                permits: all,
                token,
                deadline_ms: node::now_ms().saturating_add(lease),
            };
            key.apply_sem(&sem_entry(owner, &holder))?;
            expiry::lease_moved(ctx, key.name(), holder.deadline_ms);
            counters::REENTERED.bump();
            counters::SEM_PERMITS_GRANTED.add(permits);
            Ok(Attempt::Held(token))
        }
        SemStep::Contended => Ok(Attempt::Contended {
            key,
            db,
            held_back: check_at,
        }),
        SemStep::TooMany { total } => Err(LockError::TooManyPermits {
            asked: permits,
            total,
        }),
    }
}

/// A fresh holding through the one door: its token; or, when the gate holds it back, when
/// to ask again (if the gate said).
fn take_free(
    ctx: *mut raw::RedisModuleCtx,
    key: &LockKey,
    owner: Name<'_>,
    (permits, lease_ms): (i64, i64),
) -> Result<Result<i64, Option<i64>>, LockError> {
    let kind = Kind::Permits(u32::try_from(permits).map_err(|_| LockError::CountOverflow)?);
    let taken = door::take_in_command(ctx, key, Over::Other, (owner, kind, lease_ms))?;
    Ok(taken.map(|(token, deadline_ms)| {
        expiry::lease_moved(ctx, key.name(), deadline_ms);
        sem_serve::count_fresh(permits);
        token
    }))
}

/// Gives back `permits` (`None`: all) of `owner` (with `token`, if given): the permits it
/// still holds, or `None` if it held fewer. The queue is served when its first wait may
/// now be granted.
pub fn release(
    ctx: *mut raw::RedisModuleCtx,
    key: &LockKey,
    owner: Name<'_>,
    (permits, token): (Option<i64>, Option<i64>),
) -> Result<Option<i64>, LockError> {
    let glance = key.sem_glance(&owner)?;
    let now = node::now_ms();
    let step = match semglance::release(&glance, owner.bytes, permits, token, now) {
        Quick::Decided(step) => step,
        Quick::Slow => return release_whole(ctx, key, owner, (permits, token)),
    };
    let (Some(mut holder), Some(total)) = (glance.mine, glance.total) else {
        return Ok(None);
    };
    let before = holder.permits;
    let left = match step {
        SemRelease::NotHeld => return Ok(None),
        SemRelease::Gone => 0,
        SemRelease::Remaining(left) => left,
    };
    holder.permits = left;
    key.apply_sem(&sem_entry(owner, &holder))?;
    counters::RELEASED.bump();
    // The first wait is served when it may fit in what is free now; a lapsed holder's
    // permits come back by the check armed at its lease end.
    let free = total.saturating_sub(glance.used.saturating_sub(before - left));
    let db = node::selected_db(ctx);
    if queues::first(db, key.name(), Family::Sem).is_some_and(|w| fits(w.kind, free)) {
        let state = sem_serve::live_state(ctx, key)?;
        after_change(ctx, key, state)?;
    }
    Ok(Some(left))
}

/// Whether a wait of `kind` may be granted with `free` permits.
fn fits(kind: Kind, free: i64) -> bool {
    match kind {
        Kind::Permits(n) => i64::from(n) <= free,
        _ => false,
    }
}

/// [`release`] on the whole hash, lapsed holders taken out first.
fn release_whole(
    ctx: *mut raw::RedisModuleCtx,
    key: &LockKey,
    owner: Name<'_>,
    (permits, token): (Option<i64>, Option<i64>),
) -> Result<Option<i64>, LockError> {
    let mut state = sem_serve::live_state(ctx, key)?;
    let left = match semaphore::release(&state, owner.bytes, permits, token) {
        SemRelease::NotHeld => None,
        SemRelease::Gone => Some(0),
        SemRelease::Remaining(left) => Some(left),
    };
    if let (Some(left), Some(mut holder)) = (left, state.holder(owner.bytes).cloned()) {
        holder.permits = left;
        key.apply_sem(&sem_entry(owner, &holder))?;
        state.put(holder);
        state.holders.retain(|h| h.permits > 0);
        counters::RELEASED.bump();
    }
    after_change(ctx, key, state)?;
    Ok(left)
}

/// Permits came back or the total changed: serve the queue, and check the semaphore again
/// when its first lease ends.
pub fn after_change(
    ctx: *mut raw::RedisModuleCtx,
    key: &LockKey,
    state: SemState,
) -> Result<(), LockError> {
    let db = node::selected_db(ctx);
    if queues::queue_len(db, key.name()) == 0 {
        return Ok(());
    }
    if let Some(at) = sem_serve::serve(ctx, db, key, state, true)? {
        expiry::arm(ctx, db, key.name(), at);
    }
    Ok(())
}
