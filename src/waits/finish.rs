//! How a wait ends, whatever its kind: a blocked client (`LOCK.ACQUIRE ... WAIT`) is
//! unblocked with its outcome, a ticket (`LOCK.WAIT`) is sent it (`tickets.rs`). Every
//! caller has first taken the waiter out of its queue, so each wait ends once.

use redis_module::raw;

use crate::waits::blocked;
use crate::waits::queues::{self, handle_of, Waiter};
use crate::waits::tickets::{self, is_ticket};
use rlock_core::error::LockError;
use rlock_core::kind::Family;
use rlock_core::registry::{Db, Grant, SLICE};
use rlock_core::reply::Outcome;

/// Hands `waiter`, taken out of the queue of `key`, the holding just written with
/// `token`; false when the grant reached nobody (a push receiver that left its channel):
/// the holding is then nobody's, and the caller passes the lock on.
pub fn grant(
    ctx: *mut raw::RedisModuleCtx,
    db: Db,
    key: &[u8],
    waiter: Waiter,
    token: i64,
) -> Result<bool, LockError> {
    blocked::stop_deadline(ctx, waiter.deadline_timer);
    let grant = Grant {
        db,
        key: key.to_vec(),
        owner: waiter.owner.to_vec(),
        token,
        kind: waiter.kind,
    };
    if is_ticket(waiter.client) {
        return tickets::deliver(ctx, &waiter, Outcome::Granted(token), Some(grant));
    }
    let bc = handle_of(waiter.client);
    queues::record_grant(bc, grant);
    blocked::unblock(bc, Outcome::Granted(token))?;
    Ok(true)
}

/// Ends the wait of `waiter`, taken out of its queue, without the lock: its `WAIT` ran out
/// or it was refused.
pub fn end(ctx: *mut raw::RedisModuleCtx, waiter: &Waiter, outcome: Outcome) {
    blocked::stop_deadline(ctx, waiter.deadline_timer);
    let outcome = match outcome {
        Outcome::TimedOut => blocked::timed_out(waiter.kind),
        outcome => outcome,
    };
    // Neither can fail on a server that could queue the wait; a push that reaches nobody
    // had nobody to tell.
    let _ = if is_ticket(waiter.client) {
        tickets::deliver(ctx, waiter, outcome, None).map(drop)
    } else {
        blocked::unblock(handle_of(waiter.client), outcome)
    };
}

/// Ends the waits taken out of their queue with the error `text` (their lock cannot be
/// served on this node any more).
pub fn refuse(ctx: *mut raw::RedisModuleCtx, refused: Vec<Waiter>, text: &str) {
    for waiter in refused {
        end(ctx, &waiter, Outcome::Refused(text.to_owned()));
    }
}

/// Ends the waits queued on `key` with the error `text`, a slice of them (the first
/// `SLICE`, of every kind); whether waits are left, to be refused in a later pass.
pub fn refuse_queue(ctx: *mut raw::RedisModuleCtx, db: Db, key: &[u8], text: &str) -> bool {
    refuse(ctx, queues::take_first(db, key, SLICE), text);
    queues::queue_len(db, key) > 0
}

/// Takes the first wait of `family` on `key` out, telling it nothing, if it is a ticket that
/// cannot be told (`tickets::reachable`); whether it did. Serving skips such waits rather
/// than write, and undo, a holding for each.
pub fn skip_unreachable(
    ctx: *mut raw::RedisModuleCtx,
    (db, key, family): (Db, &[u8], Family),
    first: &Waiter,
) -> bool {
    if tickets::reachable(first.client, first.id) {
        return false;
    }
    if let Some(waiter) = queues::pop_first(db, key, family) {
        blocked::stop_deadline(ctx, waiter.deadline_timer);
        tickets::forget(waiter.id);
    }
    true
}
