/* RWLOCK.APPLY key owner reads writes token unix-ms */
//! How a master replicates a change of one holder of a read-write lock: one deterministic
//! command that makes the owner's holding exactly so (reads and writes 0: gone; no holder
//! left: the key deleted). Replicas and AOF replays run it; a client gets an error.

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::host::{config, node};
use crate::store::{LockKey, Mode, RwEntry};
use rlock_core::args::strict_i64;
use rlock_core::error::LockError;
use rlock_core::parse::rw;
use rlock_core::reply::Reply;
use rlock_core::token::TOKENS;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let [_, _, owner, numbers @ ..] = args.bytes() else {
        return Err(LockError::WrongArity);
    };
    let numbers: Vec<i64> = numbers.iter().filter_map(|n| strict_i64(n)).collect();
    let [reads, writes, token, deadline_ms] = numbers[..] else {
        return Err(LockError::BadRwApply);
    };
    if reads < 0 || writes < 0 || token < 0 {
        return Err(LockError::BadRwApply);
    }
    rw::owner(owner)?;
    if !node::from_replication(ctx) {
        return Err(LockError::RwApplyFromClient);
    }
    let key = LockKey::open(ctx, args.key()?, Mode::Write)?;
    let entry = RwEntry {
        owner: args.name(2)?,
        reads,
        writes,
        token,
        deadline_ms,
    };
    key.set_holder(&entry)?;
    TOKENS.learn(token, config::token_gap());
    Ok(Reply::Ok)
}
