/* LOCK.ACQUIRE key owner [LEASE ms] [WAIT ms] */

use redis_module::raw;

use crate::args::{self, Options};
use crate::dispatch::Args;
use crate::error::{LockError, Opt};
use crate::gate::{self, Verdict};
use crate::handoff::{self, Claim, Door, Handed};
use crate::lock::{self, AcquireStep, Holding};
use crate::registry::Db;
use crate::reply::Reply;
use crate::store::{LockEntry, LockKey, Mode, Name, Over};
use crate::{config, counters, expiry, node, waiting};

#[derive(Debug, PartialEq, Eq)]
pub struct AcquireArgs<'a> {
    pub owner: &'a [u8],
    pub options: Options,
}

/// Parses `argv` (command name first); `now_ms` bounds LEASE and WAIT.
pub fn parse<'a>(argv: &[&'a [u8]], now_ms: i64) -> Result<AcquireArgs<'a>, LockError> {
    let [_, _key, owner, rest @ ..] = argv else {
        return Err(LockError::WrongArity);
    };
    Ok(AcquireArgs {
        owner: args::owner(owner)?,
        options: args::options(rest, &[Opt::Lease, Opt::Wait], now_ms)?,
    })
}

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let parsed = parse(args.bytes(), node::now_ms())?;
    gate::client_writes(ctx)?;
    let lease = parsed.options.lease.unwrap_or_else(config::default_lease);
    let (key, db, held_back) = match attempt(ctx, args, parsed.owner, lease)? {
        Attempt::Held(token) => return Ok(Reply::Integer(token)),
        Attempt::Contended { key, db, held_back } => (key, db, held_back),
    };
    // Inside MULTI/EXEC or a script a client cannot block: WAIT acts as no WAIT.
    match parsed.options.wait {
        Some(wait) if node::can_block(ctx) => {
            waiting::wait(ctx, db, &key, parsed.owner, (lease, wait), held_back)?;
            Ok(Reply::Sent)
        }
        _ => {
            counters::CONTENDED.bump();
            Ok(Reply::Nil)
        }
    }
}

/// What an acquisition found, before any waiting.
pub(super) enum Attempt {
    /// Acquired or reentered: the token.
    Held(i64),
    /// Held by another, or the gate holds a fresh holding back (the failover delay, a
    /// stall...) until `held_back`, if it said.
    Contended {
        key: LockKey,
        db: Db,
        held_back: Option<i64>,
    },
}

/// Acquires or reenters the lock of `args` (key at 1, owner at 2) with a lease of
/// `lease` ms, if it can now.
pub(super) fn attempt(
    ctx: *mut raw::RedisModuleCtx,
    args: &Args<'_>,
    owner_bytes: &[u8],
    lease: i64,
) -> Result<Attempt, LockError> {
    let key = LockKey::open(ctx, args.key()?, Mode::Write)?;
    let owner = args.name(2)?;
    let db = node::selected_db(ctx);
    let current = match key.read_as(&owner)? {
        None => serve_queue_first(ctx, db, &key, &owner)?,
        current => current,
    };
    let held_back = match lock::acquire(current.as_ref(), owner_bytes) {
        AcquireStep::Fresh => match take_free(ctx, &key, owner, lease)? {
            Ok(token) => return Ok(Attempt::Held(token)),
            Err(held_back) => held_back,
        },
        AcquireStep::Reenter { count, token } => {
            let deadline = node::now_ms().saturating_add(lease);
            reenter(ctx, &key, owner, count, token, deadline)?;
            return Ok(Attempt::Held(token));
        }
        AcquireStep::Contended => None,
        AcquireStep::CountOverflow => return Err(LockError::CountOverflow),
    };
    Ok(Attempt::Contended { key, db, held_back })
}

/// A free lock: through the one door, its token; or, when the gate holds it back, when to
/// ask again (if the gate said).
fn take_free(
    ctx: *mut raw::RedisModuleCtx,
    key: &LockKey,
    owner: Name<'_>,
    lease_ms: i64,
) -> Result<Result<i64, Option<i64>>, LockError> {
    let claim = Claim {
        owner,
        lease_ms,
        wait_until: None,
        in_command: true,
    };
    Ok(
        match handoff::fresh_holding(ctx, key, Over::Nothing, &claim)? {
            Door::Held { token, deadline_ms } => {
                expiry::lease_moved(ctx, key.name(), deadline_ms);
                counters::ACQUIRED.bump();
                Ok(token)
            }
            Door::Shut(Verdict::Later(at)) => Err(Some(at)),
            Door::Shut(_) => Err(None),
        },
    )
}

/// The holder acquires again: count + 1, lease reset, same token (not while the node is
/// held back after a stall: a reentry extends the lease).
fn reenter(
    ctx: *mut raw::RedisModuleCtx,
    key: &LockKey,
    owner: Name<'_>,
    holds: i64,
    token: i64,
    deadline_ms: i64,
) -> Result<(), LockError> {
    gate::renewals(node::now_ms())?;
    let holding = LockEntry {
        owner,
        holds,
        token,
        deadline_ms,
    };
    key.write_holding(&holding, Over::Itself)?;
    expiry::lease_moved(ctx, key.name(), deadline_ms);
    counters::REENTERED.bump();
    Ok(())
}

/// A lock freed behind the module's back goes to its queue before any newcomer; returns
/// the lock as it is then.
fn serve_queue_first(
    ctx: *mut raw::RedisModuleCtx,
    db: Db,
    key: &LockKey,
    owner: &Name<'_>,
) -> Result<Option<Holding>, LockError> {
    match handoff::hand_off(ctx, db, key, Over::Nothing, true)? {
        Handed::Nobody | Handed::Gone(None) => Ok(None),
        Handed::NotNow(at) | Handed::Gone(Some(at)) => {
            expiry::arm(ctx, db, key.name(), at);
            Ok(None)
        }
        Handed::To(deadline_ms) => {
            expiry::lease_moved(ctx, key.name(), deadline_ms);
            key.read_as(owner)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_and_owner_are_required() {
        assert_eq!(
            parse(&[b"LOCK.ACQUIRE", b"k"], 0),
            Err(LockError::WrongArity)
        );
    }

    #[test]
    fn options_follow_the_owner() {
        let a = parse(&[b"LOCK.ACQUIRE", b"k", b"me", b"LEASE", b"10"], 0).unwrap();
        assert_eq!(a.owner, b"me");
        assert_eq!(a.options.lease, Some(10));
        assert_eq!(a.options.wait, None);
    }

    #[test]
    fn bad_owner_is_refused_before_options() {
        let e = parse(&[b"LOCK.ACQUIRE", b"k", b"@x", b"LEASE", b"x"], 0).unwrap_err();
        assert!(matches!(e, LockError::InvalidOwner(_)));
    }
}
