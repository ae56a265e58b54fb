/* RWLOCK.ACQUIRE key owner READ|WRITE [LEASE ms] [WAIT ms] */

use redis_module::raw;

use rlock_core::error::LockError;
use rlock_core::parse::{acquire, rw};
use rlock_core::reply::Reply;
use rlock_core::rwlock::Kind;

use crate::commands::dispatch::Args;
use crate::handoff::{blocked_wait, rw_take};
use crate::host::{config, gate, node};

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let (mode, rest) = rw::split_mode(args.bytes())?;
    let parsed = acquire::parse(&rest, node::now_ms())?;
    gate::client_writes(ctx)?;
    let lease = parsed.options.lease.unwrap_or_else(config::default_lease);
    let attempt = rw_take::attempt(ctx, args.key()?, args.name(2)?, (mode, lease))?;
    let waiter = (parsed.owner, Kind::Rw(mode));
    blocked_wait::reply_or_wait(ctx, attempt, waiter, (lease, parsed.options.wait))
}
