//! The arguments of `LOCK.CANCEL`, parsed.

use crate::args::strict_i64;
use crate::error::LockError;

/// Parses `argv` (command name first): the wait id.
pub fn parse(argv: &[&[u8]]) -> Result<u64, LockError> {
    let [_, _key, id] = argv else {
        return Err(LockError::WrongArity);
    };
    let id = strict_i64(id).filter(|id| *id > 0);
    id.map(i64::unsigned_abs).ok_or(LockError::BadArg {
        name: "the wait id",
        expected: "a positive integer",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_id_is_a_positive_integer() {
        assert_eq!(parse(&[b"LOCK.CANCEL", b"", b"7"]), Ok(7));
        for bad in [&b"0"[..], b"-3", b"x", b""] {
            assert!(matches!(
                parse(&[b"LOCK.CANCEL", b"", bad]),
                Err(LockError::BadArg { .. })
            ));
        }
        assert_eq!(parse(&[b"LOCK.CANCEL", b""]), Err(LockError::WrongArity));
    }
}
