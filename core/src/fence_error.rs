//! `LOCK.FENCED`'s error texts, a part of [`LockError`](crate::error::LockError) (its
//! `Fence` variant): why the inner command did not run.

use std::fmt;

use crate::echo::printable;

/// Why `LOCK.FENCED` did not run its inner command (the lock not held by the owner at all
/// is [`LockError::NotHeld`](crate::error::LockError::NotHeld)). Command names and keys
/// are echoed clipped ([`clip`](crate::echo::clip)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FenceError {
    /// The owner holds the lock, but another holding than the caller's: a newer one (a
    /// greater token), or one whose token is not the caller's at all.
    Stale {
        key: Vec<u8>,
        owner: Vec<u8>,
        token: i64,
        current: i64,
    },
    /// An inner command that cannot run fenced.
    Refused { command: Vec<u8>, why: Refusal },
    /// In a cluster, an inner key outside the lock's slot.
    CrossSlot { key: Vec<u8>, lock: Vec<u8> },
    /// The server has no such command.
    Unknown { command: Vec<u8> },
    /// The inner command has the wrong number of arguments.
    Arity { command: Vec<u8> },
    /// The caller's ACL user may not run the inner command or touch its keys.
    NoPerm { command: Vec<u8> },
    /// `maxmemory` is reached and the inner command may use memory.
    Oom,
    /// The server refused the inner command for another reason (its `errno`).
    NotRun { command: Vec<u8>, errno: i32 },
}

/// Why an inner command cannot run fenced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// It may block (`BLPOP`, `XREAD ... BLOCK`, `WAIT`).
    Blocking,
    /// `MULTI`, `EXEC`, `WATCH` and the like, or a subscription.
    Transaction,
    /// Another `LOCK.*` command.
    LockCommand,
    /// It names no key, so nothing ties it to the lock's slot (`FLUSHALL`, `SWAPDB`).
    NoKeys,
    /// It may write, move or delete the lock's own key.
    LockKey,
    /// A command a script may not run (`EVAL`, `FCALL`, ...), while `LOCK.FENCED` itself
    /// runs in a script: Redis cannot run a script inside a script.
    InScript,
}

impl fmt::Display for FenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FenceError::Stale { key, owner, token, current } => write!(
                f,
                "FENCED lock '{}' is held by '{}' with {} ({current}), not {token}",
                printable(key),
                printable(owner),
                if current > token { "a newer token" } else { "another token" }
            ),
            FenceError::Refused { command, why } => {
                let command = printable(command);
                write!(f, "ERR LOCK.FENCED refuses '{command}': {}", why.text())
            }
            FenceError::CrossSlot { key, lock } => write!(
                f,
                "CROSSSLOT LOCK.FENCED: key '{}' is not in the slot of lock '{}'; give both one hash tag (lock:{{order:42}} and order:{{order:42}})",
                printable(key),
                printable(lock)
            ),
            FenceError::Unknown { command } => {
                write!(f, "ERR unknown command '{}' in LOCK.FENCED", printable(command))
            }
            FenceError::Arity { command } => write!(
                f,
                "ERR wrong number of arguments for '{}' in LOCK.FENCED",
                printable(command)
            ),
            FenceError::NoPerm { command } => write!(
                f,
                "NOPERM this user has no permissions to run '{}' or to access its keys (in LOCK.FENCED)",
                printable(command)
            ),
            FenceError::Oom => f.write_str(
                "OOM command not allowed when used memory > 'maxmemory' (in LOCK.FENCED)",
            ),
            FenceError::NotRun { command, errno } => write!(
                f,
                "ERR LOCK.FENCED could not run '{}' here (errno {errno})",
                printable(command)
            ),
        }
    }
}

impl Refusal {
    fn text(self) -> &'static str {
        match self {
            Refusal::Blocking => "it may block",
            Refusal::Transaction => "transactions and subscriptions cannot run inside it",
            Refusal::LockCommand => "lock commands cannot run inside it",
            Refusal::NoKeys => "it names no key, so nothing ties it to the lock",
            Refusal::LockKey => "it may write the lock's own key",
            Refusal::InScript => "it cannot run inside a script",
        }
    }
}

#[cfg(test)]
#[path = "fence_error_tests.rs"]
mod tests;
