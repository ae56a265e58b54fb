//! What a command or a blocked client is answered: values with no Redis types in them, sent
//! by the module's `commands/dispatch.rs` (commands) and `waits/blocked.rs` (blocked
//! clients), and the one way an error text becomes an error line.

use std::ffi::CString;

/// What a command answers when it does not send its reply itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    Integer(i64),
    Nil,
    Ok,
    /// Already sent, or the client is blocked and gets it later.
    Sent,
}

/// How a wait ended: what a client blocked in `LOCK.ACQUIRE ... WAIT` is unblocked with, or
/// a ticket's outcome (`LOCK.WAIT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The lock was handed to it, with this token.
    Granted(i64),
    /// Its `WAIT` ran out: nil.
    TimedOut,
    /// It cannot be served here any more (this node became a replica, or the key's slot
    /// moved): an error line, without the leading `-`.
    Refused(String),
    /// The ended waits of a `LOCK.GRANTS` caller: (wait id, outcome) pairs, oldest first.
    Batch(Vec<(u64, Outcome)>),
}

/// An error text as one RESP error line: no NUL, CR or LF (error texts escape the bytes
/// they echo, so this only guards against a mistake).
pub fn error_line(text: &str) -> CString {
    let clean: Vec<u8> = text
        .bytes()
        .filter(|b| !matches!(b, b'\0' | b'\r' | b'\n'))
        .collect();
    CString::new(clean).unwrap_or_default()
}
