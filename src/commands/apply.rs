/* LOCK.APPLY key owner holds token unix-ms */
//! How a master replicates a new or reentered holding: one deterministic command that
//! makes the key exactly `{owner: holds, @token: token}` (no `@token` when 0) with the
//! lease ending at `unix-ms`, instead of `DEL` + `HSET` + `PEXPIREAT` in `MULTI`/`EXEC`.
//! Replicas and AOF replays run it; a client gets an error.

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::host::{config, node};
use crate::store::{LockEntry, LockKey, Mode};
use rlock_core::args::{self, strict_i64};
use rlock_core::error::LockError;
use rlock_core::reply::Reply;
use rlock_core::token::TOKENS;

#[derive(Debug, PartialEq, Eq)]
pub struct ApplyArgs {
    pub holds: i64,
    pub token: i64,
    pub deadline_ms: i64,
}

/// Parses `argv` (command name first).
pub fn parse(argv: &[&[u8]]) -> Result<ApplyArgs, LockError> {
    let [_, _key, owner, holds, token, deadline] = argv else {
        return Err(LockError::WrongArity);
    };
    args::owner(owner)?;
    let holds = strict_i64(holds).filter(|h| *h > 0);
    let token = strict_i64(token).filter(|t| *t >= 0);
    match (holds, token, strict_i64(deadline)) {
        (Some(holds), Some(token), Some(deadline_ms)) => Ok(ApplyArgs {
            holds,
            token,
            deadline_ms,
        }),
        _ => Err(LockError::BadApply),
    }
}

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let parsed = parse(args.bytes())?;
    if !node::from_replication(ctx) {
        return Err(LockError::ApplyFromClient);
    }
    let owner = args.name(2)?;
    let key = LockKey::open(ctx, args.key()?, Mode::Write)?;
    let holding = LockEntry {
        owner,
        holds: parsed.holds,
        token: parsed.token,
        deadline_ms: parsed.deadline_ms,
    };
    key.write_holding(&holding, key.over_for(owner.bytes))?;
    // Bounded as any token in the data: a reentered hand-made lock replicates its @token.
    TOKENS.learn(parsed.token, config::token_gap());
    Ok(Reply::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_five_arguments_are_required() {
        assert_eq!(
            parse(&[b"LOCK.APPLY", b"k", b"o", b"1", b"7"]),
            Err(LockError::WrongArity)
        );
    }

    #[test]
    fn values_a_master_never_sends_are_refused() {
        let bad: &[&[&[u8]]] = &[
            &[b"LOCK.APPLY", b"k", b"o", b"0", b"7", b"1"],
            &[b"LOCK.APPLY", b"k", b"o", b"1", b"-1", b"1"],
            &[b"LOCK.APPLY", b"k", b"o", b"1", b"7", b"x"],
        ];
        for argv in bad {
            assert_eq!(parse(argv), Err(LockError::BadApply));
        }
    }

    #[test]
    fn a_valid_holding_parses() {
        let a = parse(&[b"LOCK.APPLY", b"k", b"o", b"2", b"0", b"1700000000000"]).unwrap();
        assert_eq!(
            a,
            ApplyArgs {
                holds: 2,
                token: 0,
                deadline_ms: 1_700_000_000_000
            }
        );
    }
}
