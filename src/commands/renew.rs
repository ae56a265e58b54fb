/* LOCK.RENEW key owner [LEASE ms] */

use redis_module::{raw, Context, RedisResult, RedisString, RedisValue};

use crate::args;
use crate::error::{LockError, Opt};
use crate::store::{LockKey, Name};
use crate::{config, guard, info, waiters};

#[derive(Debug, PartialEq, Eq)]
pub struct RenewArgs<'a> {
    pub owner: &'a [u8],
    pub lease: Option<i64>,
}

/// Parses `argv` (command name first); `now_ms` bounds LEASE.
pub fn parse<'a>(argv: &[&'a [u8]], now_ms: i64) -> Result<RenewArgs<'a>, LockError> {
    let [_, _key, owner, rest @ ..] = argv else {
        return Err(LockError::WrongArity);
    };
    Ok(RenewArgs {
        owner: args::owner(owner)?,
        lease: args::options(rest, &[Opt::Lease], now_ms)?.lease,
    })
}

pub fn handler(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    guard::command("LOCK.RENEW", || run(ctx.ctx, &args))
}

fn run(ctx: *mut raw::RedisModuleCtx, args: &[RedisString]) -> Result<RedisValue, LockError> {
    let now = waiters::now_ms();
    let parsed = parse(&super::argv(args), now)?;
    let key = LockKey::open(ctx, super::key_arg(args)?, true)?;
    let owner = Name::arg(args.get(2).ok_or(LockError::WrongArity)?);
    match key.read_as(&owner)? {
        Some(holding) if holding.is_held_by(parsed.owner) => {
            let lease = parsed.lease.unwrap_or_else(config::default_lease);
            key.set_deadline(now.saturating_add(lease))?;
            info::RENEWED.bump();
            Ok(RedisValue::Integer(1))
        }
        _ => Ok(RedisValue::Integer(0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_is_optional() {
        let r = parse(&[b"LOCK.RENEW", b"k", b"o"], 0).unwrap();
        assert_eq!(r.lease, None);
        let r = parse(&[b"LOCK.RENEW", b"k", b"o", b"lease", b"5"], 0).unwrap();
        assert_eq!(r.lease, Some(5));
    }

    #[test]
    fn wait_is_not_an_option_of_renew() {
        let e = parse(&[b"LOCK.RENEW", b"k", b"o", b"WAIT", b"5"], 0).unwrap_err();
        assert!(matches!(e, LockError::UnknownOption { .. }));
    }
}
