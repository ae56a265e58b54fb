/* LOCK.RENEW key owner [LEASE ms] [TOKEN t] */

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::handoff::expiry;
use crate::host::{config, gate, node};
use crate::store::{LockKey, Mode};
use rlock_core::args;
use rlock_core::counters;
use rlock_core::error::{LockError, Opt};
use rlock_core::reply::Reply;

#[derive(Debug, PartialEq, Eq)]
pub struct RenewArgs<'a> {
    pub owner: &'a [u8],
    pub lease: Option<i64>,
    /// Renew only the holding with this token.
    pub token: Option<i64>,
}

/// Parses `argv` (command name first); `now_ms` bounds LEASE.
pub fn parse<'a>(argv: &[&'a [u8]], now_ms: i64) -> Result<RenewArgs<'a>, LockError> {
    let [_, _key, owner, rest @ ..] = argv else {
        return Err(LockError::WrongArity);
    };
    let owner = args::owner(owner)?;
    let options = args::options(rest, &[Opt::Lease, Opt::Token], now_ms)?;
    Ok(RenewArgs {
        owner,
        lease: options.lease,
        token: options.token,
    })
}

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let now = node::now_ms();
    let parsed = parse(args.bytes(), now)?;
    gate::client_writes(ctx)?;
    // After a stall the node may have been failed over: it extends no lease until it knows
    // its replicas again.
    gate::renewals(now)?;
    let key = LockKey::open(ctx, args.key()?, Mode::Write)?;
    let owner = args.name(2)?;
    match key.read_as(&owner)? {
        Some(holding)
            if holding.is_held_by(parsed.owner)
                && parsed.token.is_none_or(|t| holding.token == t) =>
        {
            let lease = parsed.lease.unwrap_or_else(config::default_lease);
            let deadline_ms = now.saturating_add(lease);
            key.set_deadline(deadline_ms)?;
            expiry::lease_moved(ctx, key.name(), deadline_ms);
            counters::RENEWED.bump();
            Ok(Reply::Integer(1))
        }
        _ => {
            counters::RENEWALS_LOST.bump();
            Ok(Reply::Integer(0))
        }
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
    fn token_may_come_with_or_without_lease() {
        let r = parse(
            &[b"LOCK.RENEW", b"k", b"o", b"TOKEN", b"9", b"LEASE", b"5"],
            0,
        )
        .unwrap();
        assert_eq!((r.lease, r.token), (Some(5), Some(9)));
        let r = parse(&[b"LOCK.RENEW", b"k", b"o", b"token", b"0"], 0).unwrap();
        assert_eq!((r.lease, r.token), (None, Some(0)));
    }

    #[test]
    fn wait_is_not_an_option_of_renew() {
        let e = parse(&[b"LOCK.RENEW", b"k", b"o", b"WAIT", b"5"], 0).unwrap_err();
        assert!(matches!(e, LockError::UnknownOption { .. }));
    }
}
