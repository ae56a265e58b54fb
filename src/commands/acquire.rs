/* LOCK.ACQUIRE key owner [LEASE ms] [WAIT ms] */

use redis_module::raw;

use crate::args::{self, Options};
use crate::dispatch::Args;
use crate::error::{LockError, Opt};
use crate::handoff;
use crate::lock::{self, AcquireStep, Holding};
use crate::registry::Db;
use crate::reply::Reply;
use crate::store::{LockEntry, LockKey, Mode, Name, Over};
use crate::token::{self, TOKENS};
use crate::{config, counters, expiry, gate, node, waiting};

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
    // One clock reading: the lease's deadline in ms, a fresh token in µs.
    let now_us = token::now_us();
    let now = now_us.div_euclid(1000);
    let parsed = parse(args.bytes(), now)?;
    let lease = parsed.options.lease.unwrap_or_else(config::default_lease);
    let key = LockKey::open(ctx, args.key()?, Mode::Write)?;
    let owner = args.name(2)?;
    let db = node::selected_db(ctx);
    // During the failover delay a lock this node does not have is granted to nobody.
    let fenced = gate::fenced_until(now).is_some();
    let current = match key.read_as(&owner)? {
        None if !fenced => serve_queue_first(ctx, db, &key, &owner)?,
        current => current,
    };
    let deadline_ms = now.saturating_add(lease);
    let (holds, token, over, counter) = match lock::acquire(current.as_ref(), parsed.owner) {
        AcquireStep::Fresh if !fenced => {
            let token = TOKENS
                .issue(now_us)
                .map_err(|_| LockError::TokensExhausted)?;
            (1, token, Over::Nothing, &counters::ACQUIRED)
        }
        AcquireStep::Reenter { count, token } => (count, token, Over::Itself, &counters::REENTERED),
        // Inside MULTI/EXEC or a script a client cannot block: WAIT acts as no WAIT.
        AcquireStep::Fresh | AcquireStep::Contended => match parsed.options.wait {
            Some(wait) if node::can_block(ctx) => {
                waiting::wait(ctx, db, &key, parsed.owner, lease, wait)?;
                return Ok(Reply::Sent);
            }
            _ => {
                counters::CONTENDED.bump();
                return Ok(Reply::Nil);
            }
        },
        AcquireStep::CountOverflow => return Err(LockError::CountOverflow),
    };
    let holding = LockEntry {
        owner,
        holds,
        token,
        deadline_ms,
    };
    key.write_holding(&holding, over)?;
    expiry::lease_moved(ctx, key.name(), deadline_ms);
    counter.bump();
    Ok(Reply::Integer(token))
}

/// A lock freed behind the module's back goes to its queue before any newcomer; returns
/// the lock as it is then.
fn serve_queue_first(
    ctx: *mut raw::RedisModuleCtx,
    db: Db,
    key: &LockKey,
    owner: &Name<'_>,
) -> Result<Option<Holding>, LockError> {
    let handed = handoff::hand_off(ctx, db, key, Over::Nothing)?;
    if handed.is_none() {
        return Ok(None);
    }
    expiry::handed(ctx, key.name(), handed);
    key.read_as(owner)
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
