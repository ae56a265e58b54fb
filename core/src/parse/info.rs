//! The arguments of `LOCK.INFO`, parsed.

use crate::error::LockError;

/// Checks `argv` (command name first): exactly one key.
pub fn parse(argv: &[&[u8]]) -> Result<(), LockError> {
    match argv {
        [_, _key] => Ok(()),
        _ => Err(LockError::WrongArity),
    }
}
