/* SEM.ACQUIRE key owner permits [LEASE ms] [WAIT ms] */

use redis_module::raw;

use rlock_core::error::LockError;
use rlock_core::parse::{acquire, sem};
use rlock_core::reply::Reply;
use rlock_core::rwlock::Kind;

use crate::commands::dispatch::Args;
use crate::handoff::{blocked_wait, sem_take};
use crate::host::{config, gate, node};

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let (permits, rest) = sem::split_permits(args.bytes())?;
    let parsed = acquire::parse(&rest, node::now_ms())?;
    gate::client_writes(ctx)?;
    let lease = parsed.options.lease.unwrap_or_else(config::default_lease);
    let kind = Kind::Permits(u32::try_from(permits).map_err(|_| LockError::CountOverflow)?);
    let attempt = sem_take::attempt(ctx, args.key()?, args.name(2)?, (permits, lease))?;
    blocked_wait::reply_or_wait(
        ctx,
        attempt,
        (parsed.owner, kind),
        (lease, parsed.options.wait),
    )
}
