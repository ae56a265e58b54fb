/* LOCK.INFO key */

use std::ffi::c_char;

use redis_module::{raw, Context, RedisResult, RedisString, RedisValue};

use crate::error::LockError;
use crate::store::{api, LockKey};
use crate::{guard, waiters};

/// Checks `argv` (command name first): exactly one key.
pub fn parse(argv: &[&[u8]]) -> Result<(), LockError> {
    match argv {
        [_, _key] => Ok(()),
        _ => Err(LockError::WrongArity),
    }
}

pub fn handler(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    guard::command("LOCK.INFO", || run(ctx.ctx, &args))
}

fn run(ctx: *mut raw::RedisModuleCtx, args: &[RedisString]) -> Result<RedisValue, LockError> {
    parse(&super::argv(args))?;
    let key = LockKey::open(ctx, super::key_arg(args)?, false)?;
    let Some(holding) = key.read()? else {
        return Ok(RedisValue::Null);
    };
    let ttl = key.ttl_ms()?;
    let waiting = waiters::queue_len(waiters::selected_db(ctx), key.name());
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
    Ok(RedisValue::NoReply)
}
