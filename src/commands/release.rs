/* LOCK.RELEASE key owner */

use redis_module::{raw, Context, RedisResult, RedisString, RedisValue};

use crate::args;
use crate::error::LockError;
use crate::lock::{self, ReleaseStep};
use crate::store::{LockKey, Name};
use crate::{guard, info};

/// Parses `argv` (command name first) into the owner.
pub fn parse<'a>(argv: &[&'a [u8]]) -> Result<&'a [u8], LockError> {
    let [_, _key, owner] = argv else {
        return Err(LockError::WrongArity);
    };
    args::owner(owner)
}

pub fn handler(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    guard::command("LOCK.RELEASE", || run(ctx.ctx, &args))
}

fn run(ctx: *mut raw::RedisModuleCtx, args: &[RedisString]) -> Result<RedisValue, LockError> {
    let owner = parse(&super::argv(args))?;
    let key = LockKey::open(ctx, super::key_arg(args)?, true)?;
    let name = Name::arg(args.get(2).ok_or(LockError::WrongArity)?);
    match lock::release(key.read_as(&name)?.as_ref(), owner) {
        ReleaseStep::Remaining(count) => {
            key.write_count(&name, count)?;
            info::RELEASED.bump();
            Ok(RedisValue::Integer(count))
        }
        ReleaseStep::Freed => {
            super::free(ctx, &key)?;
            info::RELEASED.bump();
            Ok(RedisValue::Integer(0))
        }
        ReleaseStep::NotHeld => {
            info::NOT_HELD_ERRORS.bump();
            Err(LockError::NotHeld {
                key: key.name().to_vec(),
                owner: owner.to_vec(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_key_and_owner() {
        assert_eq!(parse(&[b"LOCK.RELEASE", b"k", b"o"]), Ok(&b"o"[..]));
        assert_eq!(parse(&[b"LOCK.RELEASE", b"k"]), Err(LockError::WrongArity));
        assert_eq!(
            parse(&[b"LOCK.RELEASE", b"k", b"o", b"x"]),
            Err(LockError::WrongArity)
        );
    }
}
