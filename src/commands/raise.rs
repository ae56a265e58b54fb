/* LOCK.RAISE key owner token floor */
//! Raises this node's token counter to at least `floor`, for the holder of `key`: how a
//! RedLock that won with the largest of its servers' tokens makes every server it holds
//! issue more afterwards, so that any later majority (which shares a server with this one)
//! gets a higher token.
//!
//! The raise is learned as any token seen in the data is (`TokenClock::learn`): a floor
//! more than the learning bound past the wall clock is not learned, and the reply (the
//! counter, below `floor`) says so. It is replicated verbatim: a replica or an AOF replay
//! learns the floor the same bounded way, without the holder check (the master made it).

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::host::{config, node};
use crate::store::{LockKey, Mode};
use rlock_core::args::{self, strict_i64};
use rlock_core::error::LockError;
use rlock_core::reply::Reply;
use rlock_core::token::TOKENS;

#[derive(Debug, PartialEq, Eq)]
pub struct RaiseArgs<'a> {
    pub owner: &'a [u8],
    /// The token of the caller's holding.
    pub token: i64,
    /// The least value the counter must reach.
    pub floor: i64,
}

/// Parses `argv` (command name first).
pub fn parse<'a>(argv: &[&'a [u8]]) -> Result<RaiseArgs<'a>, LockError> {
    let [_, _key, owner, token, floor] = argv else {
        return Err(LockError::WrongArity);
    };
    let owner = args::owner(owner)?;
    let number = |raw: &[u8]| strict_i64(raw).filter(|n| *n >= 0);
    match (number(token), number(floor)) {
        (Some(token), Some(floor)) => Ok(RaiseArgs {
            owner,
            token,
            floor,
        }),
        _ => Err(LockError::BadRaise),
    }
}

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let parsed = parse(args.bytes())?;
    if !node::from_replication(ctx) {
        let key = LockKey::open(ctx, args.key()?, Mode::Read)?;
        let held = key.read_as(&args.name(2)?)?.is_some_and(|holding| {
            holding.is_held_by(parsed.owner) && holding.token == parsed.token
        });
        if !held {
            return Ok(Reply::Nil);
        }
    }
    let raised = TOKENS.last() < parsed.floor && TOKENS.learn(parsed.floor, config::token_gap());
    if raised && !node::from_replication(ctx) {
        replicate_verbatim(ctx);
    }
    Ok(Reply::Integer(TOKENS.last()))
}

/// Sends the command as it came to the replicas and the AOF.
fn replicate_verbatim(ctx: *mut raw::RedisModuleCtx) {
    if let Some(verbatim) = unsafe { raw::RedisModule_ReplicateVerbatim } {
        unsafe { verbatim(ctx) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_four_arguments_are_required() {
        assert_eq!(
            parse(&[b"LOCK.RAISE", b"k", b"o", b"7"]),
            Err(LockError::WrongArity)
        );
    }

    #[test]
    fn token_and_floor_are_non_negative_integers() {
        let bad: &[&[&[u8]]] = &[
            &[b"LOCK.RAISE", b"k", b"o", b"-1", b"7"],
            &[b"LOCK.RAISE", b"k", b"o", b"1", b"x"],
            &[b"LOCK.RAISE", b"k", b"o", b"01", b"7"],
        ];
        for argv in bad {
            assert_eq!(parse(argv), Err(LockError::BadRaise));
        }
        let ok = parse(&[b"LOCK.RAISE", b"k", b"o", b"3", b"90"]).unwrap();
        assert_eq!((ok.owner, ok.token, ok.floor), (&b"o"[..], 3, 90));
    }

    #[test]
    fn a_bad_owner_is_refused() {
        let e = parse(&[b"LOCK.RAISE", b"k", b"@x", b"1", b"2"]).unwrap_err();
        assert!(matches!(e, LockError::InvalidOwner(_)));
    }
}
