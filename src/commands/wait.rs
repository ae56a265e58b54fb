/* LOCK.WAIT key owner [LEASE ms] [WAIT ms] [TO client-id] */
//! Acquires like `LOCK.ACQUIRE`, or queues a *ticket* in the same FIFO and answers at once
//! with its wait id; the wait's outcome comes later, pushed to the caller's channel
//! `__rlock__:<client id>` (RESP3), or, with `TO`, into the mailbox of that connection,
//! read with `LOCK.GRANTS` (any protocol). See docs/commands/lock.wait.md.

use redis_module::raw;

use crate::commands::dispatch::{reply_pair as reply, Args};
use crate::handoff::door::Attempt;
use crate::handoff::take;
use crate::handoff::ticket_wait::{self, Route};
use crate::host::{config, gate, node};
use crate::waits::{receiver, tickets};
use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::parse::wait::parse;
use rlock_core::reply::Reply;
use rlock_core::rwlock::Kind;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let parsed = parse(args.bytes(), node::now_ms())?;
    gate::client_writes(ctx)?;
    let me = tickets::me(ctx)?;
    let to = receiver::choose(ctx, &me, parsed.to, "LOCK.WAIT")?;
    let lease = parsed.options.lease.unwrap_or_else(config::default_lease);
    let (key, db, held_back) =
        match take::attempt(ctx, args.key()?, (args.name(2)?, parsed.owner), lease)? {
            Attempt::Held(token) => return reply(ctx, c"held", token),
            Attempt::Contended { key, db, held_back } => (key, db, held_back),
        };
    let wait = parsed.options.wait.unwrap_or(0);
    let route = Route { sender: &me, to };
    let id = ticket_wait::queue(
        ctx,
        (db, &key),
        (parsed.owner, Kind::Lock),
        (lease, wait),
        held_back,
        route,
    )?;
    counters::CONTENDED.bump();
    reply(ctx, c"queued", i64::try_from(id).unwrap_or(i64::MAX))
}
