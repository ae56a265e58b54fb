//! Lease expiry for locks with waiters (SPEC.md §3): the module, not Redis's sampled
//! expiry, notices the end of a lease and hands the lock on.
//!
//! For a lock with waiters one timer is armed at the lease deadline, and any keyspace event
//! on the key (a `DEL`, a script's unlock, Redis's own expiry, eviction) or a `FLUSHDB` arms
//! an immediate check. A check is idempotent: a free lock goes to the first waiter, a held
//! one gets its timer re-armed at its deadline.

use std::ffi::{c_int, c_void, CStr};

use redis_module::raw;

use crate::handoff::door::{self, Handed};
use crate::handoff::{evicted, family_checks, latch_serve, losses, script_turns};
use crate::host::ffi::OwnedString;
use crate::host::gate::{self, Verdict};
use crate::host::{guard, node};
use crate::store::{publish, while_self_notifying, LockKey, Mode, Over};
use crate::waits::{finish, queues};
use rlock_core::error::LockError;
use rlock_core::kind::Family;
use rlock_core::registry::Db;
use rlock_core::{counters, token};

/// Why a check runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    /// A lease is due to end (a handoff then counts in `expiry_handoffs`).
    LeaseEnd,
    /// Something happened to the key, or the key was expired by Redis.
    Event { expired: bool },
}

impl Cause {
    /// Whether the check is about a lease that ran out (a timer at the deadline, or Redis
    /// expiring the key).
    fn is_lease_end(self) -> bool {
        matches!(self, Cause::LeaseEnd | Cause::Event { expired: true })
    }
}

struct Check {
    db: Db,
    key: Vec<u8>,
    cause: Cause,
    /// The time (Unix ms) this check was armed for; 0 for an immediate check.
    fire_at: i64,
    /// Its timer (set once the timer is created).
    timer: u64,
}

/// The lease of `key` now ends at `deadline_ms`: if the lock has waiters, make sure a check
/// runs right after it.
pub fn lease_moved(ctx: *mut raw::RedisModuleCtx, key: &[u8], deadline_ms: i64) {
    if !queues::any() {
        return;
    }
    let db = node::selected_db(ctx);
    if queues::queue_len(db, key) > 0 {
        arm(ctx, db, key, deadline_ms);
    }
}

/// A holding ended in the running command or timer: watch the new holder's lease, or, when
/// the gate held the waiters back, check the lock again when it said to.
pub fn handed(ctx: *mut raw::RedisModuleCtx, key: &[u8], handed: Handed) {
    match handed {
        Handed::To(deadline_ms) => lease_moved(ctx, key, deadline_ms),
        Handed::NotNow(at) | Handed::Gone(Some(at)) => arm(ctx, node::selected_db(ctx), key, at),
        Handed::Nobody | Handed::Gone(None) => {}
    }
}

/// A keyspace event on `key`: if the lock has waiters, check it right away. A lock that
/// `maxmemory` evicted is not handed on: a grant would be evicted in turn, and the next,
/// until the queue is drained into holdings that no longer exist; its lock, read-write and
/// semaphore waits get `-OOM`. A countdown latch evicted is gone, and its waits are released
/// as a deleted one's are.
pub fn on_key_event(ctx: *mut raw::RedisModuleCtx, key: &[u8], event: &CStr) {
    let db = node::selected_db(ctx);
    if queues::queue_len(db, key) == 0 {
        return;
    }
    if event == c"evicted" {
        // Its lock waits refused (the rest by the next checks); its latch waits, if any,
        // are released by a check.
        evicted::refuse_some(ctx, (db, key), true);
        if queues::queue_len(db, key) == 0 {
            return;
        }
    }
    let expired = event == c"expired";
    schedule(
        ctx,
        Check::now(db, key.to_vec(), Cause::Event { expired }),
        0,
    );
}

/// A `FLUSHDB` (`db` ≥ 0) or `FLUSHALL` (`db` = -1) ended, or `SWAPDB` moved database
/// `db`: check every lock with waiters there.
pub fn on_flush(ctx: *mut raw::RedisModuleCtx, db: c_int) {
    let db = (db >= 0).then_some(db);
    for (d, key) in queues::queued_keys(db) {
        let check = Check::now(d, key, Cause::Event { expired: false });
        schedule(ctx, check, 0);
    }
}

/// Arms a check at `deadline_ms` (Unix ms), unless an earlier one is pending.
pub fn arm(ctx: *mut raw::RedisModuleCtx, db: Db, key: &[u8], deadline_ms: i64) {
    stop_stale(ctx);
    // The lease is over when the clock reaches its deadline (Redis itself would keep the
    // key through that millisecond): the check hands it on then.
    if queues::claim_check(db, key, deadline_ms) {
        // Rounded down: Redis's event loop may wake up to 1 ms after a timer is due, so
        // the timer aims at the start of the deadline's millisecond and a check that comes
        // early re-arms for the next turn of the loop.
        let delay = deadline_ms
            .saturating_mul(1000)
            .saturating_sub(token::now_us())
            .div_euclid(1000)
            .max(0);
        let check = Check {
            db,
            key: key.to_vec(),
            cause: Cause::LeaseEnd,
            fire_at: deadline_ms,
            timer: 0,
        };
        // The later check this one replaces (a lease shortened) is stopped: renewals must
        // not pile up timers.
        let replaced = schedule(ctx, check, delay)
            .and_then(|timer| queues::replace_check_timer(db, key, timer));
        if let Some(old) = replaced {
            stop(ctx, old);
        }
    }
}

/// Stops the lease timers of queues that emptied: a lock whose queue empties and fills
/// again, over and over, must not pile up timers until its lease ends. Run whenever a check
/// is armed, and by the heartbeat.
pub fn stop_stale(ctx: *mut raw::RedisModuleCtx) {
    for timer in queues::take_stale_timers() {
        stop(ctx, timer);
    }
}

/// Stops a lease timer that has not fired, and frees its check.
fn stop(ctx: *mut raw::RedisModuleCtx, timer: u64) {
    if let Some(data) = node::stop_timer(ctx, timer).filter(|d| !d.is_null()) {
        // The timer's data is the box made in `schedule`, never handed to `run_check`.
        drop(unsafe { Box::from_raw(data.cast::<Check>()) });
    }
}

impl Check {
    /// A check to run at once.
    fn now(db: Db, key: Vec<u8>, cause: Cause) -> Check {
        Check {
            db,
            key,
            cause,
            fire_at: 0,
            timer: 0,
        }
    }
}

/// Creates the timer of `check`; returns its id.
fn schedule(ctx: *mut raw::RedisModuleCtx, check: Check, delay_ms: i64) -> Option<u64> {
    let data = Box::into_raw(Box::new(check));
    let Some(timer) = node::create_timer(ctx, delay_ms, run_check, data.cast::<c_void>()) else {
        // Never armed: the box is still ours.
        drop(unsafe { Box::from_raw(data) });
        return None;
    };
    // The box is the timer's until it fires (never within this call).
    unsafe { (*data).timer = timer };
    Some(timer)
}

extern "C" fn run_check(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    // The timer hands us back the box made in `schedule`; it is ours to free.
    let check = unsafe { Box::from_raw(data.cast::<Check>()) };
    node::timer_fired();
    guard::callback("lock expiry timer", || {
        let now = node::now_ms().max(check.fire_at);
        queues::check_ran(check.db, &check.key, now, check.timer);
        check_lock(ctx, &check)
    });
}

/// Hands a free lock to its first waiter, or re-arms the timer of a held one; on a node
/// that may not write now, comes back later (or sends the waiters away, on a replica).
fn check_lock(ctx: *mut raw::RedisModuleCtx, check: &Check) -> Result<(), LockError> {
    if queues::queue_len(check.db, &check.key) == 0 {
        return Ok(());
    }
    if evicted::refuse_some(ctx, (check.db, &check.key), false) {
        arm(ctx, check.db, &check.key, node::now_ms());
        return Ok(());
    }
    // Before the key is opened: a key opened for writing during a pause is not expired.
    match gate::writes(ctx) {
        Verdict::Later(at) => {
            arm(ctx, check.db, &check.key, at);
            return Ok(());
        }
        Verdict::Refuse(text) => {
            if finish::refuse_queue(ctx, check.db, &check.key, &text) {
                arm(ctx, check.db, &check.key, node::now_ms());
            }
            return Ok(());
        }
        Verdict::Go | Verdict::Expired => {}
    }
    node::select_db(ctx, check.db);
    let name = OwnedString::new(ctx, &check.key)?;
    let mut result = Ok(());
    while_self_notifying(|| result = serve_or_rearm(ctx, check, &name));
    // A lease that ended here ended a listened holding, perhaps.
    losses::settle(ctx, &check.key, (rlock_core::watch::Cause::Expired, None))?;
    result
}

fn serve_or_rearm(
    ctx: *mut raw::RedisModuleCtx,
    check: &Check,
    name: &OwnedString,
) -> Result<(), LockError> {
    let key = LockKey::open(ctx, name.0, Mode::Write)?;
    // Each family of waits by its own rules, the one whose first wait came first first: a
    // family that takes the free key leaves the others waiting for it.
    let (db, lease_end) = (check.db, check.cause.is_lease_end());
    for family in queues::heads(db, &check.key) {
        let next = match family {
            Family::Lock => {
                serve_lock(ctx, check, &key)?;
                None
            }
            Family::Rw => family_checks::rw(ctx, (db, &key), lease_end)?,
            Family::Sem => family_checks::sem(ctx, (db, &key), lease_end)?,
            Family::Latch => latch_serve::check(ctx, db, &key)?,
        };
        if let Some(at) = next {
            arm(ctx, db, &check.key, at);
        }
    }
    Ok(())
}

/// A plain lock's waiters: a free lock goes to the first the gate lets have it, a held one
/// is checked again when its lease ends. A key that is not a plain lock keeps them waiting
/// until it is one or is gone, or they time out.
fn serve_lock(
    ctx: *mut raw::RedisModuleCtx,
    check: &Check,
    key: &LockKey,
) -> Result<(), LockError> {
    let lease_end = check.cause.is_lease_end();
    // What a waiter's holding would be written over, if the lock is free.
    let vacancy = match key.read() {
        Ok(None) => Some(Over::Nothing),
        // The lease ended this millisecond: the holding is over.
        Ok(Some(_)) if lease_end && key.ttl_ms()? == 0 => Some(Over::Other),
        Ok(Some(_)) => {
            // Held again (a script client took its turn): the natives come next.
            if script_turns::turns_on() {
                queues::end_scripts_turn(check.db, &check.key);
            }
            None
        }
        // Not a lock any more: waiters keep waiting until it is one, or they time out.
        Err(_) => return Ok(()),
    };
    if vacancy == Some(Over::Nothing) {
        // Freed behind the module's back (a script's unlock, a `DEL`, Redis's expiry): it
        // may be the script clients' turn; they learn it from the release message.
        if let Some(until) = script_turns::scripts_turn(ctx, check.db, &check.key)? {
            publish::release_message(ctx, &check.key)?;
            arm(ctx, check.db, &check.key, until);
            return Ok(());
        }
    }
    if let Some(vacancy) = vacancy {
        // The one door: the gate decides (role, pause, route, stall, failover delay,
        // memory, replicas, the waiter's own WAIT limit).
        match door::hand_off(ctx, check.db, key, vacancy, false)? {
            Handed::To(_) if lease_end => counters::EXPIRY_HANDOFFS.bump(),
            Handed::NotNow(at) | Handed::Gone(Some(at)) => {
                arm(ctx, check.db, &check.key, at);
                return Ok(());
            }
            Handed::To(_) | Handed::Nobody | Handed::Gone(None) => {}
        }
    }
    rearm_at_lease_end(ctx, check, key)
}

/// A held plain lock with waiters: checked again when its lease ends.
fn rearm_at_lease_end(
    ctx: *mut raw::RedisModuleCtx,
    check: &Check,
    key: &LockKey,
) -> Result<(), LockError> {
    let ttl = key.ttl_ms()?;
    if ttl >= 0 && queues::queue_len(check.db, &check.key) > 0 {
        arm(
            ctx,
            check.db,
            &check.key,
            node::now_ms().saturating_add(ttl),
        );
    }
    Ok(())
}
