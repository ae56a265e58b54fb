/* LOCK.APPLY key owner holds token unix-ms */
//! How a master replicates a new or reentered holding: one deterministic command that
//! makes the key exactly `{owner: holds, @token: token}` (no `@token` when 0) with the
//! lease ending at `unix-ms`, instead of `DEL` + `HSET` + `PEXPIREAT` in `MULTI`/`EXEC`.
//! Replicas and AOF replays run it; a client gets an error.

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::host::{config, node};
use crate::store::{LockEntry, LockKey, Mode};
use rlock_core::error::LockError;
use rlock_core::parse::apply::parse;
use rlock_core::reply::Reply;
use rlock_core::token::TOKENS;

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
