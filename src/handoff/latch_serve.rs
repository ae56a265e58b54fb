//! A countdown latch's waits: a latch grants no holding, so nothing goes through the door;
//! every wait queued on it is released, in one pass, as soon as its count is zero or its
//! key is gone (a `LATCH.COUNTDOWN`, or a check armed by a keyspace event: a Redisson
//! client's count down to zero, a `DEL`, an expiry).

use redis_module::raw;

use crate::host::{gate, node};
use crate::store::LockKey;
use crate::waits::{finish, queues};
use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::registry::Db;
use rlock_core::reply::Outcome;

/// Whether a latch of count `count` (`None`: no key) lets its waits go.
pub fn open(count: Option<i64>) -> bool {
    count.is_none_or(|c| c <= 0)
}

/// Releases every wait queued on `key`, each with 1 (the latch is open). Returns how many.
pub fn release_all(ctx: *mut raw::RedisModuleCtx, db: Db, key: &[u8]) -> usize {
    let waiters = queues::take_queue(db, key);
    for waiter in &waiters {
        finish::end(ctx, waiter, Outcome::Granted(1));
        counters::LATCH_RELEASES.bump();
    }
    waiters.len()
}

/// A check of the latch `key`, whose first wait is a latch's: its waits go if it is open.
/// Otherwise they wait on; returns when to check again: when its time to live ends, if it
/// has one. A key that is not a latch any more keeps them waiting until it is one or is
/// gone, or until their `WAIT` runs out.
pub fn check(
    ctx: *mut raw::RedisModuleCtx,
    db: Db,
    key: &LockKey,
) -> Result<Option<i64>, LockError> {
    match key.read_latch() {
        Ok(count) if open(count) => {
            // Gone with its slot to another node, a latch is not at zero: its waits are
            // sent there.
            let moved = count
                .is_none()
                .then(|| gate::served_elsewhere(ctx, key.name()));
            match moved.flatten() {
                Some(redirect) => finish::refuse_queue(ctx, db, key.name(), &redirect),
                None => drop(release_all(ctx, db, key.name())),
            }
            Ok(None)
        }
        Ok(_) => Ok(match key.ttl_ms()? {
            ttl @ 0.. => Some(node::now_ms().saturating_add(ttl)),
            _ => None,
        }),
        Err(_) => Ok(None),
    }
}
