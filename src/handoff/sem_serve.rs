//! A semaphore's permits changing hands: lapsed holders are taken out, and the queue is
//! served from its head in order for as long as its first wait can be granted; a first
//! wait that cannot (too few permits free) stops the waits behind it, even smaller ones,
//! so that a large request is never starved. Every fresh holding goes through the one door
//! (`door.rs`).

use redis_module::raw;

use crate::handoff::door::{self, Claim, Door};
use crate::host::ffi::OwnedString;
use crate::host::gate::{self, Verdict};
use crate::host::node;
use crate::store::{sem_entry, LockKey, Name, Over, SemEntry};
use crate::waits::finish;
use crate::waits::queues::{self, Waiter};
use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::kind::Family;
use rlock_core::registry::{Db, SLICE};
use rlock_core::reply::Outcome;
use rlock_core::rwlock::Kind;
use rlock_core::semaphore::{self, SemHolder, SemState, SemStep};

/// The semaphore's live holders: those whose lease ended are taken out first
/// (replicated). A missing key is a semaphore of 0 permits.
pub fn live_state(ctx: *mut raw::RedisModuleCtx, key: &LockKey) -> Result<SemState, LockError> {
    let Some(mut state) = key.read_sem()? else {
        return Ok(SemState::default());
    };
    for owner in state.lapsed(node::now_ms()) {
        let name = OwnedString::new(ctx, &owner)?;
        key.apply_sem(&gone(Name::of(&name)))?;
        state.remove(&owner);
    }
    // Read whole: `@next` learns the earliest lease end, so that the next commands decide
    // from a few fields again.
    key.settle_sem_next(&state)?;
    Ok(state)
}

/// An entry that takes `owner` out.
pub fn gone(owner: Name<'_>) -> SemEntry<'_> {
    SemEntry {
        owner,
        permits: 0,
        token: 0,
        deadline_ms: 0,
    }
}

/// Serves the queue of the semaphore `key` as far as it can, `state` being its live
/// holders. Returns when to check it again, if waiters are left: the first lease to end,
/// or when the gate said to ask again.
pub fn serve(
    ctx: *mut raw::RedisModuleCtx,
    db: Db,
    key: &LockKey,
    mut state: SemState,
    in_command: bool,
) -> Result<Option<i64>, LockError> {
    let mut later = None;
    let lane = queues::lane_len(db, key.name(), Family::Sem);
    for _ in 0..lane.min(SLICE) {
        let Some(first) = queues::first(db, key.name(), Family::Sem) else {
            break;
        };
        if finish::skip_unreachable(ctx, (db, key.name(), Family::Sem), &first) {
            continue;
        }
        let Kind::Permits(permits) = first.kind else {
            break;
        };
        let permits = i64::from(permits);
        if let Some(stop) = serve_first(ctx, db, key, &mut state, (&first, permits), in_command)? {
            later = stop;
            break;
        }
    }
    if queues::queue_len(db, key.name()) == 0 {
        return Ok(None);
    }
    if later.is_none() && lane > SLICE && queues::lane_len(db, key.name(), Family::Sem) > 0 {
        // Past the slice: the next one in a later pass, at once.
        later = Some(node::now_ms());
    }
    Ok(match (later, state.next_deadline()) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    })
}

/// Serves the first waiter: `None` to go on with the next, `Some(at)` to stop (and check
/// again then, if the gate said).
fn serve_first(
    ctx: *mut raw::RedisModuleCtx,
    db: Db,
    key: &LockKey,
    state: &mut SemState,
    (first, permits): (&Waiter, i64),
    in_command: bool,
) -> Result<Option<Option<i64>>, LockError> {
    let owner = OwnedString::new(ctx, &first.owner)?;
    let name = Name::of(&owner);
    match semaphore::acquire(state, &first.owner, permits, false) {
        SemStep::Fresh => fresh(ctx, db, key, state, (first, permits, name), in_command),
        SemStep::Reenter {
            permits: all,
            token,
        } => {
            let now = node::now_ms();
            if gate::reentries(now).is_err() {
                return Ok(Some(gate::fenced_until(now)));
            }
            let before = state.holder(&first.owner).cloned();
            let deadline_ms = node::now_ms().saturating_add(first.lease_ms);
            let holder = holder(&first.owner, all, token, deadline_ms);
            key.apply_sem(&sem_entry(name, &holder))?;
            state.put(holder);
            if grant(ctx, db, key.name(), token)? {
                counters::SEM_PERMITS_GRANTED.add(permits);
            } else if let Some(before) = before {
                key.apply_sem(&sem_entry(name, &before))?;
                state.put(before);
            }
            Ok(None)
        }
        // A first wait that cannot be granted stops the waits behind it until its own
        // `WAIT` runs out: it is timed out then, by the check armed for that time.
        SemStep::Contended => match first.wait_until {
            Some(until) if until <= node::now_ms() => {
                time_out_first(ctx, db, key.name());
                Ok(None)
            }
            until => Ok(Some(until)),
        },
        SemStep::TooMany { total } => {
            // Gone with its slot to another node: the waits are sent there.
            if total == 0 && matches!(key.read_sem(), Ok(None)) {
                if let Some(redirect) = gate::served_elsewhere(ctx, key.name()) {
                    let left = finish::refuse_queue(ctx, db, key.name(), &redirect);
                    return Ok(Some(left.then(node::now_ms)));
                }
            }
            // The total was lowered under what it asks: it could never be granted.
            if let Some(waiter) = queues::pop_first(db, key.name(), Family::Sem) {
                let error = LockError::TooManyPermits {
                    asked: permits,
                    total,
                };
                finish::refuse(ctx, vec![waiter], &error.to_string());
            }
            Ok(None)
        }
    }
}

/// The first waiter gets a fresh holding through the one door, or the gate's word.
fn fresh(
    ctx: *mut raw::RedisModuleCtx,
    db: Db,
    key: &LockKey,
    state: &mut SemState,
    (first, permits, name): (&Waiter, i64, Name<'_>),
    in_command: bool,
) -> Result<Option<Option<i64>>, LockError> {
    let claim = Claim {
        owner: name,
        lease_ms: first.lease_ms,
        wait_until: first.wait_until,
        in_command,
        kind: first.kind,
    };
    match door::fresh_holding(ctx, key, Over::Other, &claim) {
        Ok(Door::Held { token, deadline_ms }) => {
            if grant(ctx, db, key.name(), token)? {
                count_fresh(permits);
                state.put(holder(&first.owner, permits, token, deadline_ms));
            } else {
                // Nobody took it (a push receiver that left): the holding is nobody's.
                key.apply_sem(&gone(name))?;
            }
            Ok(None)
        }
        Ok(Door::Shut(Verdict::Expired)) => {
            time_out_first(ctx, db, key.name());
            Ok(None)
        }
        Ok(Door::Shut(Verdict::Later(at))) => Ok(Some(Some(at))),
        Ok(Door::Shut(Verdict::Refuse(text))) => {
            let left = finish::refuse_queue(ctx, db, key.name(), &text);
            Ok(Some(left.then(node::now_ms)))
        }
        Ok(Door::Shut(Verdict::Go)) => Ok(None),
        Err(e) => {
            _ = finish::refuse_queue(ctx, db, key.name(), &e.to_string());
            Err(e)
        }
    }
}

/// The first waiter of `key` is past its `WAIT` limit: it gets nil.
fn time_out_first(ctx: *mut raw::RedisModuleCtx, db: Db, key: &[u8]) {
    if let Some(waiter) = queues::pop_first(db, key, Family::Sem) {
        finish::end(ctx, &waiter, Outcome::TimedOut);
        counters::WAIT_TIMEOUTS.bump();
    }
}

/// Counts a fresh holding of `permits` (`INFO rlock`).
pub fn count_fresh(permits: i64) {
    counters::SEM_HOLDINGS.bump();
    counters::SEM_PERMITS_GRANTED.add(permits);
}

fn holder(owner: &[u8], permits: i64, token: i64, deadline_ms: i64) -> SemHolder {
    SemHolder {
        owner: owner.to_vec(),
        permits,
        token,
        deadline_ms,
    }
}

/// The first waiter of `key` leaves the queue with the holding just written (`token`);
/// false if the grant reached nobody.
fn grant(ctx: *mut raw::RedisModuleCtx, db: Db, key: &[u8], token: i64) -> Result<bool, LockError> {
    let Some(waiter) = queues::pop_first(db, key, Family::Sem) else {
        return Ok(true);
    };
    let delivered = finish::grant(ctx, db, key, waiter, token)?;
    if delivered {
        counters::HANDOFFS.bump();
    }
    Ok(delivered)
}
