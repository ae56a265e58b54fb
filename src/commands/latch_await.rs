/* LATCH.AWAIT key [WAIT ms] */
//! Answers 1 once a countdown latch is at zero (or has no count), blocking in its queue
//! until then, or 0 when `WAIT` runs out (docs/commands/latch.await.md).

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::handoff::{blocked_wait, latch_serve};
use crate::host::{gate, node};
use crate::store::{LockKey, Mode};
use rlock_core::error::LockError;
use rlock_core::parse::latch;
use rlock_core::reply::Reply;
use rlock_core::rwlock::Kind;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let wait = latch::await_args(args.bytes(), node::now_ms())?;
    gate::client_writes(ctx)?;
    let key = LockKey::open(ctx, args.key()?, Mode::Read)?;
    if latch_serve::open(key.read_latch()?) {
        return Ok(Reply::Integer(1));
    }
    // Inside MULTI/EXEC or a script a client cannot block: the answer is now's.
    if !node::can_block(ctx) {
        return Ok(Reply::Integer(0));
    }
    let db = node::selected_db(ctx);
    blocked_wait::wait(ctx, db, &key, (b"", Kind::Latch), (0, wait), None)?;
    Ok(Reply::Sent)
}
