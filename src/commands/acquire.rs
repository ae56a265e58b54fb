/* LOCK.ACQUIRE key owner [LEASE ms] [WAIT ms] */

use redis_module::raw;

use rlock_core::counters;
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
    let (key, db, held_back) = match take::attempt(ctx, args.key()?, owner, lease)? {
        take::Attempt::Held(token) => return Ok(Reply::Integer(token)),
        take::Attempt::Contended { key, db, held_back } => (key, db, held_back),
    };
    // Inside MULTI/EXEC or a script a client cannot block: WAIT acts as no WAIT.
    match parsed.options.wait {
        Some(wait) if node::can_block(ctx) => {
            let owner = (parsed.owner, Kind::Lock);
            blocked_wait::wait(ctx, db, &key, owner, (lease, wait), held_back)?;
            Ok(Reply::Sent)
        }
        _ => {
            counters::CONTENDED.bump();
            Ok(Reply::Nil)
        }
    }
}
