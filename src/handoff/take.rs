//! Taking a lock for a command (`LOCK.ACQUIRE`, `LOCK.WAIT`): a lock freed behind the
//! module's back goes to its queue first, a free lock goes through the one door
//! (`door.rs`), and the holder reenters. The command then blocks, queues a ticket, or
//! answers that the lock is taken.

use redis_module::raw;

use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::lock::{self, AcquireStep, Holding};
use rlock_core::registry::Db;
use rlock_core::rwlock::Kind;
use rlock_core::watch::Held;

use crate::handoff::door::{self, Attempt, Handed};
use crate::handoff::{expiry, losses};
use crate::host::gate;
use crate::host::node;
use crate::store::{LockEntry, LockKey, Mode, Name, Over};
use crate::waits::queues;

/// Acquires or reenters the lock `key_name` for `owner` (`owner_bytes` its bytes) with a
/// lease of `lease` ms, if it can now.
pub fn attempt(
    ctx: *mut raw::RedisModuleCtx,
    key_name: *mut raw::RedisModuleString,
    (owner, owner_bytes): (Name<'_>, &[u8]),
    lease: i64,
) -> Result<Attempt, LockError> {
    let key = LockKey::open(ctx, key_name, Mode::Write)?;
    let db = node::selected_db(ctx);
    // With waits queued, the lock is read knowing whom it was last handed to.
    let current = match queues::last_handed(db, key.name()) {
        None => key.read_as(&owner)?,
        Some(hint) => key.read_as_hinted(&owner, &hint)?,
    };
    let current = match current {
        None => serve_queue_first(ctx, db, &key, &owner)?,
        current => current,
    };
    let held_back = match lock::acquire(current.as_ref(), owner_bytes) {
        AcquireStep::Fresh => match take_free(ctx, &key, owner, lease)? {
            Ok(token) => return Ok(Attempt::Held(token)),
            Err(held_back) => held_back,
        },
        AcquireStep::Reenter { count, token } => {
            let deadline = node::now_ms().saturating_add(lease);
            reenter(ctx, &key, owner, count, token, deadline)?;
            return Ok(Attempt::Held(token));
        }
        AcquireStep::Contended => None,
        AcquireStep::CountOverflow => return Err(LockError::CountOverflow),
    };
    Ok(Attempt::Contended { key, db, held_back })
}

/// A free lock: through the one door, its token; or, when the gate holds it back, when to
/// ask again (if the gate said).
fn take_free(
    ctx: *mut raw::RedisModuleCtx,
    key: &LockKey,
    owner: Name<'_>,
    lease_ms: i64,
) -> Result<Result<i64, Option<i64>>, LockError> {
    let taken = door::take_in_command(ctx, key, Over::Nothing, (owner, Kind::Lock, lease_ms))?;
    Ok(taken.map(|(token, deadline_ms)| {
        expiry::lease_moved(ctx, key.name(), deadline_ms);
        token
    }))
}

/// The holder acquires again: count + 1, lease reset, same token (not while the node is
/// held back after a stall, a reentry extends the lease; nor during the failover delay).
fn reenter(
    ctx: *mut raw::RedisModuleCtx,
    key: &LockKey,
    owner: Name<'_>,
    holds: i64,
    token: i64,
    deadline_ms: i64,
) -> Result<(), LockError> {
    gate::reentries(node::now_ms())?;
    let holding = LockEntry {
        owner,
        holds,
        token,
        deadline_ms,
    };
    key.write_holding(&holding, Over::Itself)?;
    expiry::lease_moved(ctx, key.name(), deadline_ms);
    losses::holds(ctx, key.name(), owner.bytes, (Held::Lock, token, holds));
    counters::REENTERED.bump();
    Ok(())
}

/// A lock freed behind the module's back goes to its queue before any newcomer; returns
/// the lock as it is then.
fn serve_queue_first(
    ctx: *mut raw::RedisModuleCtx,
    db: Db,
    key: &LockKey,
    owner: &Name<'_>,
) -> Result<Option<Holding>, LockError> {
    match door::hand_off(ctx, db, key, Over::Nothing, true)? {
        Handed::Nobody | Handed::Gone(None) => Ok(None),
        Handed::NotNow(at) | Handed::Gone(Some(at)) => {
            expiry::arm(ctx, db, key.name(), at);
            Ok(None)
        }
        Handed::To(deadline_ms) => {
            expiry::lease_moved(ctx, key.name(), deadline_ms);
            key.read_as(owner)
        }
    }
}
