/* LATCH.WAIT key [WAIT ms] [TO client-id] */
//! Answers `[done, 1]` when a countdown latch is at zero (or has no count), else queues a
//! ticket in its queue whose outcome (1, or 0 when `WAIT` runs out) comes as for
//! `LOCK.WAIT` (docs/commands/latch.wait.md).

use redis_module::raw;

use crate::commands::dispatch::{reply_pair, Args};
use crate::handoff::latch_serve;
use crate::handoff::ticket_wait::{self, Route};
use crate::host::{gate, node};
use crate::store::{LockKey, Mode};
use crate::waits::{receiver, tickets};
use rlock_core::error::LockError;
use rlock_core::parse::latch;
use rlock_core::reply::Reply;
use rlock_core::rwlock::Kind;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let (wait, to) = latch::wait_args(args.bytes(), node::now_ms())?;
    gate::client_writes(ctx)?;
    let key = LockKey::open(ctx, args.key()?, Mode::Read)?;
    if latch_serve::open(key.read_latch()?) {
        return reply_pair(ctx, c"done", 1);
    }
    let me = tickets::me(ctx)?;
    let to = receiver::choose(ctx, &me, to, "LATCH.WAIT")?;
    let db = node::selected_db(ctx);
    let route = Route { sender: &me, to };
    let id = ticket_wait::queue(ctx, (db, &key), (b"", Kind::Latch), (0, wait), None, route)?;
    reply_pair(ctx, c"queued", i64::try_from(id).unwrap_or(i64::MAX))
}
