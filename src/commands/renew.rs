/* LOCK.RENEW key owner [LEASE ms] */

use redis_module::raw;

use crate::args;
use crate::error::{LockError, Opt};
use crate::store::LockKey;
use crate::{config, info, waiters};

use super::{Args, Reply};

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

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let now = waiters::now_ms();
    let parsed = parse(args.bytes(), now)?;
    let key = LockKey::open(ctx, args.key()?, true)?;
    let owner = args.name(2)?;
    match key.read_as(&owner)? {
        Some(holding) if holding.is_held_by(parsed.owner) => {
            let lease = parsed.lease.unwrap_or_else(config::default_lease);
            key.set_deadline(now.saturating_add(lease))?;
            info::RENEWED.bump();
            Ok(Reply::Integer(1))
        }
        _ => Ok(Reply::Integer(0)),
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
