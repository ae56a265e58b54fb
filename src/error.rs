//! Every error reply the module sends, spelled in one place.
//!
//! Handlers never format an error message themselves: they return a [`LockError`], whose
//! `Display` is the exact reply text (without the leading `-`) that SPEC.md prescribes.
//! Key names and owner ids are echoed with [`printable`], so that no byte a client sends
//! can break the RESP framing of an error line, and at most [`MAX_ECHO`] bytes of them
//! (then `...`), so that a 1 MB key name does not make a 1 MB error line.

use std::fmt;

/// Which numeric option an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opt {
    Lease,
    Wait,
    Token,
}

impl fmt::Display for Opt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Opt::Lease => "LEASE",
            Opt::Wait => "WAIT",
            Opt::Token => "TOKEN",
        })
    }
}

/// Why an owner id is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerProblem {
    Empty,
    TooLong,
    Reserved,
}

/// An error reply of an rlock command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockError {
    /// The command was called with the wrong number of arguments.
    WrongArity,
    /// `LEASE`/`WAIT` given without a value.
    MissingValue(Opt),
    /// `LEASE`/`WAIT` value is not a decimal integer.
    NotAnInteger(Opt),
    /// `LEASE` is zero or negative.
    LeaseNotPositive,
    /// `WAIT` is negative.
    WaitNegative,
    /// `TOKEN` is negative.
    TokenNegative,
    /// now + value does not fit in a 64-bit millisecond timestamp.
    TooLarge(Opt),
    /// The same option appears twice.
    Duplicate(Opt),
    /// An option this command does not know.
    UnknownOption {
        given: Vec<u8>,
        expected: &'static str,
    },
    /// The owner id breaks the rules of SPEC.md §1.
    InvalidOwner(OwnerProblem),
    /// The key holds a value that is not a hash.
    WrongType,
    /// The key is a hash, but not in the lock layout.
    NotALock,
    /// `LOCK.RELEASE` by someone who does not hold the lock.
    NotHeld { key: Vec<u8>, owner: Vec<u8> },
    /// The reentry count would overflow a 64-bit integer.
    CountOverflow,
    /// `LOCK.APPLY` sent by a client rather than a master or an AOF.
    ApplyFromClient,
    /// `LOCK.APPLY` with values no master would send.
    BadApply,
    /// `LOCK.RAISE` with a token or floor that is not a non-negative integer.
    BadRaise,
    /// The token counter is at its maximum: no fresh holding can be granted.
    TokensExhausted,
    /// `rlock.max-waiters` clients wait on this node already.
    TooManyWaiters(i64),
    /// `rlock.max-waiters-per-key` clients wait for this lock already.
    TooManyWaitersForKey(i64),
    /// The server does not export a module API function this command needs.
    MissingApi(&'static str),
    /// A bug: a handler panicked and the panic was caught.
    Internal(&'static str),
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockError::WrongArity => f.write_str("ERR wrong number of arguments"),
            LockError::MissingValue(Opt::Token) => f.write_str("ERR TOKEN needs a value"),
            LockError::MissingValue(opt) => write!(f, "ERR {opt} needs a value in milliseconds"),
            LockError::NotAnInteger(opt) => {
                write!(f, "ERR {opt} is not an integer or out of range")
            }
            LockError::LeaseNotPositive => f.write_str("ERR LEASE must be a positive integer"),
            LockError::WaitNegative => f.write_str("ERR WAIT must not be negative"),
            LockError::TokenNegative => f.write_str("ERR TOKEN must not be negative"),
            LockError::TooLarge(opt) => write!(f, "ERR {opt} is too large"),
            LockError::Duplicate(opt) => write!(f, "ERR {opt} is given more than once"),
            LockError::UnknownOption { given, expected } => write!(
                f,
                "ERR unknown option '{}', expected {expected}",
                printable(given)
            ),
            LockError::InvalidOwner(problem) => f.write_str(match problem {
                OwnerProblem::Empty => "ERR invalid owner: must not be empty",
                OwnerProblem::TooLong => "ERR invalid owner: longer than 256 bytes",
                OwnerProblem::Reserved => "ERR invalid owner: must not start with '@'",
            }),
            LockError::WrongType => {
                f.write_str("WRONGTYPE Operation against a key holding the wrong kind of value")
            }
            LockError::NotALock => f.write_str("WRONGTYPE key is not a lock"),
            LockError::NotHeld { key, owner } => write!(
                f,
                "NOTHELD lock '{}' is not held by '{}'",
                printable(key),
                printable(owner)
            ),
            LockError::CountOverflow => f.write_str("ERR reentry count would overflow"),
            LockError::ApplyFromClient => f.write_str(
                "ERR LOCK.APPLY only replays a master's writes (replication stream or AOF)",
            ),
            LockError::BadApply => f.write_str(
                "ERR LOCK.APPLY needs key owner holds token unix-ms: holds > 0, token >= 0",
            ),
            LockError::BadRaise => f.write_str(
                "ERR LOCK.RAISE needs key owner token floor: token and floor non-negative integers",
            ),
            LockError::TokensExhausted => f.write_str(
                "ERR fencing tokens are exhausted on this node: the counter is at its maximum",
            ),
            LockError::TooManyWaiters(max) => write!(
                f,
                "ERR too many waiters: rlock.max-waiters ({max}) clients wait on this node"
            ),
            LockError::TooManyWaitersForKey(max) => write!(
                f,
                "ERR too many waiters for this lock: rlock.max-waiters-per-key ({max}) clients wait for it"
            ),
            LockError::MissingApi(name) => {
                write!(f, "ERR this Redis server lacks the module API {name}")
            }
            LockError::Internal(command) => {
                write!(f, "ERR internal error in {command}, see the server log")
            }
        }
    }
}

impl std::error::Error for LockError {}

/// The most bytes of a client's argument an error line echoes.
pub const MAX_ECHO: usize = 128;

/// The part of `bytes` an error may echo: the first [`MAX_ECHO`] bytes, and one more to
/// tell that there were more (so an error never copies a whole big argument).
pub fn clip(bytes: &[u8]) -> Vec<u8> {
    bytes[..bytes.len().min(MAX_ECHO + 1)].to_vec()
}

/// Renders bytes for an error line: printable ASCII as is, every other byte (and `\`)
/// as a `\xHH` escape, so the result never holds CR, LF or NUL; past [`MAX_ECHO`] bytes,
/// `...` stands for the rest.
pub fn printable(bytes: &[u8]) -> String {
    let shown = &bytes[..bytes.len().min(MAX_ECHO)];
    let mut out = String::with_capacity(shown.len() + 3);
    push_printable(&mut out, shown);
    if shown.len() < bytes.len() {
        out.push_str("...");
    }
    out
}

fn push_printable(out: &mut String, bytes: &[u8]) {
    for &b in bytes {
        if (0x20..0x7f).contains(&b) && b != b'\\' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
