/* LOCK.RAISE key owner token floor */
//! Raises this node's token counter to at least `floor`, for the holder of `key`: how a
//! RedLock that won with the largest of its servers' tokens makes every server it holds
//! issue more afterwards, so that any later majority (which shares a server with this one)
//! gets a higher token.
//!
//! The raise is learned as any token seen in the data is (`TokenClock::learn`): a floor
//! more than the learning bound past the wall clock is not learned, and the reply (the
//! counter, below `floor`) says so. It is replicated verbatim: a replica or an AOF replay
//! learns the floor the same bounded way, without the holder check (the master made it).

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::host::{config, node};
use crate::store::{LockKey, Mode};
use rlock_core::error::LockError;
use rlock_core::parse::raise::parse;
use rlock_core::reply::Reply;
use rlock_core::token::TOKENS;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let parsed = parse(args.bytes())?;
    if !node::from_replication(ctx) {
        let key = LockKey::open(ctx, args.key()?, Mode::Read)?;
        let held = key.read_as(&args.name(2)?)?.is_some_and(|holding| {
            holding.is_held_by(parsed.owner) && holding.token == parsed.token
        });
        if !held {
            return Ok(Reply::Nil);
        }
    }
    let raised = TOKENS.last() < parsed.floor && TOKENS.learn(parsed.floor, config::token_gap());
    if raised && !node::from_replication(ctx) {
        replicate_verbatim(ctx);
    }
    Ok(Reply::Integer(TOKENS.last()))
}

/// Sends the command as it came to the replicas and the AOF.
fn replicate_verbatim(ctx: *mut raw::RedisModuleCtx) {
    if let Some(verbatim) = unsafe { raw::RedisModule_ReplicateVerbatim } {
        unsafe { verbatim(ctx) };
    }
}
