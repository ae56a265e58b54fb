/* RWLOCK.ACQUIRE key owner READ|WRITE [LEASE ms] [WAIT ms] */

use redis_module::raw;

use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::parse::{acquire, rw};
use rlock_core::reply::Reply;
use rlock_core::rwlock::Kind;

use crate::commands::dispatch::Args;
use crate::handoff::blocked_wait;
use crate::handoff::rw_take::{self, RwAttempt};
use crate::host::{config, gate, node};

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let (mode, rest) = rw::split_mode(args.bytes())?;
    let parsed = acquire::parse(&rest, node::now_ms())?;
    gate::client_writes(ctx)?;
    let lease = parsed.options.lease.unwrap_or_else(config::default_lease);
    let owner = args.name(2)?;
    let (key, db, check_at) = match rw_take::attempt(ctx, args.key()?, owner, (mode, lease))? {
        RwAttempt::Held(token) => return Ok(Reply::Integer(token)),
        RwAttempt::Contended { key, db, check_at } => (key, db, check_at),
    };
    // Inside MULTI/EXEC or a script a client cannot block: WAIT acts as no WAIT.
    match parsed.options.wait {
        Some(wait) if node::can_block(ctx) => {
            let owner = (parsed.owner, Kind::Rw(mode));
            blocked_wait::wait(ctx, db, &key, owner, (lease, wait), check_at)?;
            Ok(Reply::Sent)
        }
        _ => {
            counters::CONTENDED.bump();
            Ok(Reply::Nil)
        }
    }
}
