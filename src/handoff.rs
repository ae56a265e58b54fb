//! Handing a lock on (SPEC.md §3): when a holding ends, the first queued client gets the
//! lock within the same command or timer, or, when nobody waits, the key is deleted and the
//! release message published (§4).
//!
//! Whoever hands a lock on tells the lease timers (`expiry.rs`) about the new deadline, so
//! that the next waiter is served when this lease ends.

use redis_module::raw;

use crate::error::LockError;
use crate::ffi::OwnedString;
use crate::node;
use crate::reply::Outcome;
use crate::store::{LockEntry, LockKey, Name, Over, Replicate};
use crate::token::{self, TOKENS};
use crate::waiters::{self, handle_of};
use crate::{blocked, counters, publish, registry};

/// Hands the lock to the first waiter, if any: writes its holding (count 1, its lease, a
/// fresh token) over what the key holds, replicates it, and unblocks it with the token.
/// Returns when the new holder's lease ends (Unix ms).
pub fn hand_off(
    ctx: *mut raw::RedisModuleCtx,
    db: registry::Db,
    key: &LockKey,
    over: Over,
) -> Result<Option<i64>, LockError> {
    if !waiters::any() {
        return Ok(None);
    }
    let Some(waiter) = waiters::pop_first(db, key.name()) else {
        return Ok(None);
    };
    let Ok(token) = TOKENS.issue(token::now_us()) else {
        let refused = LockError::TokensExhausted.to_string();
        blocked::refuse(ctx, vec![waiter], &refused);
        return Err(LockError::TokensExhausted);
    };
    blocked::stop_deadline(ctx, waiter.deadline_timer);
    let deadline_ms = node::now_ms().saturating_add(waiter.lease_ms);
    let owner = OwnedString::new(ctx, &waiter.owner)?;
    let holding = LockEntry {
        owner: Name::of(&owner),
        holds: 1,
        token,
        deadline_ms,
    };
    key.write_holding(&holding, over)?;
    let bc = handle_of(waiter.client);
    let grant = registry::Grant {
        db,
        key: key.name().to_vec(),
        owner: waiter.owner,
        token,
    };
    waiters::record_grant(bc, grant);
    blocked::unblock(bc, Outcome::Granted(token))?;
    counters::HANDOFFS.bump();
    Ok(Some(deadline_ms))
}

/// The last hold of the lock in `key` is gone (the key still holds it): hand the lock to
/// the first waiter, or delete it, replicated as `how` says, and publish the release.
pub fn end_holding(
    ctx: *mut raw::RedisModuleCtx,
    key: &LockKey,
    how: Replicate,
) -> Result<Option<i64>, LockError> {
    // A release replayed from the master deletes, as it did there; a (writable) replica's
    // own waiters are not its master's.
    let handed = if waiters::any() && !node::from_replication(ctx) {
        hand_off(ctx, node::selected_db(ctx), key, Over::Other)?
    } else {
        None
    };
    if handed.is_none() {
        key.delete(how)?;
        // In a cluster the master's message already reached every node (or, sharded, every
        // node of the shard): a replica that replays the release does not send it again.
        if !node::replayed_in_cluster(ctx) {
            publish::release_message(ctx, key.name())?;
        }
    }
    Ok(handed)
}
