//! The one door of every fresh holding (SPEC.md §3, §5), and handing a lock on.
//!
//! [`fresh_holding`] is the only place a fresh holding is created: for the client of
//! `LOCK.ACQUIRE`, or for a waiter at a release, a force release, a revoked grant, a lease
//! timer or a keyspace event. It asks the gate once (`gate::ask`), and only on its word
//! issues a token and writes the holding.
//!
//! When a holding ends, the first queued client gets the lock within the same command or
//! timer if the gate lets it; otherwise the lock is freed and the waiters stay queued until
//! the gate lets them be served (a check is armed then). Whoever hands a lock on tells the
//! lease timers (`expiry.rs`) about the new deadline.

use redis_module::raw;

use crate::handoff::{losses, script_turns};
use crate::host::ffi::OwnedString;
use crate::host::gate::{self, Ask, Verdict};
use crate::host::node;
use crate::store::publish;
use crate::store::{LockEntry, LockKey, Name, Over, Replicate, RwEntry, SemEntry};
use crate::waits::finish;
use crate::waits::queues;
use rlock_core::error::LockError;
use rlock_core::kind::Family;
use rlock_core::registry::SLICE;
use rlock_core::reply::Outcome;
use rlock_core::rwlock::{Kind, RwMode};
use rlock_core::token::{self, TOKENS};
use rlock_core::{counters, registry};

/// Who a fresh holding is for.
pub struct Claim<'a> {
    pub owner: Name<'a>,
    pub lease_ms: i64,
    /// The waiter's `WAIT` limit (Unix ms), if it is a waiter with one.
    pub wait_until: Option<i64>,
    /// Asked inside a client's command (an acquire, a release), not a timer or an event.
    pub in_command: bool,
    /// A plain lock, a read or write hold of a read-write lock, or permits of a semaphore
    /// (added to its holders).
    pub kind: Kind,
}

/// What an acquisition (of any kind) found before any waiting: the token it holds, or the
/// lock taken or held back by the gate, to be checked again at `held_back`, if known.
pub enum Attempt {
    Held(i64),
    Contended {
        key: LockKey,
        db: registry::Db,
        held_back: Option<i64>,
    },
}

/// What the door said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Door {
    /// The holding is written: its token and when its lease ends (Unix ms).
    Held { token: i64, deadline_ms: i64 },
    /// The gate said no (not `Go`).
    Shut(Verdict),
}

/// A fresh holding of `kind` asked inside a client's command, before any wait: through the
/// door, its token and lease end; or, when the gate holds it back, when to ask again (if
/// the gate said). Counted in `acquired`.
pub fn take_in_command(
    ctx: *mut raw::RedisModuleCtx,
    key: &LockKey,
    over: Over,
    (owner, kind, lease_ms): (Name<'_>, Kind, i64),
) -> Result<Result<(i64, i64), Option<i64>>, LockError> {
    let claim = Claim {
        owner,
        lease_ms,
        wait_until: None,
        in_command: true,
        kind,
    };
    Ok(match fresh_holding(ctx, key, over, &claim)? {
        Door::Held { token, deadline_ms } => {
            counters::ACQUIRED.bump();
            Ok((token, deadline_ms))
        }
        Door::Shut(Verdict::Later(at)) => Err(Some(at)),
        Door::Shut(_) => Err(None),
    })
}

/// The one door: asks the gate once, and on its word writes a fresh holding of `claim`
/// (count 1, a fresh token) over what `key` holds, replicated.
pub fn fresh_holding(
    ctx: *mut raw::RedisModuleCtx,
    key: &LockKey,
    over: Over,
    claim: &Claim<'_>,
) -> Result<Door, LockError> {
    let ask = Ask {
        key: key.name(),
        key_here: over.key_here(),
        wait_until: claim.wait_until,
        in_command: claim.in_command,
        scripts_until: script_turns::scripts_until(ctx, key.name()),
    };
    match gate::ask(ctx, &ask) {
        Verdict::Go => {}
        shut => return Ok(Door::Shut(shut)),
    }
    let now_us = token::now_us();
    let token = TOKENS
        .issue(now_us)
        .map_err(|_| LockError::TokensExhausted)?;
    let deadline_ms = now_us.div_euclid(1000).saturating_add(claim.lease_ms);
    match claim.kind {
        Kind::Lock => {
            let holding = LockEntry {
                owner: claim.owner,
                holds: 1,
                token,
                deadline_ms,
            };
            key.write_holding(&holding, over)?;
        }
        Kind::Rw(mode) => {
            let entry = RwEntry {
                owner: claim.owner,
                reads: i64::from(mode == RwMode::Read),
                writes: i64::from(mode == RwMode::Write),
                token,
                deadline_ms,
            };
            key.apply_rw(&entry)?;
        }
        // A latch grants no holding: its waits are released (`latch_serve.rs`).
        Kind::Latch => return Err(LockError::Internal("a latch holding")),
        Kind::Permits(permits) => {
            let entry = SemEntry {
                owner: claim.owner,
                permits: i64::from(permits),
                token,
                deadline_ms,
            };
            key.apply_sem(&entry)?;
        }
    }
    if let Some(held) = losses::held_of(claim.kind) {
        let count = match claim.kind {
            Kind::Permits(permits) => i64::from(permits),
            _ => 1,
        };
        losses::holds(ctx, key.name(), claim.owner.bytes, (held, token, count));
    }
    Ok(Door::Held { token, deadline_ms })
}

/// What became of a lock's queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handed {
    /// The first waiter holds the lock; its lease ends then (Unix ms).
    To(i64),
    /// Nobody could be served now: ask again at this time (Unix ms).
    NotNow(i64),
    /// Nobody waits (any more).
    Nobody,
    /// Nobody took a grant that reached nobody: the key is deleted and the release
    /// published; the waiters left (if any) are to be served at this time (Unix ms).
    Gone(Option<i64>),
}

/// Hands the lock to the first waiter the gate lets have it: waiters whose `WAIT` ran out
/// get nil on the way; a gate that refuses sends the whole queue away. A grant that reached
/// nobody (a push receiver that left its channel) is passed on to the next waiter in the same
/// call; if nobody takes it, the key it was written to is deleted here.
pub fn hand_off(
    ctx: *mut raw::RedisModuleCtx,
    db: registry::Db,
    key: &LockKey,
    mut over: Over,
    in_command: bool,
) -> Result<Handed, LockError> {
    let (mut undelivered, mut later) = (false, None);
    // Bounded by a slice of the queue: each turn that does not return takes one waiter out.
    // A ticket whose receiver left (or took no grant in this call) leaves the queue without
    // a holding written for it.
    for _ in 0..=queues::lane_len(db, key.name(), Family::Lock).min(SLICE) {
        let Some(first) = queues::first(db, key.name(), Family::Lock) else {
            break;
        };
        if finish::skip_unreachable(ctx, (db, key.name(), Family::Lock), &first) {
            continue;
        }
        let owner = OwnedString::new(ctx, &first.owner)?;
        let claim = Claim {
            owner: Name::of(&owner),
            lease_ms: first.lease_ms,
            wait_until: first.wait_until,
            in_command,
            kind: Kind::Lock,
        };
        let shut = match fresh_holding(ctx, key, over, &claim) {
            Ok(Door::Held { token, deadline_ms }) => {
                if grant(ctx, db, key.name(), token)? {
                    // The next wait on the lock reads it knowing whom to look for.
                    queues::handed_to(db, key.name(), first.owner);
                    return Ok(Handed::To(deadline_ms));
                }
                counters::REVOKED_GRANTS.bump();
                (over, undelivered) = (Over::Other, true);
                continue;
            }
            Ok(Door::Shut(verdict)) => verdict,
            Err(e) => {
                _ = finish::refuse_queue(ctx, db, key.name(), &e.to_string());
                return Err(e);
            }
        };
        match shut {
            Verdict::Expired => time_out_first(ctx, db, key.name()),
            Verdict::Later(at) if !undelivered => return Ok(Handed::NotNow(at)),
            Verdict::Later(at) => {
                later = Some(at);
                break;
            }
            Verdict::Refuse(text) => {
                // A slice now; a check refuses the rest (the queue is left non-empty).
                finish::refuse_queue(ctx, db, key.name(), &text);
                break;
            }
            Verdict::Go => {}
        }
    }
    if later.is_none() && queues::queue_len(db, key.name()) > 0 {
        // Waits past the slice, or of another kind (the key, once free, is theirs): a
        // check (`expiry.rs`) serves them, at once.
        later = Some(node::now_ms());
        if !undelivered {
            return Ok(Handed::NotNow(node::now_ms()));
        }
    }
    if undelivered {
        // The holding written for nobody ends here, replicated as a force release.
        key.delete(Replicate::ForceRelease)?;
        publish::release_message(ctx, key.name())?;
        return Ok(Handed::Gone(later));
    }
    Ok(Handed::Nobody)
}

/// The first waiter of `key` was just written the holding with `token`: it leaves the
/// queue and gets the token; false if the grant reached nobody.
fn grant(
    ctx: *mut raw::RedisModuleCtx,
    db: registry::Db,
    key: &[u8],
    token: i64,
) -> Result<bool, LockError> {
    let Some(waiter) = queues::pop_first(db, key, Family::Lock) else {
        return Ok(true);
    };
    let delivered = finish::grant(ctx, db, key, waiter, token)?;
    if delivered {
        counters::HANDOFFS.bump();
        if script_turns::turns_on() {
            queues::native_granted(db, key);
        }
    }
    Ok(delivered)
}

/// The first waiter of `key` is past its `WAIT` limit: it gets nil.
fn time_out_first(ctx: *mut raw::RedisModuleCtx, db: registry::Db, key: &[u8]) {
    if let Some(waiter) = queues::pop_first(db, key, Family::Lock) {
        finish::end(ctx, &waiter, Outcome::TimedOut);
        counters::WAIT_TIMEOUTS.bump();
    }
}

/// The last hold of the lock in `key` is gone (the key still holds it, as `over` says: its
/// owner's exact lock, replaced in place, or anything): hand the lock to the first waiter if
/// the gate lets it, or delete it, replicated as `how` says, and publish the release.
/// `in_command`: inside a client's command (not a timer).
pub fn end_holding(
    ctx: *mut raw::RedisModuleCtx,
    key: &LockKey,
    (how, over): (Replicate, Over),
    in_command: bool,
) -> Result<Handed, LockError> {
    // A release replayed from the master deletes, as it did there; a replica's own
    // waiters (there are none: a replica refuses them) are not its master's.
    let handed = if queues::any() && !node::from_replication(ctx) {
        let db = node::selected_db(ctx);
        match script_turns::scripts_turn(ctx, db, key.name())? {
            Some(until) => Handed::NotNow(until),
            None => hand_off(ctx, db, key, over, in_command)?,
        }
    } else {
        Handed::Nobody
    };
    if handed == Handed::Nobody && script_turns::turns_on() {
        queues::forget_turns(node::selected_db(ctx), key.name());
    }
    if matches!(handed, Handed::Nobody | Handed::NotNow(_)) {
        key.delete(how)?;
        // In a cluster the master's message already reached every node (or, sharded, every
        // node of the shard): a replica that replays the release does not send it again.
        if !node::replayed_in_cluster(ctx) {
            publish::release_message(ctx, key.name())?;
        }
    }
    Ok(handed)
}
