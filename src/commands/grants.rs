/* LOCK.GRANTS [BLOCK ms] [COUNT n] */
//! Answers the ended waits of this connection's mailbox (tickets queued with
//! `LOCK.WAIT ... TO <this connection>`) as a flat array `wait id, outcome, ...`, oldest
//! first: the outcome is the token of a grant, 0 for a `WAIT` that ran out, or
//! `-<error line>` for a wait refused here. An empty mailbox answers an empty array, or,
//! with `BLOCK ms`, blocks until an outcome comes (0: no limit) and answers nil at the
//! limit. A grant is delivered once its reply is written: a connection that closes before
//! gives it back, and the lock passes on.

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::handoff::ticket_wait;
use crate::host::ffi::api;
use crate::host::node;
use crate::waits::{blocked, tickets};
use rlock_core::error::LockError;
use rlock_core::parse::grants::parse;
use rlock_core::reply::Reply;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    // Every argument is an option here (the dispatcher leaves argument 1, a key elsewhere,
    // unread).
    let argv: Vec<&[u8]> = args
        .strings()
        .iter()
        .map(|s| redis_module::RedisString::string_as_slice(*s))
        .collect();
    let parsed = parse(&argv)?;
    // Its `noscript` flag keeps scripts out; this keeps them out of a server without it.
    if node::flags(ctx) & raw::REDISMODULE_CTX_FLAGS_LUA != 0 {
        return Err(LockError::GrantsInScript);
    }
    let client_id = api!(RedisModule_GetClientId);
    let receiver = unsafe { client_id(ctx) };
    let mails = tickets::take_mail(receiver, parsed.count.unwrap_or(usize::MAX));
    match parsed.block {
        Some(block_ms) if mails.is_empty() && node::can_block(ctx) => {
            ticket_wait::park(ctx, receiver, block_ms)?;
            Ok(Reply::Sent)
        }
        Some(_) if mails.is_empty() => Ok(Reply::Nil),
        _ => {
            // Written into the reply now: these grants are delivered.
            let batch: Vec<_> = mails.into_iter().map(|m| (m.wait, m.outcome)).collect();
            blocked::send_batch(ctx, &batch);
            Ok(Reply::Sent)
        }
    }
}
