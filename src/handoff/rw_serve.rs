//! A read-write lock changing hands: lapsed holders are taken out, and the queue is served
//! from its head in order for as long as its first wait can be granted (the readers queued
//! together at the head are granted together; a writer at the head stops the readers
//! behind it). Every fresh holding goes through the one door (`door.rs`). When the lock is
//! left with no holder and nobody queued takes it, its release is published.

use redis_module::raw;

use crate::handoff::door::{self, Claim, Door};
use crate::host::ffi::OwnedString;
use crate::host::gate::{self, Verdict};
use crate::host::node;
use crate::store::publish;
use crate::store::{entry_of, LockKey, Name, Over, RwEntry};
use crate::waits::finish;
use crate::waits::queues::{self, Waiter};
use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::kind::Family;
use rlock_core::registry::{Db, SLICE};
use rlock_core::reply::Outcome;
use rlock_core::rwlock::{self, Kind, RwHolder, RwMode, RwState, RwStep};

/// The lock's live holders: those whose lease ended are taken out first (replicated).
/// `None` when the key does not exist or is left with no holder; the flag says whether a
/// holder was taken out.
pub fn live_state(
    ctx: *mut raw::RedisModuleCtx,
    key: &LockKey,
) -> Result<(RwState, bool), LockError> {
    let Some(mut state) = key.read_rw()? else {
        return Ok((RwState::default(), false));
    };
    let lapsed = state.lapsed(node::now_ms());
    for owner in &lapsed {
        let name = OwnedString::new(ctx, owner)?;
        key.apply_rw(&gone(Name::of(&name)))?;
        state.remove(owner);
    }
    Ok((state, !lapsed.is_empty()))
}

/// An entry that takes `owner` out.
pub fn gone(owner: Name<'_>) -> RwEntry<'_> {
    RwEntry {
        owner,
        reads: 0,
        writes: 0,
        token: 0,
        deadline_ms: 0,
    }
}

/// Serves the queue of the read-write lock `key` as far as it can, `state` being its live
/// holders; `freed`: the caller just left it with no holder (its release is published if
/// nobody takes it). Returns when to check the lock again, if waiters are left: the first
/// lease to end, or when the gate said to ask again.
pub fn serve(
    ctx: *mut raw::RedisModuleCtx,
    db: Db,
    key: &LockKey,
    mut state: RwState,
    (in_command, freed): (bool, bool),
) -> Result<Option<i64>, LockError> {
    let mut later = None;
    let lane = queues::lane_len(db, key.name(), Family::Rw);
    for _ in 0..lane.min(SLICE) {
        let Some(first) = queues::first(db, key.name(), Family::Rw) else {
            break;
        };
        if finish::skip_unreachable(ctx, (db, key.name(), Family::Rw), &first) {
            continue;
        }
        let Kind::Rw(mode) = first.kind else {
            break;
        };
        match serve_first(ctx, db, key, &mut state, (&first, mode), in_command)? {
            Next::Go => {}
            Next::Stop(at) => {
                later = at;
                break;
            }
        }
    }
    if freed && state.holders.is_empty() && !node::replayed_in_cluster(ctx) {
        publish::rw_release_message(ctx, key.name())?;
    }
    let left = queues::lane_len(db, key.name(), Family::Rw);
    if later.is_none() && lane > SLICE && left > 0 {
        // Past the slice: the next one in a later pass, at once.
        later = Some(node::now_ms());
    }
    let served_all = left == 0;
    if served_all && state.holders.is_empty() && queues::others_wait(db, key.name(), Family::Rw) {
        // Left free with waits of another kind only: a check serves them, at once.
        later = Some(node::now_ms());
    }
    if queues::queue_len(db, key.name()) == 0 {
        return Ok(None);
    }
    Ok(match (later, state.next_deadline()) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    })
}

/// What serving the first waiter led to.
enum Next {
    /// Served (or sent away): on to the next.
    Go,
    /// The first waits on; check again then, if the gate said.
    Stop(Option<i64>),
}

fn serve_first(
    ctx: *mut raw::RedisModuleCtx,
    db: Db,
    key: &LockKey,
    state: &mut RwState,
    (first, mode): (&Waiter, RwMode),
    in_command: bool,
) -> Result<Next, LockError> {
    let owner = OwnedString::new(ctx, &first.owner)?;
    let name = Name::of(&owner);
    match rwlock::acquire(state, &first.owner, mode, false) {
        RwStep::Fresh => fresh(ctx, db, key, state, (first, mode, name), in_command),
        RwStep::Reenter {
            reads,
            writes,
            token,
        } => {
            let now = node::now_ms();
            if gate::reentries(now).is_err() {
                return Ok(Next::Stop(gate::fenced_until(now)));
            }
            let before = state.holder(&first.owner).cloned();
            let deadline_ms = node::now_ms().saturating_add(first.lease_ms);
            let holder = holder(&first.owner, (reads, writes), token, deadline_ms);
            key.apply_rw(&entry_of(name, &holder))?;
            state.put(holder);
            if !grant(ctx, db, key.name(), token)? {
                if let Some(before) = before {
                    key.apply_rw(&entry_of(name, &before))?;
                    state.put(before);
                }
            }
            Ok(Next::Go)
        }
        RwStep::Contended => Ok(Next::Stop(None)),
        RwStep::Upgrade => refuse_first(ctx, db, key, LockError::Upgrade(first.owner.to_vec())),
        RwStep::CountOverflow => refuse_first(ctx, db, key, LockError::CountOverflow),
    }
}

/// The first waiter gets a fresh holding through the one door, or the gate's word.
fn fresh(
    ctx: *mut raw::RedisModuleCtx,
    db: Db,
    key: &LockKey,
    state: &mut RwState,
    (first, mode, name): (&Waiter, RwMode, Name<'_>),
    in_command: bool,
) -> Result<Next, LockError> {
    let claim = Claim {
        owner: name,
        lease_ms: first.lease_ms,
        wait_until: first.wait_until,
        in_command,
        kind: Kind::Rw(mode),
    };
    let over = if state.holders.is_empty() {
        Over::Nothing
    } else {
        Over::Other
    };
    match door::fresh_holding(ctx, key, over, &claim) {
        Ok(Door::Held { token, deadline_ms }) => {
            let counts = match mode {
                RwMode::Read => (1, 0),
                RwMode::Write => (0, 1),
            };
            if grant(ctx, db, key.name(), token)? {
                count_fresh(mode);
                state.put(holder(&first.owner, counts, token, deadline_ms));
            } else {
                // Nobody took it (a push receiver that left): the holding is nobody's.
                key.apply_rw(&gone(name))?;
            }
            Ok(Next::Go)
        }
        Ok(Door::Shut(Verdict::Expired)) => {
            if let Some(waiter) = queues::pop_first(db, key.name(), Family::Rw) {
                finish::end(ctx, &waiter, Outcome::TimedOut);
                counters::WAIT_TIMEOUTS.bump();
            }
            Ok(Next::Go)
        }
        Ok(Door::Shut(Verdict::Later(at))) => Ok(Next::Stop(Some(at))),
        Ok(Door::Shut(Verdict::Refuse(text))) => {
            let left = finish::refuse_queue(ctx, db, key.name(), &text);
            Ok(Next::Stop(left.then(node::now_ms)))
        }
        Ok(Door::Shut(Verdict::Go)) => Ok(Next::Go),
        Err(e) => {
            _ = finish::refuse_queue(ctx, db, key.name(), &e.to_string());
            Err(e)
        }
    }
}

/// Counts a fresh holding of `mode` (`INFO rlock`).
pub fn count_fresh(mode: RwMode) {
    match mode {
        RwMode::Read => counters::READ_HOLDINGS.bump(),
        RwMode::Write => counters::WRITE_HOLDINGS.bump(),
    }
}

fn holder(owner: &[u8], (reads, writes): (i64, i64), token: i64, deadline_ms: i64) -> RwHolder {
    RwHolder {
        owner: owner.to_vec(),
        reads,
        writes,
        token,
        deadline_ms: Some(deadline_ms),
    }
}

/// The first waiter of `key` leaves the queue with the holding just written (`token`);
/// false if the grant reached nobody.
fn grant(ctx: *mut raw::RedisModuleCtx, db: Db, key: &[u8], token: i64) -> Result<bool, LockError> {
    let Some(waiter) = queues::pop_first(db, key, Family::Rw) else {
        return Ok(true);
    };
    let delivered = finish::grant(ctx, db, key, waiter, token)?;
    if delivered {
        counters::HANDOFFS.bump();
    }
    Ok(delivered)
}

/// The first waiter is sent away with `error`.
fn refuse_first(
    ctx: *mut raw::RedisModuleCtx,
    db: Db,
    key: &LockKey,
    error: LockError,
) -> Result<Next, LockError> {
    if let Some(waiter) = queues::pop_first(db, key.name(), Family::Rw) {
        finish::refuse(ctx, vec![waiter], &error.to_string());
    }
    Ok(Next::Go)
}
