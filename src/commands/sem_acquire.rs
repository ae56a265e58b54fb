/* SEM.ACQUIRE key owner permits [LEASE ms] [WAIT ms] */

use redis_module::raw;

use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::parse::{acquire, sem};
use rlock_core::reply::Reply;
use rlock_core::rwlock::Kind;

use crate::commands::dispatch::Args;
use crate::handoff::blocked_wait;
use crate::handoff::sem_take::{self, SemAttempt};
use crate::host::{config, gate, node};

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let (permits, rest) = sem::split_permits(args.bytes())?;
    let parsed = acquire::parse(&rest, node::now_ms())?;
    gate::client_writes(ctx)?;
    let lease = parsed.options.lease.unwrap_or_else(config::default_lease);
    let owner = args.name(2)?;
    let (key, db, check_at) = match sem_take::attempt(ctx, args.key()?, owner, (permits, lease))? {
        SemAttempt::Held(token) => return Ok(Reply::Integer(token)),
        SemAttempt::Contended { key, db, check_at } => (key, db, check_at),
    };
    // Inside MULTI/EXEC or a script a client cannot block: WAIT acts as no WAIT.
    match parsed.options.wait {
        Some(wait) if node::can_block(ctx) => {
            let kind = Kind::Permits(u32::try_from(permits).map_err(|_| LockError::CountOverflow)?);
            blocked_wait::wait(ctx, db, &key, (parsed.owner, kind), (lease, wait), check_at)?;
            Ok(Reply::Sent)
        }
        _ => {
            counters::CONTENDED.bump();
            Ok(Reply::Nil)
        }
    }
}
