//! A check of a read-write lock's or a semaphore's waits (`expiry.rs` runs it, and arms
//! the next check at the time returned).

use redis_module::raw;

use crate::handoff::{rw_lease, rw_serve, sem_serve};
use crate::store::LockKey;
use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::registry::Db;

/// A read-write lock's waiters: lapsed holders out (a script-based client's at the end of
/// the key's TTL, when the check is for a lease's end), the queue served. Returns when to
/// check again: the first lease to end. A key that is not a read-write lock keeps them
/// waiting until it is one, or they time out.
pub fn rw(
    ctx: *mut raw::RedisModuleCtx,
    (db, key): (Db, &LockKey),
    lease_end: bool,
) -> Result<Option<i64>, LockError> {
    let Ok((mut state, pruned)) = rw_serve::live_state(ctx, key) else {
        return Ok(None);
    };
    let (ended, ttl_end) = rw_lease::ended_with_ttl(ctx, key, &mut state, lease_end)?;
    let freed = (pruned || ended) && state.holders.is_empty();
    let next = rw_serve::serve(ctx, db, key, state, (false, freed))?;
    Ok(next.into_iter().chain(ttl_end).min())
}

/// A semaphore's waiters: lapsed holders out (their permits back), the queue served.
/// Returns when to check again: the first lease to end. A key that is not a semaphore keeps
/// them waiting until it is one, or they time out.
pub fn sem(
    ctx: *mut raw::RedisModuleCtx,
    (db, key): (Db, &LockKey),
    lease_end: bool,
) -> Result<Option<i64>, LockError> {
    let Ok(state) = sem_serve::live_state(ctx, key) else {
        return Ok(None);
    };
    let before = counters::HANDOFFS.get();
    let next = sem_serve::serve(ctx, db, key, state, false)?;
    if lease_end && counters::HANDOFFS.get() > before {
        counters::EXPIRY_HANDOFFS.bump();
    }
    Ok(next)
}
