/* LOCK.RELEASE key owner */

use redis_module::raw;

use crate::args;
use crate::error::LockError;
use crate::info;
use crate::lock::{self, ReleaseStep};
use crate::store::LockKey;

use super::{Args, Replicate, Reply};

/// Parses `argv` (command name first) into the owner.
pub fn parse<'a>(argv: &[&'a [u8]]) -> Result<&'a [u8], LockError> {
    let [_, _key, owner] = argv else {
        return Err(LockError::WrongArity);
    };
    args::owner(owner)
}

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let owner = parse(args.bytes())?;
    let key = LockKey::open(ctx, args.key()?, true)?;
    let name = args.name(2)?;
    match lock::release(key.read_as(&name)?.as_ref(), owner) {
        ReleaseStep::Remaining(count) => {
            key.write_count(&name, count)?;
            info::RELEASED.bump();
            Ok(Reply::Integer(count))
        }
        ReleaseStep::Freed => {
            // Replayed on a replica or from the AOF, the lock is there with this one hold
            // (it cannot expire there), so the command deletes it as it did here.
            super::free(ctx, &key, Replicate::Command)?;
            info::RELEASED.bump();
            Ok(Reply::Integer(0))
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
