/* LOCK.FORCERELEASE key */

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::handoff::{door, expiry};
use crate::host::gate;
use crate::store::{LockKey, Mode, Over, Replicate};
use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::parse::forcerelease::parse;
use rlock_core::reply::Reply;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    parse(args.bytes())?;
    gate::client_writes(ctx)?;
    let key = LockKey::open(ctx, args.key()?, Mode::Write)?;
    if key.read()?.is_none() {
        return Ok(Reply::Integer(0));
    }
    let handed = door::end_holding(ctx, &key, (Replicate::ForceRelease, Over::Other), true)?;
    expiry::handed(ctx, key.name(), handed);
    counters::FORCE_RELEASES.bump();
    Ok(Reply::Integer(1))
}
