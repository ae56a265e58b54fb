/* SEM.APPLY key owner permits token unix-ms */
//! How a master replicates a change of one holder of a semaphore: one deterministic
//! command that makes the owner's holding exactly so (0 permits: gone), `@used` moved by
//! the change. Replicas and AOF replays run it; a client gets an error.

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::host::{config, node};
use crate::store::{LockKey, Mode, SemEntry};
use rlock_core::args::{self, strict_i64};
use rlock_core::error::LockError;
use rlock_core::reply::Reply;
use rlock_core::token::TOKENS;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let [_, _, owner, numbers @ ..] = args.bytes() else {
        return Err(LockError::WrongArity);
    };
    let numbers: Vec<i64> = numbers.iter().filter_map(|n| strict_i64(n)).collect();
    let [permits, token, deadline_ms] = numbers[..] else {
        return Err(LockError::BadSemApply);
    };
    if permits < 0 || token < 0 {
        return Err(LockError::BadSemApply);
    }
    args::owner(owner)?;
    if !node::from_replication(ctx) {
        return Err(LockError::SemApplyFromClient);
    }
    let key = LockKey::open(ctx, args.key()?, Mode::Write)?;
    let entry = SemEntry {
        owner: args.name(2)?,
        permits,
        token,
        deadline_ms,
    };
    key.set_sem_holder(&entry)?;
    TOKENS.learn(token, config::token_gap());
    Ok(Reply::Ok)
}
