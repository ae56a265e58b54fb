/* LOCK.ACQUIRE key owner [LEASE ms] [WAIT ms] */

use redis_module::raw;

use rlock_core::error::LockError;
use rlock_core::parse::acquire::parse;
use rlock_core::reply::Reply;
use rlock_core::rwlock::Kind;

use crate::commands::dispatch::Args;
use crate::handoff::{blocked_wait, take};
use crate::host::{config, gate, node};

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let parsed = parse(args.bytes(), node::now_ms())?;
    gate::client_writes(ctx)?;
    let lease = parsed.options.lease.unwrap_or_else(config::default_lease);
    let owner = (args.name(2)?, parsed.owner);
    let attempt = take::attempt(ctx, args.key()?, owner, lease)?;
    let waiter = (parsed.owner, Kind::Lock);
    blocked_wait::reply_or_wait(ctx, attempt, waiter, (lease, parsed.options.wait))
}
