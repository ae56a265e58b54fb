//! A countdown latch's waits: a latch grants no holding, so nothing goes through the door;
//! every latch wait queued on it is released as soon as its count is zero or its key is
//! gone (a `LATCH.COUNTDOWN`, or a check armed by a keyspace event: a Redisson client's
//! count down to zero, a `DEL`, an expiry). Only the latch's own waits: a lock, read-write
//! or semaphore wait queued on the same name stays queued, to be served by its own kind.

use redis_module::raw;

use crate::host::{gate, node};
use crate::store::LockKey;
use crate::waits::{finish, queues};
use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::kind::Family;
use rlock_core::registry::{Db, SLICE};
use rlock_core::reply::Outcome;

/// Whether a latch of count `count` (`None`: no key) lets its waits go.
pub fn open(count: Option<i64>) -> bool {
    count.is_none_or(|c| c <= 0)
}

/// Releases the latch waits queued on `key`, each with 1 (the latch is open), a slice at a
/// time. Returns when to check the key again: now, when waits are left on it (latch waits
/// past the slice, or waits of another kind, for which the key is gone or not theirs).
pub fn release_all(ctx: *mut raw::RedisModuleCtx, db: Db, key: &[u8]) -> Option<i64> {
    for waiter in queues::take_lane(db, key, Family::Latch, SLICE) {
        finish::end(ctx, &waiter, Outcome::Granted(1));
        counters::LATCH_RELEASES.bump();
    }
    (queues::queue_len(db, key) > 0).then(node::now_ms)
}

/// A check of the latch waits of `key`: they go if it is open. Otherwise they wait on;
/// returns when to check again: when its time to live ends, if it has one. A key that is
/// not a latch any more keeps them waiting until it is one or is gone, or until their
/// `WAIT` runs out.
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
            Ok(match moved.flatten() {
                Some(redirect) => {
                    finish::refuse_queue(ctx, db, key.name(), &redirect).then(node::now_ms)
                }
                None => release_all(ctx, db, key.name()),
            })
        }
        Ok(_) => Ok(match key.ttl_ms()? {
            ttl @ 0.. => Some(node::now_ms().saturating_add(ttl)),
            _ => None,
        }),
        Err(_) => Ok(None),
    }
}
