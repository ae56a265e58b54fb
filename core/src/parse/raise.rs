//! The arguments of `LOCK.RAISE`, parsed.

use crate::args::{self, strict_i64};
use crate::error::LockError;

#[derive(Debug, PartialEq, Eq)]
pub struct RaiseArgs<'a> {
    pub owner: &'a [u8],
    /// The token of the caller's holding.
    pub token: i64,
    /// The least value the counter must reach.
    pub floor: i64,
}

/// Parses `argv` (command name first).
pub fn parse<'a>(argv: &[&'a [u8]]) -> Result<RaiseArgs<'a>, LockError> {
    let [_, _key, owner, token, floor] = argv else {
        return Err(LockError::WrongArity);
    };
    let owner = args::owner(owner)?;
    let number = |raw: &[u8]| strict_i64(raw).filter(|n| *n >= 0);
    match (number(token), number(floor)) {
        (Some(token), Some(floor)) => Ok(RaiseArgs {
            owner,
            token,
            floor,
        }),
        _ => Err(LockError::BadRaise),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_four_arguments_are_required() {
        assert_eq!(
            parse(&[b"LOCK.RAISE", b"k", b"o", b"7"]),
            Err(LockError::WrongArity)
        );
    }

    #[test]
    fn token_and_floor_are_non_negative_integers() {
        let bad: &[&[&[u8]]] = &[
            &[b"LOCK.RAISE", b"k", b"o", b"-1", b"7"],
            &[b"LOCK.RAISE", b"k", b"o", b"1", b"x"],
            &[b"LOCK.RAISE", b"k", b"o", b"01", b"7"],
        ];
        for argv in bad {
            assert_eq!(parse(argv), Err(LockError::BadRaise));
        }
        let ok = parse(&[b"LOCK.RAISE", b"k", b"o", b"3", b"90"]).unwrap();
        assert_eq!((ok.owner, ok.token, ok.floor), (&b"o"[..], 3, 90));
    }

    #[test]
    fn a_bad_owner_is_refused() {
        let e = parse(&[b"LOCK.RAISE", b"k", b"@x", b"1", b"2"]).unwrap_err();
        assert!(matches!(e, LockError::InvalidOwner(_)));
    }
}
