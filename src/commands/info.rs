/* LOCK.INFO key */

use std::ffi::c_char;

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::host::ffi::api;
use crate::host::node;
use crate::store::{LockKey, Mode};
use crate::waits::queues;
use rlock_core::error::LockError;
use rlock_core::parse::info::parse;
use rlock_core::reply::Reply;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    parse(args.bytes())?;
    let key = LockKey::open(ctx, args.key()?, Mode::Read)?;
    let Some(holding) = key.read()? else {
        return Ok(Reply::Nil);
    };
    let ttl = key.ttl_ms()?;
    let waiting = queues::queue_len(node::selected_db(ctx), key.name());
    let reply_map = api!(RedisModule_ReplyWithMap);
    let reply_buffer = api!(RedisModule_ReplyWithStringBuffer);
    let reply_int = api!(RedisModule_ReplyWithLongLong);
    let bulk =
        |bytes: &[u8]| unsafe { reply_buffer(ctx, bytes.as_ptr().cast::<c_char>(), bytes.len()) };
    // A map in RESP3, a flat field/value array in RESP2, in the order SPEC.md gives.
    unsafe { reply_map(ctx, 5) };
    bulk(b"owner");
    bulk(&holding.owner);
    let numbers = [
        (&b"holds"[..], holding.count),
        (b"ttl", ttl),
        (b"token", holding.token),
        (b"waiters", i64::try_from(waiting).unwrap_or(i64::MAX)),
    ];
    for (name, value) in numbers {
        bulk(name);
        unsafe { reply_int(ctx, value) };
    }
    Ok(Reply::Sent)
}
