//! The arguments of `LOCK.LISTEN`, parsed.

use crate::error::LockError;

/// The longest owner prefix: an owner id's whole length.
pub const MAX_PREFIX: usize = 256;

/// Checks a call of `argc` arguments (command name first) whose argument 1 is `prefix`:
/// exactly one prefix, 1 to 256 bytes.
pub fn parse(argc: usize, prefix: &[u8]) -> Result<(), LockError> {
    if argc != 2 {
        return Err(LockError::WrongArity);
    }
    if prefix.is_empty() || prefix.len() > MAX_PREFIX {
        return Err(LockError::BadArg {
            name: "prefix",
            expected: "1 to 256 bytes",
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_is_one_to_256_bytes() {
        assert_eq!(parse(2, b"app"), Ok(()));
        assert_eq!(parse(1, b""), Err(LockError::WrongArity));
        assert_eq!(parse(3, b"app"), Err(LockError::WrongArity));
        assert!(parse(2, b"").is_err());
        assert!(parse(2, &[b'a'; 257]).is_err());
        assert_eq!(parse(2, &[b'a'; 256]), Ok(()));
    }
}
