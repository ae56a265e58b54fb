//! The node's one waiter registry (`rlock_core::registry`), keyed by blocked-client handle
//! (or, for a ticket, by an odd number made of its wait id: `tickets.rs`).
//!
//! Everything here runs on Redis's main thread, so the registry is a thread-local. No borrow
//! of it is held across a call into Redis: each function here borrows it for its own body.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use redis_module::raw;

use rlock_core::kind::Family;
use rlock_core::registry::{Db, Grant, Registry, Taken};
use rlock_core::rwlock::Kind;

/// A blocked client's handle.
pub type Bc = *mut raw::RedisModuleBlockedClient;

/// A queued client, known by its handle's address.
pub type Waiter = rlock_core::registry::Waiter<usize>;

thread_local! {
    static REGISTRY: RefCell<Registry<usize>> = RefCell::new(Registry::default());
}

/// How many clients are queued, read on every keyspace event of the server: one load.
static QUEUED: AtomicUsize = AtomicUsize::new(0);

/// The registry key of a blocked client.
pub fn id_of(bc: Bc) -> usize {
    bc as usize
}

/// The blocked client a registry key stands for.
pub fn handle_of(client: usize) -> Bc {
    client as Bc
}

fn with<R>(f: impl FnOnce(&mut Registry<usize>) -> R) -> R {
    REGISTRY.with(|r| {
        let mut registry = r.borrow_mut();
        let result = f(&mut registry);
        QUEUED.store(registry.waiting(), Ordering::Relaxed);
        result
    })
}

/// Whether any client waits anywhere (the fast path of every event).
pub fn any() -> bool {
    QUEUED.load(Ordering::Relaxed) > 0
}

/// How many clients are queued on the node.
pub fn count() -> usize {
    QUEUED.load(Ordering::Relaxed)
}

/// (queued clients, locks with a queue, an estimate of the bytes the queues take).
pub fn gauges() -> (usize, usize, usize) {
    with(|r| (r.waiting(), r.queues(), r.memory()))
}

/// Number of clients queued on a lock.
pub fn queue_len(db: Db, key: &[u8]) -> usize {
    if !any() {
        return 0;
    }
    with(|r| r.queue_len(db, key))
}

/// Queues a blocked client at the end of the queue of `key`.
pub fn enqueue(db: Db, key: &[u8], waiter: Waiter) {
    with(|r| r.enqueue(db, key, waiter));
}

/// Takes the first waiter of `family` out of the queue of `key`.
pub fn pop_first(db: Db, key: &[u8], family: Family) -> Option<Waiter> {
    with(|r| r.pop_first(db, key, family))
}

/// Records that the lock `key` was just handed to `owner` from its queue: a hint for reading
/// the lock while waits are queued on it.
pub fn handed_to(db: Db, key: &[u8], owner: Box<[u8]>) {
    with(|r| r.handed_to(db, key, owner));
}

/// Whom the lock `key` was last handed to from its queue, while the queue lasts.
pub fn last_handed(db: Db, key: &[u8]) -> Option<Box<[u8]>> {
    if !any() {
        return None;
    }
    with(|r| r.last_handed(db, key).map(Box::from))
}

/// The first waiter of `family` on `key` (a copy), left in its queue.
pub fn first(db: Db, key: &[u8], family: Family) -> Option<Waiter> {
    if !any() {
        return None;
    }
    with(|r| r.first(db, key, family).cloned())
}

/// Number of waits of `family` queued on `key`.
pub fn lane_len(db: Db, key: &[u8], family: Family) -> usize {
    if !any() {
        return 0;
    }
    with(|r| r.lane_len(db, key, family))
}

/// Whether waits of a family other than `family` are queued on `key`.
pub fn others_wait(db: Db, key: &[u8], family: Family) -> bool {
    any() && with(|r| r.queue_len(db, key) > r.lane_len(db, key, family))
}

/// The families with waits on `key`, the one whose first wait came first first.
pub fn heads(db: Db, key: &[u8]) -> Vec<Family> {
    if !any() {
        return Vec::new();
    }
    with(|r| r.heads(db, key))
}

/// The first `n` waiters of `key`: their owners and what they wait for.
pub fn peek(db: Db, key: &[u8], n: usize) -> Vec<(Vec<u8>, Kind)> {
    if !any() {
        return Vec::new();
    }
    with(|r| r.peek(db, key, n))
}

/// Takes a queued client out of its queue (only the waiter `id`, when given).
pub fn take(bc: Bc, id: Option<u64>) -> Option<Waiter> {
    with(|r| r.take(id_of(bc), id))
}

/// Takes a queued entry (a blocked client or a ticket) out of its queue: only the wait
/// `id`, when given.
pub fn take_entry(client: usize, id: Option<u64>) -> Option<Waiter> {
    with(|r| r.take(client, id))
}

/// Takes these queued entries (registry entry, wait id) out of their queues at once: the
/// deadline timers of those taken, the queues to serve again.
pub fn take_entries(waits: &[(usize, u64)]) -> Taken {
    with(|r| r.take_many(waits))
}

/// The lock a queued entry waits for.
pub fn location_of(client: usize) -> Option<(Db, Vec<u8>)> {
    with(|r| r.location(client).map(|(db, key)| (db, key.to_vec())))
}

/// Whether a queued entry waits for lock `key` of `db`.
pub fn waits_on(client: usize, db: Db, key: &[u8]) -> bool {
    with(|r| r.location(client) == Some((db, key)))
}

/// Takes the first `n` waits queued on `key`, of every family.
pub fn take_first(db: Db, key: &[u8], n: usize) -> Vec<Waiter> {
    with(|r| r.take_first(db, key, n))
}

/// Takes the first `n` waits of `family` queued on `key`; the others stay queued.
pub fn take_lane(db: Db, key: &[u8], family: Family, n: usize) -> Vec<Waiter> {
    with(|r| r.take_lane(db, key, family, n))
}

/// Records that `bc` was handed a lock whose reply has not gone out.
pub fn record_grant(bc: Bc, grant: Grant) {
    with(|r| r.record_grant(id_of(bc), grant));
}

/// Takes the grant of a client whose reply has not gone out, if any.
pub fn take_grant(bc: Bc) -> Option<Grant> {
    with(|r| r.take_grant(id_of(bc)))
}

thread_local! {
    /// The grants of `LOCK.GRANTS` replies not sent yet, by blocked-client handle: present
    /// from its unblocking (possibly empty) until its reply is sent or its client leaves.
    static BATCHES: RefCell<HashMap<usize, Vec<Grant>>> = RefCell::new(HashMap::new());
}

/// Records that `bc`, a `LOCK.GRANTS` client, was unblocked with these grants.
pub fn record_batch(bc: Bc, grants: Vec<Grant>) {
    BATCHES.with(|b| b.borrow_mut().insert(id_of(bc), grants));
}

/// Takes the grants `bc` was unblocked with; `None` if it was not unblocked.
pub fn take_batch(bc: Bc) -> Option<Vec<Grant>> {
    BATCHES.with(|b| b.borrow_mut().remove(&id_of(bc)))
}

/// Records that a check of `key` fires at `at` (Unix ms); false when none is needed.
pub fn claim_check(db: Db, key: &[u8], at: i64) -> bool {
    with(|r| r.claim_check(db, key, at))
}

/// Records `timer` as the timer of the check just claimed; returns the one it replaces.
pub fn replace_check_timer(db: Db, key: &[u8], timer: u64) -> Option<u64> {
    with(|r| r.replace_check_timer(db, key, timer))
}

/// The check of `timer` on `key` ran at `now`.
pub fn check_ran(db: Db, key: &[u8], now: i64, timer: u64) {
    with(|r| r.check_ran(db, key, now, timer));
}

/// Takes the lease timers of queues that emptied (not fired yet: to be stopped).
pub fn take_stale_timers() -> Vec<u64> {
    with(Registry::take_stale_timers)
}

/// The locks with waiters, in `db` or in every db.
pub fn queued_keys(db: Option<Db>) -> Vec<(Db, Vec<u8>)> {
    with(|r| r.queued_keys(db))
}

/// Whether the script clients' turn on `key` may be due (`registry/turns.rs`).
pub fn scripts_may_be_due(db: Db, key: &[u8]) -> bool {
    any() && with(|r| r.scripts_may_be_due(db, key))
}

/// Starts the script clients' turn on `key` if it is due; returns when it ends.
pub fn start_scripts_turn(
    db: Db,
    key: &[u8],
    scripts: usize,
    now: i64,
    hold_ms: i64,
) -> Option<i64> {
    with(|r| r.start_scripts_turn(db, key, scripts, now, hold_ms))
}

/// When the script clients' running turn on `key` ends, if one runs at `now`.
pub fn scripts_until(db: Db, key: &[u8], now: i64) -> Option<i64> {
    with(|r| r.reserved_until(db, key, now))
}

/// Someone holds `key`: the script clients' turn on it is over.
pub fn end_scripts_turn(db: Db, key: &[u8]) {
    with(|r| r.end_scripts_turn(db, key));
}

/// A native waiter of `key` was granted it.
pub fn native_granted(db: Db, key: &[u8]) {
    with(|r| r.native_granted(db, key));
}

/// `key` is free with nobody queued: its turns start again from nothing.
pub fn forget_turns(db: Db, key: &[u8]) {
    with(|r| r.forget_turns(db, key));
}
