//! A client's wait for a lock: queued in FIFO order until a handoff, its `WAIT` limit or its
//! disconnection takes it out (SPEC.md §3). A client handed the lock that disconnects before
//! its reply gives the hold back.

use std::ffi::c_void;

use redis_module::raw;

use crate::handoff::door::Attempt;
use crate::handoff::{door, expiry, rw_take, sem_take};
use crate::host::ffi::OwnedString;
use crate::host::gate::{self, Verdict};
use crate::host::{config, guard, node};
use crate::store::{LockKey, Mode, Name, Over, Replicate};
use crate::waits::queues::{self, handle_of, id_of, Bc, Waiter};
use crate::waits::{blocked, tickets};
use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::lock::{self, ReleaseStep};
use rlock_core::registry::{Db, Grant};
use rlock_core::reply::Reply;
use rlock_core::rwlock::Kind;

/// Blocks the calling client in the queue of `key` for at most `wait_ms` (0: no limit); it
/// will hold the lock with a lease of `lease_ms`. `held_back`: the gate holds a free lock
/// back until then (the failover delay, a stall...), when a check serves the queue.
pub fn wait(
    ctx: *mut raw::RedisModuleCtx,
    db: Db,
    key: &LockKey,
    (owner, kind): (&[u8], Kind),
    (lease_ms, wait_ms): (i64, i64),
    held_back: Option<i64>,
) -> Result<(), LockError> {
    admit(db, key.name())?;
    let blocked = blocked::block(ctx, forget_disconnected)?;
    let client = id_of(blocked.bc);
    let deadline_timer = blocked::arm_deadline(ctx, blocked.id, client, wait_ms, wait_expired)?;
    let now = node::now_ms();
    let waiter = Waiter {
        id: blocked.id,
        client,
        owner: owner.into(),
        lease_ms,
        deadline_timer,
        wait_until: (wait_ms > 0).then(|| now.saturating_add(wait_ms)),
        kind,
    };
    queues::enqueue(db, key.name(), waiter);
    // The client is blocked now: whatever happens next, the command's reply is sent later.
    watch(ctx, db, key, now, held_back);
    Ok(())
}

/// The reply of an acquisition (`LOCK.ACQUIRE`, `RWLOCK.ACQUIRE`, `SEM.ACQUIRE`) after its
/// attempt: the token; or, the lock taken, the client blocked in the queue for `wait` ms
/// when it asked to wait and can block (not inside MULTI/EXEC or a script, where WAIT acts
/// as no WAIT), else nil at once.
pub fn reply_or_wait(
    ctx: *mut raw::RedisModuleCtx,
    attempt: Attempt,
    owner: (&[u8], Kind),
    (lease_ms, wait_ms): (i64, Option<i64>),
) -> Result<Reply, LockError> {
    let (key, db, held_back) = match attempt {
        Attempt::Held(token) => return Ok(Reply::Integer(token)),
        Attempt::Contended { key, db, held_back } => (key, db, held_back),
    };
    match wait_ms {
        Some(wait) if node::can_block(ctx) => {
            self::wait(ctx, db, &key, owner, (lease_ms, wait), held_back)?;
            Ok(Reply::Sent)
        }
        _ => {
            counters::CONTENDED.bump();
            Ok(Reply::Nil)
        }
    }
}

/// A wait was queued on `key`: a lock without a lease is checked on events only; one with
/// a lease when it ends; a free one held back by the gate when the gate said to ask again
/// (for a read-write lock: when its first holder's lease ends), whichever comes first.
pub fn watch(
    ctx: *mut raw::RedisModuleCtx,
    db: Db,
    key: &LockKey,
    now: i64,
    held_back: Option<i64>,
) {
    let lease_end = match key.ttl_ms() {
        Ok(ttl @ 0..) => Some(now.saturating_add(ttl)),
        _ => None,
    };
    if let Some(at) = lease_end.into_iter().chain(held_back).min() {
        expiry::arm(ctx, db, key.name(), at);
    }
}

/// Refuses a new waiter past `rlock.max-waiters` (on the node: queued waits and outcomes
/// unread in mailboxes) or `rlock.max-waiters-per-key` (on this lock); 0 means no limit.
pub fn admit(db: Db, key: &[u8]) -> Result<(), LockError> {
    let (total, per_key) = (config::max_waiters(), config::max_waiters_per_key());
    let held = || queues::count().saturating_add(tickets::unread());
    if total > 0 && held() >= usize::try_from(total).unwrap_or(usize::MAX) {
        return Err(LockError::TooManyWaiters(total));
    }
    if per_key > 0 && queues::queue_len(db, key) >= usize::try_from(per_key).unwrap_or(usize::MAX) {
        return Err(LockError::TooManyWaitersForKey(per_key));
    }
    Ok(())
}

/// A wait of `kind` left the queue of `key` without the lock (its `WAIT` ran out, it was
/// cancelled, its client or its receiver went): if it may have kept the waits behind it
/// out, a check serves them at once.
pub fn wait_left(ctx: *mut raw::RedisModuleCtx, (db, key): (Db, &[u8]), kind: Kind) {
    if kind.holds_back_others() && queues::queue_len(db, key) > 0 {
        expiry::arm(ctx, db, key, node::now_ms());
    }
}

extern "C" fn wait_expired(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    // The timer hands back the box made in `arm_deadline`; it is ours to free.
    let deadline = unsafe { Box::from_raw(data.cast::<blocked::Deadline>()) };
    node::timer_fired();
    guard::callback("wait deadline", || {
        // Still queued: nobody handed it the lock, so its WAIT ran out.
        let location = queues::location_of(deadline.client);
        if let Some(waiter) = queues::take_entry(deadline.client, Some(deadline.id)) {
            blocked::unblock(handle_of(deadline.client), blocked::timed_out(waiter.kind))?;
            counters::WAIT_TIMEOUTS.bump();
            if let Some((db, key)) = location {
                wait_left(ctx, (db, &key), waiter.kind);
            }
        }
        Ok(())
    });
}

unsafe extern "C" fn forget_disconnected(ctx: *mut raw::RedisModuleCtx, bc: Bc) {
    guard::callback("waiter disconnected", || {
        let location = queues::location_of(id_of(bc));
        if let Some(waiter) = queues::take(bc, None) {
            blocked::stop_deadline(ctx, waiter.deadline_timer);
            blocked::release_handle(bc)?;
            if let Some((db, key)) = location {
                wait_left(ctx, (db, &key), waiter.kind);
            }
        } else if let Some(grant) = queues::take_grant(bc) {
            // Handed the lock, but gone before its reply: nobody will ever know it holds
            // it. Take the hold back once this callback is over.
            schedule_revoke(ctx, grant, 0)?;
        }
        Ok(())
    });
}

/// Takes back the hold of an undelivered grant in a timer, `delay_ms` from now (never from
/// inside a callback that may not write).
pub fn schedule_revoke(
    ctx: *mut raw::RedisModuleCtx,
    grant: Grant,
    delay_ms: i64,
) -> Result<(), LockError> {
    let data = Box::into_raw(Box::new(grant));
    if node::create_timer(ctx, delay_ms, revoke, data.cast::<c_void>()).is_none() {
        // Never armed: the box is still ours.
        drop(unsafe { Box::from_raw(data) });
        return Err(LockError::MissingApi("RedisModule_CreateTimer"));
    }
    Ok(())
}

extern "C" fn revoke(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    // The timer hands back the box made in `schedule_revoke`.
    let grant = unsafe { Box::from_raw(data.cast::<Grant>()) };
    node::timer_fired();
    guard::callback("revoking an undelivered grant", || {
        match gate::writes(ctx) {
            Verdict::Later(at) => {
                let delay = at.saturating_sub(node::now_ms());
                schedule_revoke(ctx, *grant, delay)
            }
            // A replica takes its master's word on the lock: the lease ends it there.
            Verdict::Refuse(_) => Ok(()),
            Verdict::Go | Verdict::Expired => revoke_grant(ctx, &grant),
        }
    });
}

/// Gives back the hold of an undelivered grant, if the lock still is that holding.
fn revoke_grant(ctx: *mut raw::RedisModuleCtx, grant: &Grant) -> Result<(), LockError> {
    node::select_db(ctx, grant.db);
    let name = OwnedString::new(ctx, &grant.key)?;
    let key = LockKey::open(ctx, name.0, Mode::Write)?;
    let owner = OwnedString::new(ctx, &grant.owner)?;
    let token = Some(grant.token);
    let revoked = match grant.kind {
        Kind::Lock => return revoke_lock(ctx, grant, &key),
        Kind::Rw(mode) => rw_take::release(ctx, &key, Name::of(&owner), (mode, token))?,
        // A latch's release holds nothing: nothing to take back.
        Kind::Latch => None,
        Kind::Permits(n) => {
            let permits = Some(i64::from(n));
            sem_take::release(ctx, &key, Name::of(&owner), (permits, token))?
        }
    };
    if revoked.is_some() {
        counters::REVOKED_GRANTS.bump();
    }
    Ok(())
}

/// Gives back the hold of an undelivered grant of a plain lock.
fn revoke_lock(
    ctx: *mut raw::RedisModuleCtx,
    grant: &Grant,
    key: &LockKey,
) -> Result<(), LockError> {
    let Ok(Some(holding)) = key.read() else {
        return Ok(());
    };
    if holding.token != grant.token {
        return Ok(());
    }
    match lock::release(Some(&holding), &grant.owner) {
        ReleaseStep::Remaining(count) => {
            let owner = OwnedString::new(ctx, &grant.owner)?;
            key.write_count(&Name::of(&owner), count)?;
        }
        ReleaseStep::Freed => {
            let handed =
                door::end_holding(ctx, key, (Replicate::ForceRelease, Over::Other), false)?;
            expiry::handed(ctx, key.name(), handed);
        }
        ReleaseStep::NotHeld => return Ok(()),
    }
    counters::REVOKED_GRANTS.bump();
    Ok(())
}
