/* LOCK.ACQUIRE key owner [LEASE ms] [WAIT ms] */

use redis_module::raw;

use crate::args::{self, Options};
use crate::error::{LockError, Opt};
use crate::lock::{self, AcquireStep};
use crate::store::{Apply, LockKey};
use crate::{blocked, config, info, token, waiters, TOKENS};

use super::{Args, Reply};

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
    let key = LockKey::open(ctx, args.key()?, true)?;
    let owner = args.name(2)?;
    let db = waiters::selected_db(ctx);
    let mut current = key.read_as(&owner)?;
    // A lock freed behind the module's back goes to its queue before any newcomer.
    if current.is_none() && waiters::hand_off(db, &key, false)?.is_some() {
        current = key.read_as(&owner)?;
    }
    match lock::acquire(current.as_ref(), parsed.owner) {
        AcquireStep::Fresh => {
            let token = TOKENS.issue(now_us);
            let holding = Apply {
                owner,
                holds: 1,
                token,
                deadline_ms: now.saturating_add(lease),
            };
            key.apply(&holding, false, false)?;
            info::ACQUIRED.bump();
            Ok(Reply::Integer(token))
        }
        AcquireStep::Reenter { count, token } => {
            let holding = Apply {
                owner,
                holds: count,
                token,
                deadline_ms: now.saturating_add(lease),
            };
            key.apply(&holding, false, true)?;
            info::REENTERED.bump();
            Ok(Reply::Integer(token))
        }
        AcquireStep::Contended => match parsed.options.wait {
            Some(wait) if can_block(ctx) => {
                blocked::block(ctx, db, &key, parsed.owner, lease, wait)?;
                Ok(Reply::Sent)
            }
            _ => Ok(Reply::Nil),
        },
        AcquireStep::CountOverflow => Err(LockError::CountOverflow),
    }
}

/// Inside MULTI/EXEC or a script a client cannot block: WAIT acts as no WAIT.
fn can_block(ctx: *mut raw::RedisModuleCtx) -> bool {
    let flags = unsafe { raw::RedisModule_GetContextFlags.map_or(0, |f| f(ctx)) } as u32;
    let no_blocking = raw::REDISMODULE_CTX_FLAGS_MULTI
        | raw::REDISMODULE_CTX_FLAGS_LUA
        | raw::REDISMODULE_CTX_FLAGS_DENY_BLOCKING;
    flags & no_blocking == 0
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
