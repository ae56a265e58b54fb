/* SEM.WAIT key owner permits [LEASE ms] [WAIT ms] [TO client-id] */
//! Acquires like `SEM.ACQUIRE`, or queues a ticket in the same FIFO and answers at once
//! with its wait id; the outcome comes as for `LOCK.WAIT` (docs/commands/sem.wait.md).

use redis_module::raw;

use crate::commands::dispatch::{reply_pair, Args};
use crate::handoff::door::Attempt;
use crate::handoff::sem_take;
use crate::handoff::ticket_wait::{self, Route};
use crate::host::{config, gate, node};
use crate::waits::{receiver, tickets};
use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::parse::{sem, wait::parse};
use rlock_core::reply::Reply;
use rlock_core::rwlock::Kind;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let (permits, rest) = sem::split_permits(args.bytes())?;
    let parsed = parse(&rest, node::now_ms())?;
    gate::client_writes(ctx)?;
    let me = tickets::me(ctx)?;
    let to = receiver::choose(ctx, &me, parsed.to, "SEM.WAIT")?;
    let lease = parsed.options.lease.unwrap_or_else(config::default_lease);
    let (key, db, held_back) =
        match sem_take::attempt(ctx, args.key()?, args.name(2)?, (permits, lease))? {
            Attempt::Held(token) => return reply_pair(ctx, c"held", token),
            Attempt::Contended { key, db, held_back } => (key, db, held_back),
        };
    let wait = parsed.options.wait.unwrap_or(0);
    let route = Route { sender: &me, to };
    let kind = Kind::Permits(u32::try_from(permits).map_err(|_| LockError::CountOverflow)?);
    let owner = (parsed.owner, kind);
    let id = ticket_wait::queue(ctx, (db, &key), owner, (lease, wait), held_back, route)?;
    counters::CONTENDED.bump();
    reply_pair(ctx, c"queued", i64::try_from(id).unwrap_or(i64::MAX))
}
