//! The arguments of `LOCK.ACQUIRE`, parsed.

use crate::args::{self, Options};
use crate::error::{LockError, Opt};

#[derive(Debug, PartialEq, Eq)]
pub struct AcquireArgs<'a> {
    pub owner: &'a [u8],
    pub options: Options,
}

/// Parses `argv` (command name first); `now_ms` bounds LEASE and WAIT.
pub fn parse<'a>(argv: &[&'a [u8]], now_ms: i64) -> Result<AcquireArgs<'a>, LockError> {
    let [_, _key, owner, rest @ ..] = argv else {
        return Err(LockError::WrongArity);
    };
    Ok(AcquireArgs {
        owner: args::owner(owner)?,
        options: args::options(rest, &[Opt::Lease, Opt::Wait], now_ms)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_and_owner_are_required() {
        assert_eq!(
            parse(&[b"LOCK.ACQUIRE", b"k"], 0),
            Err(LockError::WrongArity)
        );
    }

    #[test]
    fn options_follow_the_owner() {
        let a = parse(&[b"LOCK.ACQUIRE", b"k", b"me", b"LEASE", b"10"], 0).unwrap();
        assert_eq!(a.owner, b"me");
        assert_eq!(a.options.lease, Some(10));
        assert_eq!(a.options.wait, None);
    }

    #[test]
    fn bad_owner_is_refused_before_options() {
        let e = parse(&[b"LOCK.ACQUIRE", b"k", b"@x", b"LEASE", b"x"], 0).unwrap_err();
        assert!(matches!(e, LockError::InvalidOwner(_)));
    }
}
