//! The holders a script-based client (Redisson) made in a read-write lock have no lease of
//! their own: the key's TTL is their lease. A lock with waiters is checked when that TTL
//! ends, as a holder's own lease is, and the check at its end finds them over: Redis keeps
//! the key through its last millisecond, and its own expiry of the key, which samples keys
//! with a TTL, may come much later.

use redis_module::raw;

use crate::host::ffi::OwnedString;
use crate::host::node;
use crate::store::{LockKey, Name, RwEntry};
use rlock_core::error::LockError;
use rlock_core::rwlock::{RwHolder, RwState};

/// At a lease's end (`lease_end`) with the key's TTL at 0 ms, takes the holders with no
/// lease of their own out of `state` and the key (replicated; the last one deletes the
/// key). Returns whether it took any out, and when the key's TTL ends if such holders are
/// left: the lock is to be checked again then.
pub fn ended_with_ttl(
    ctx: *mut raw::RedisModuleCtx,
    key: &LockKey,
    state: &mut RwState,
    lease_end: bool,
) -> Result<(bool, Option<i64>), LockError> {
    if state.holders.iter().all(RwHolder::native) {
        return Ok((false, None));
    }
    let ttl = key.ttl_ms()?;
    if ttl < 0 {
        // No TTL: they hold until a client's unlock, which the keyspace events tell.
        return Ok((false, None));
    }
    if !lease_end || ttl > 0 {
        return Ok((false, Some(node::now_ms().saturating_add(ttl))));
    }
    let ended: Vec<Vec<u8>> = state
        .holders
        .iter()
        .filter(|h| !h.native())
        .map(|h| h.owner.clone())
        .collect();
    for owner in &ended {
        let name = OwnedString::new(ctx, owner)?;
        key.apply_rw(&RwEntry {
            owner: Name::of(&name),
            reads: 0,
            writes: 0,
            token: 0,
            deadline_ms: 0,
        })?;
        state.remove(owner);
    }
    Ok((true, None))
}
