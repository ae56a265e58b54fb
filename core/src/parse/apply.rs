//! The arguments of `LOCK.APPLY`, parsed.

use crate::args::{self, strict_i64};
use crate::error::LockError;

#[derive(Debug, PartialEq, Eq)]
pub struct ApplyArgs {
    pub holds: i64,
    pub token: i64,
    pub deadline_ms: i64,
}

/// Parses `argv` (command name first).
pub fn parse(argv: &[&[u8]]) -> Result<ApplyArgs, LockError> {
    let [_, _key, owner, holds, token, deadline] = argv else {
        return Err(LockError::WrongArity);
    };
    args::owner(owner)?;
    let holds = strict_i64(holds).filter(|h| *h > 0);
    let token = strict_i64(token).filter(|t| *t >= 0);
    match (holds, token, strict_i64(deadline)) {
        (Some(holds), Some(token), Some(deadline_ms)) => Ok(ApplyArgs {
            holds,
            token,
            deadline_ms,
        }),
        _ => Err(LockError::BadApply),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_five_arguments_are_required() {
        assert_eq!(
            parse(&[b"LOCK.APPLY", b"k", b"o", b"1", b"7"]),
            Err(LockError::WrongArity)
        );
    }

    #[test]
    fn values_a_master_never_sends_are_refused() {
        let bad: &[&[&[u8]]] = &[
            &[b"LOCK.APPLY", b"k", b"o", b"0", b"7", b"1"],
            &[b"LOCK.APPLY", b"k", b"o", b"1", b"-1", b"1"],
            &[b"LOCK.APPLY", b"k", b"o", b"1", b"7", b"x"],
        ];
        for argv in bad {
            assert_eq!(parse(argv), Err(LockError::BadApply));
        }
    }

    #[test]
    fn a_valid_holding_parses() {
        let a = parse(&[b"LOCK.APPLY", b"k", b"o", b"2", b"0", b"1700000000000"]).unwrap();
        assert_eq!(
            a,
            ApplyArgs {
                holds: 2,
                token: 0,
                deadline_ms: 1_700_000_000_000
            }
        );
    }
}
