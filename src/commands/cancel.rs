/* LOCK.CANCEL key wait-id */
//! Ends a ticket (`LOCK.WAIT`) early. Still queued: it leaves the queue, reply 0 (no
//! outcome will come). Granted into a mailbox (`TO`) and not read yet: taken out of it,
//! reply the token (the caller holds the lock now and releases it). Otherwise nil: no such
//! wait on this key, or its outcome went out already (a pushed grant is the receiver's).

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::handoff::ticket_wait;
use crate::host::node;
use crate::waits::tickets;
use rlock_core::error::LockError;
use rlock_core::parse::cancel::parse;
use rlock_core::reply::Reply;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let id = parse(args.bytes())?;
    let key = redis_module::RedisString::string_as_slice(args.key()?);
    let db = node::selected_db(ctx);
    let caller = tickets::me(ctx)?;
    Ok(match ticket_wait::cancel(ctx, (db, key), id, &caller)? {
        Some(n) => Reply::Integer(n),
        None => Reply::Nil,
    })
}
