/* LOCK.LISTEN prefix */
//! This connection listens for the ends of holdings whose owner id starts with `prefix`
//! (up to its last `:`) that their holder did not ask for; the reply is the channel the
//! announcements are published on, for the connection to subscribe to.

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::handoff::losses;
use crate::host::ffi::api;
use rlock_core::error::LockError;
use rlock_core::parse::listen::parse;
use rlock_core::reply::Reply;
use rlock_core::watch::channel;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let prefix = args
        .strings()
        .get(1)
        .map(|s| redis_module::RedisString::string_as_slice(*s))
        .unwrap_or_default();
    parse(args.bytes().len(), prefix)?;
    let client_id = api!(RedisModule_GetClientId);
    let reply = api!(RedisModule_ReplyWithStringBuffer);
    losses::listen(unsafe { client_id(ctx) }, prefix);
    let channel = channel(prefix);
    unsafe { reply(ctx, channel.as_ptr().cast(), channel.len()) };
    Ok(Reply::Sent)
}
