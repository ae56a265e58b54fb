/* LATCH.COUNT key */
//! A countdown latch's count, 0 when it has none (docs/commands/latch.count.md).

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::store::{LockKey, Mode};
use rlock_core::error::LockError;
use rlock_core::parse::latch;
use rlock_core::reply::Reply;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    latch::key_only(args.bytes())?;
    let count = LockKey::open(ctx, args.key()?, Mode::Read)?.read_latch()?;
    Ok(Reply::Integer(count.unwrap_or(0).max(0)))
}
