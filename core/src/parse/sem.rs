//! The arguments of the `SEM.*` commands: the permits (third argument) and the total are
//! checked here, the rest by the parser of the `LOCK.*` command of the same shape, so that
//! options and their errors are the same.

use crate::args::{self, strict_i64};
use crate::error::LockError;

/// The largest number of permits: 2^31 - 1.
const MAX: i64 = i32::MAX as i64;

/// The permits asked for or given back: 1 to 2^31 - 1.
pub fn permits(raw: &[u8]) -> Result<i64, LockError> {
    strict_i64(raw)
        .filter(|n| (1..=MAX).contains(n))
        .ok_or(LockError::BadArg {
            name: "permits",
            expected: "an integer from 1 to 2147483647",
        })
}

/// A semaphore's total: 0 to 2^31 - 1.
pub fn total(raw: &[u8]) -> Result<i64, LockError> {
    strict_i64(raw)
        .filter(|n| (0..=MAX).contains(n))
        .ok_or(LockError::BadArg {
            name: "the total of permits",
            expected: "an integer from 0 to 2147483647",
        })
}

/// What `SEM.PERMITS` sets: the total, or the total plus a change (`ADD n`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Total {
    Set(i64),
    Add(i64),
}

impl Total {
    /// The new total of a semaphore whose total is `current`: 0 to 2^31 - 1, or the error
    /// of a total out of bounds (nothing is changed then).
    pub fn applied(self, current: i64) -> Result<i64, LockError> {
        match self {
            Total::Set(n) => Ok(n),
            Total::Add(n) => Some(current.saturating_add(n))
                .filter(|t| (0..=MAX).contains(t))
                .ok_or(LockError::BadArg {
                    name: "the total of permits",
                    expected: "an integer from 0 to 2147483647 (after ADD)",
                }),
        }
    }
}

/// `SEM.PERMITS key n`, or `SEM.PERMITS key ADD n`: the total, or the change to it
/// (-2^31 + 1 to 2^31 - 1).
pub fn parse_total(argv: &[&[u8]]) -> Result<Total, LockError> {
    match argv {
        [_, _key, n] => total(n).map(Total::Set),
        [_, _key, add, n] if add.eq_ignore_ascii_case(b"ADD") => strict_i64(n)
            .filter(|n| (-MAX..=MAX).contains(n))
            .map(Total::Add)
            .ok_or(LockError::BadArg {
                name: "the permits to add",
                expected: "an integer from -2147483647 to 2147483647",
            }),
        [_, _key, given, _] => Err(LockError::UnknownOption {
            given: given.to_vec(),
            expected: "ADD",
        }),
        _ => Err(LockError::WrongArity),
    }
}

/// Takes the permits out of `argv` (`name key owner PERMITS rest...`): the permits, and
/// the arguments without them, as the `LOCK.*` parser of the same shape reads them. The
/// owner is checked first.
pub fn split_permits<'a>(argv: &[&'a [u8]]) -> Result<(i64, Vec<&'a [u8]>), LockError> {
    let [name, key, owner, raw, rest @ ..] = argv else {
        return Err(LockError::WrongArity);
    };
    args::owner(owner)?;
    let n = permits(raw)?;
    let mut without = Vec::with_capacity(argv.len() - 1);
    without.extend_from_slice(&[*name, *key, *owner]);
    without.extend_from_slice(rest);
    Ok((n, without))
}

/// `SEM.RELEASE key owner [permits] [TOKEN t]`: the permits given back (`None`: all), and
/// the arguments without them, as `LOCK.RELEASE`'s parser reads them. The third argument is
/// the permits unless it is `TOKEN`, or a word (not a number) with more arguments after it,
/// which `LOCK.RELEASE`'s parser then names as an unknown option.
pub fn split_release<'a>(argv: &[&'a [u8]]) -> Result<(Option<i64>, Vec<&'a [u8]>), LockError> {
    let permits_given = match argv {
        [_, _, _, third] => !third.eq_ignore_ascii_case(b"TOKEN"),
        [_, _, _, third, _, ..] => strict_i64(third).is_some(),
        _ => false,
    };
    if permits_given {
        return split_permits(argv).map(|(n, rest)| (Some(n), rest));
    }
    Ok((None, argv.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permits_are_the_third_argument() {
        let (n, rest) = split_permits(&[b"SEM.ACQUIRE", b"k", b"me", b"3", b"WAIT", b"5"]).unwrap();
        assert_eq!(n, 3);
        assert_eq!(rest, vec![&b"SEM.ACQUIRE"[..], b"k", b"me", b"WAIT", b"5"]);
        assert_eq!(
            split_permits(&[b"X", b"k", b"me"]),
            Err(LockError::WrongArity)
        );
    }

    #[test]
    fn permits_and_totals_are_bounded() {
        for bad in [&b"0"[..], b"-1", b"2147483648", b"x", b"01"] {
            assert!(permits(bad).is_err(), "{bad:?}");
        }
        assert_eq!(permits(b"2147483647"), Ok(MAX));
        assert_eq!(total(b"0"), Ok(0));
        assert!(total(b"-1").is_err());
        assert_eq!(
            total(b"x").unwrap_err().to_string(),
            "ERR the total of permits must be an integer from 0 to 2147483647"
        );
        assert_eq!(
            permits(b"0").unwrap_err().to_string(),
            "ERR permits must be an integer from 1 to 2147483647"
        );
    }

    #[test]
    fn a_total_is_set_or_changed_within_its_bounds() {
        assert_eq!(
            parse_total(&[b"SEM.PERMITS", b"k", b"3"]),
            Ok(Total::Set(3))
        );
        let add = parse_total(&[b"SEM.PERMITS", b"k", b"add", b"-2"]).unwrap();
        assert_eq!(add, Total::Add(-2));
        assert_eq!(add.applied(5), Ok(3));
        assert!(add.applied(1).is_err());
        assert_eq!(Total::Add(MAX).applied(0), Ok(MAX));
        assert!(Total::Add(1).applied(MAX).is_err());
        assert_eq!(
            Total::Add(1).applied(MAX).unwrap_err().to_string(),
            "ERR the total of permits must be an integer from 0 to 2147483647 (after ADD)"
        );
        for bad in [&b"x"[..], b"2147483648", b"-2147483648", b""] {
            let err = parse_total(&[b"SEM.PERMITS", b"k", b"ADD", bad]).unwrap_err();
            assert_eq!(
                err.to_string(),
                "ERR the permits to add must be an integer from -2147483647 to 2147483647"
            );
        }
        let err = parse_total(&[b"SEM.PERMITS", b"k", b"PLUS", b"1"]).unwrap_err();
        assert_eq!(err.to_string(), "ERR unknown option 'PLUS', expected ADD");
        assert_eq!(
            parse_total(&[b"SEM.PERMITS", b"k", b"ADD", b"1", b"2"]),
            Err(LockError::WrongArity)
        );
    }

    #[test]
    fn a_release_names_permits_or_not() {
        let (n, rest) = split_release(&[b"SEM.RELEASE", b"k", b"me", b"2"]).unwrap();
        assert_eq!((n, rest.len()), (Some(2), 3));
        let (n, rest) = split_release(&[b"SEM.RELEASE", b"k", b"me", b"TOKEN", b"4"]).unwrap();
        assert_eq!((n, rest.len()), (None, 5));
        let (n, _) = split_release(&[b"SEM.RELEASE", b"k", b"me", b"2", b"TOKEN", b"4"]).unwrap();
        assert_eq!(n, Some(2));
        assert!(split_release(&[b"SEM.RELEASE", b"k", b"@me", b"2"]).is_err());
    }

    #[test]
    fn a_token_without_its_value_is_named_after_permits_or_not() {
        let tail = |argv: &[&[u8]]| {
            let (_, rest) = split_release(argv).unwrap();
            crate::parse::release::parse(&rest).unwrap_err().to_string()
        };
        assert_eq!(
            tail(&[b"SEM.RELEASE", b"k", b"me", b"1", b"TOKEN"]),
            "ERR TOKEN needs a value"
        );
        assert_eq!(
            tail(&[b"SEM.RELEASE", b"k", b"me", b"token"]),
            "ERR TOKEN needs a value"
        );
        assert_eq!(
            tail(&[b"SEM.RELEASE", b"k", b"me", b"WAIT", b"5"]),
            "ERR unknown option 'WAIT', expected TOKEN"
        );
        assert!(split_release(&[b"SEM.RELEASE", b"k", b"me", b"x"]).is_err());
        assert!(split_release(&[b"SEM.RELEASE", b"k", b"me", b"0", b"TOKEN", b"1"]).is_err());
    }
}
