//! The arguments of the `RWLOCK.*` commands: the mode (third argument) and the owner's
//! extra rule are checked here, the rest by the parser of the `LOCK.*` command of the same
//! shape, so that options and their errors are the same.

use crate::args;
use crate::error::{LockError, OwnerProblem};
use crate::rwlock::{RwMode, WRITE_SUFFIX};

/// An owner of a read-write lock: as for a lock, and not ending in `:write` (the suffix of
/// the writer's count field, which would make two holders one field).
pub fn owner(raw: &[u8]) -> Result<&[u8], LockError> {
    let owner = args::owner(raw)?;
    if owner.ends_with(WRITE_SUFFIX) {
        return Err(LockError::InvalidOwner(OwnerProblem::WriteSuffix));
    }
    Ok(owner)
}

/// `READ` or `WRITE`, in any case.
pub fn mode(raw: &[u8]) -> Result<RwMode, LockError> {
    if raw.eq_ignore_ascii_case(b"READ") {
        Ok(RwMode::Read)
    } else if raw.eq_ignore_ascii_case(b"WRITE") {
        Ok(RwMode::Write)
    } else {
        Err(LockError::BadMode(crate::error::clip(raw)))
    }
}

/// Takes the mode out of `argv` (`name key owner MODE rest...`): the mode, and the
/// arguments without it, as the `LOCK.*` parser of the same shape reads them. The owner is
/// checked first, as `LOCK.*` checks it before its options.
pub fn split_mode<'a>(argv: &[&'a [u8]]) -> Result<(RwMode, Vec<&'a [u8]>), LockError> {
    let [name, key, raw_owner, raw_mode, rest @ ..] = argv else {
        return Err(LockError::WrongArity);
    };
    owner(raw_owner)?;
    let mode = mode(raw_mode)?;
    let mut without = Vec::with_capacity(argv.len() - 1);
    without.extend_from_slice(&[*name, *key, *raw_owner]);
    without.extend_from_slice(rest);
    Ok((mode, without))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_is_the_third_argument_in_any_case() {
        let (mode, rest) =
            split_mode(&[b"RWLOCK.ACQUIRE", b"k", b"me", b"read", b"WAIT", b"5"]).unwrap();
        assert_eq!(mode, RwMode::Read);
        assert_eq!(
            rest,
            vec![&b"RWLOCK.ACQUIRE"[..], b"k", b"me", b"WAIT", b"5"]
        );
        assert_eq!(
            split_mode(&[b"X", b"k", b"me", b"Write"]).unwrap().0,
            RwMode::Write
        );
    }

    #[test]
    fn a_missing_or_unknown_mode_is_refused() {
        assert_eq!(split_mode(&[b"X", b"k", b"me"]), Err(LockError::WrongArity));
        assert_eq!(
            split_mode(&[b"X", b"k", b"me", b"SHARED"]),
            Err(LockError::BadMode(b"SHARED".to_vec()))
        );
    }

    #[test]
    fn owners_follow_the_lock_rules_and_do_not_end_in_write() {
        assert_eq!(
            split_mode(&[b"X", b"k", b"a:write", b"READ"]),
            Err(LockError::InvalidOwner(OwnerProblem::WriteSuffix))
        );
        assert_eq!(
            split_mode(&[b"X", b"k", b"@a", b"READ"]),
            Err(LockError::InvalidOwner(OwnerProblem::Reserved))
        );
        assert_eq!(owner(b"a:writer"), Ok(&b"a:writer"[..]));
    }
}
