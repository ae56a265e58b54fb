//! The arguments of `LOCK.RELEASE`, parsed.

use crate::args;
use crate::error::{LockError, Opt};

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
        // `TOKEN` without its value: said so, rather than a wrong number of arguments.
        [_, _key, owner, last] if last.eq_ignore_ascii_case(b"TOKEN") => (owner, &argv[3..]),
        _ => return Err(LockError::WrongArity),
    };
    Ok(ReleaseArgs {
        owner: args::owner(owner)?,
        token: args::options(rest, &[Opt::Token], 0)?.token,
    })
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

    #[test]
    fn a_token_without_its_value_says_so() {
        for last in [&b"TOKEN"[..], b"token"] {
            assert_eq!(
                parse(&[b"LOCK.RELEASE", b"k", b"o", last]),
                Err(LockError::MissingValue(Opt::Token))
            );
        }
        assert_eq!(
            parse(&[b"LOCK.RELEASE", b"k", b"@o", b"TOKEN"]),
            Err(LockError::InvalidOwner(
                crate::error::OwnerProblem::Reserved
            ))
        );
    }
}
