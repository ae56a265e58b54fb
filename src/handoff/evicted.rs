//! A key evicted by `maxmemory` with waits queued: its lock, read-write and semaphore
//! waits get `-OOM` (a grant would be evicted in turn, and the next, until the queue is
//! drained into holdings that no longer exist), a slice at a time; its latch's waits are
//! released then, as a deleted latch's are. Until its last such wait is refused, the key is
//! marked, so that no check serves the rest.

use std::cell::RefCell;
use std::collections::HashSet;

use redis_module::raw;

use crate::waits::{finish, queues};
use rlock_core::error::LockError;
use rlock_core::kind::Family;
use rlock_core::registry::{Db, SLICE};

thread_local! {
    /// The keys whose waits are being refused after an eviction.
    static EVICTED: RefCell<HashSet<(Db, Vec<u8>)>> = RefCell::default();
}

/// `key` was evicted (`fresh`), or a check runs on it: refuses a slice of its lock,
/// read-write and semaphore waits if it is being refused; whether such waits are left (the
/// key is to be checked again at once, and nothing else of it served).
pub fn refuse_some(ctx: *mut raw::RedisModuleCtx, (db, key): (Db, &[u8]), fresh: bool) -> bool {
    let marked = || EVICTED.with(|e| e.borrow().contains(&(db, key.to_vec())));
    if !fresh && !marked() {
        return false;
    }
    let mut budget = SLICE;
    for family in [Family::Lock, Family::Rw, Family::Sem] {
        let refused = queues::take_lane(db, key, family, budget);
        budget -= refused.len();
        finish::refuse(ctx, refused, &LockError::Evicted.to_string());
    }
    let left = [Family::Lock, Family::Rw, Family::Sem]
        .into_iter()
        .any(|f| queues::lane_len(db, key, f) > 0);
    EVICTED.with(|e| {
        let mut e = e.borrow_mut();
        if left {
            e.insert((db, key.to_vec()));
        } else {
            e.remove(&(db, key.to_vec()));
        }
    });
    left
}
