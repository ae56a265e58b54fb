/* LOCK.ACQUIRE key owner [LEASE ms] [WAIT ms] */

use redis_module::raw;

use rlock_core::args::{self, Options};
use rlock_core::counters;
use rlock_core::error::{LockError, Opt};
use rlock_core::reply::Reply;

use crate::commands::dispatch::Args;
use crate::handoff::{blocked_wait, take};
use crate::host::{config, gate, node};

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
    let owner = (args.name(2)?, parsed.owner);
    let (key, db, held_back) = match take::attempt(ctx, args.key()?, owner, lease)? {
        take::Attempt::Held(token) => return Ok(Reply::Integer(token)),
        take::Attempt::Contended { key, db, held_back } => (key, db, held_back),
    };
    // Inside MULTI/EXEC or a script a client cannot block: WAIT acts as no WAIT.
    match parsed.options.wait {
        Some(wait) if node::can_block(ctx) => {
            blocked_wait::wait(ctx, db, &key, parsed.owner, (lease, wait), held_back)?;
            Ok(Reply::Sent)
        }
        _ => {
            counters::CONTENDED.bump();
            Ok(Reply::Nil)
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
