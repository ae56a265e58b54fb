/* LATCH.SET key count */
//! Sets a countdown latch's count if it has none, as Redisson's `trySetCount`
//! (docs/commands/latch.set.md).

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::host::gate;
use crate::store::latch::{latch_message, set_count};
use crate::store::{LockKey, Mode};
use rlock_core::error::LockError;
use rlock_core::parse::latch;
use rlock_core::reply::Reply;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let count = latch::set(args.bytes())?;
    gate::client_writes(ctx)?;
    let name = args.key()?;
    if LockKey::open(ctx, name, Mode::Read)?
        .read_latch()?
        .is_some()
    {
        return Ok(Reply::Integer(0));
    }
    set_count(ctx, name, count)?;
    latch_message(ctx, redis_module::RedisString::string_as_slice(name), b"1")?;
    Ok(Reply::Integer(1))
}
