/* LOCK.FORCERELEASE key */

use redis_module::{raw, Context, RedisResult, RedisString, RedisValue};

use crate::error::LockError;
use crate::guard;
use crate::store::LockKey;

/// Checks `argv` (command name first): exactly one key.
pub fn parse(argv: &[&[u8]]) -> Result<(), LockError> {
    match argv {
        [_, _key] => Ok(()),
        _ => Err(LockError::WrongArity),
    }
}

pub fn handler(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    guard::command("LOCK.FORCERELEASE", || run(ctx.ctx, &args))
}

fn run(ctx: *mut raw::RedisModuleCtx, args: &[RedisString]) -> Result<RedisValue, LockError> {
    parse(&super::argv(args))?;
    let key = LockKey::open(ctx, super::key_arg(args)?, true)?;
    if key.read()?.is_none() {
        return Ok(RedisValue::Integer(0));
    }
    super::free(ctx, &key)?;
    Ok(RedisValue::Integer(1))
}
