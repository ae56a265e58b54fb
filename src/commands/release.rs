/* LOCK.RELEASE key owner [TOKEN t] */

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::handoff::{door, expiry};
use crate::host::gate;
use crate::store::{LockKey, Mode, Replicate};
use rlock_core::args;
use rlock_core::counters;
use rlock_core::error::{self, LockError, Opt};
use rlock_core::lock::{self, ReleaseStep};
use rlock_core::reply::Reply;

#[derive(Debug, PartialEq, Eq)]
pub struct ReleaseArgs<'a> {
    pub owner: &'a [u8],
    /// Release only the holding with this token.
    pub token: Option<i64>,
}

/// Parses `argv` (command name first): `key owner`, or `key owner TOKEN t`.
pub fn parse<'a>(argv: &[&'a [u8]]) -> Result<ReleaseArgs<'a>, LockError> {
    let (owner, rest) = match argv {
        [_, _key, owner] => (owner, &[][..]),
        [_, _key, owner, _, _] => (owner, &argv[3..]),
        _ => return Err(LockError::WrongArity),
    };
    Ok(ReleaseArgs {
        owner: args::owner(owner)?,
        token: args::options(rest, &[Opt::Token], 0)?.token,
    })
}

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let ReleaseArgs { owner, token } = parse(args.bytes())?;
    gate::client_writes(ctx)?;
    let key = LockKey::open(ctx, args.key()?, Mode::Write)?;
    let name = args.name(2)?;
    let current = key
        .read_as(&name)?
        .filter(|holding| token.is_none_or(|t| holding.token == t));
    match lock::release(current.as_ref(), owner) {
        ReleaseStep::Remaining(count) => {
            key.write_count(&name, count)?;
            counters::RELEASED.bump();
            Ok(Reply::Integer(count))
        }
        ReleaseStep::Freed => {
            // Replayed on a replica or from the AOF, the lock is there with this one hold
            // (it cannot expire there), so the command deletes it as it did here.
            let handed = door::end_holding(ctx, &key, Replicate::Command, true)?;
            expiry::handed(ctx, key.name(), handed);
            counters::RELEASED.bump();
            Ok(Reply::Integer(0))
        }
        ReleaseStep::NotHeld => {
            counters::NOT_HELD_ERRORS.bump();
            Err(LockError::NotHeld {
                key: error::clip(key.name()),
                owner: owner.to_vec(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_and_owner_then_an_optional_token() {
        let plain = parse(&[b"LOCK.RELEASE", b"k", b"o"]).unwrap();
        assert_eq!((plain.owner, plain.token), (&b"o"[..], None));
        let fenced = parse(&[b"LOCK.RELEASE", b"k", b"o", b"TOKEN", b"7"]).unwrap();
        assert_eq!(fenced.token, Some(7));
        assert_eq!(parse(&[b"LOCK.RELEASE", b"k"]), Err(LockError::WrongArity));
        assert_eq!(
            parse(&[b"LOCK.RELEASE", b"k", b"o", b"x"]),
            Err(LockError::WrongArity)
        );
        assert!(matches!(
            parse(&[b"LOCK.RELEASE", b"k", b"o", b"LEASE", b"7"]),
            Err(LockError::UnknownOption { .. })
        ));
    }
}
