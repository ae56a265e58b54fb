/* LOCK.FORCERELEASE key */

use redis_module::raw;

use crate::error::LockError;
use crate::store::LockKey;

use super::{Args, Replicate, Reply};

/// Checks `argv` (command name first): exactly one key.
pub fn parse(argv: &[&[u8]]) -> Result<(), LockError> {
    match argv {
        [_, _key] => Ok(()),
        _ => Err(LockError::WrongArity),
    }
}

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    parse(args.bytes())?;
    let key = LockKey::open(ctx, args.key()?, true)?;
    if key.read()?.is_none() {
        return Ok(Reply::Integer(0));
    }
    super::free(ctx, &key, Replicate::Del)?;
    Ok(Reply::Integer(1))
}
