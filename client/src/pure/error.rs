//! The client's one error type, mapped from the server's error codes.

use std::time::Duration;

pub use crate::pure::ended::EndCause;
pub use crate::pure::loss::LossReason;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in this crate.
///
/// Contention is not an error: [`Lock::try_acquire`](crate::Lock::try_acquire) answers
/// `Ok(None)` when the lock stays busy.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server answered `NOTHELD`: the lock is not held by this owner.
    #[error("lock '{key}' is not held by '{owner}'")]
    NotHeld {
        /// The lock's key.
        key: String,
        /// The owner id that was refused.
        owner: String,
    },
    /// An owner that holds only read holds of a read-write lock asked for a write hold: the
    /// server refuses at once (two readers upgrading would wait for each other forever),
    /// and nothing changed. Release the read holds first, then acquire the write hold.
    #[error("read-write lock '{key}': '{owner}' holds only read holds and cannot upgrade to a write hold; release them first")]
    Upgrade {
        /// The read-write lock's key.
        key: String,
        /// The owner id that holds read holds.
        owner: String,
    },
    /// The key holds another kind of object than the command's (a read-write lock asked
    /// for as a plain lock, a semaphore, a string...): the server refused with `WRONGTYPE`,
    /// and nothing changed.
    #[error("'{key}' is not the kind of object asked for ({detail})")]
    WrongType {
        /// The key.
        key: String,
        /// The server's text, its code included (`WRONGTYPE key is not a lock`).
        detail: String,
    },
    /// An acquisition asked a semaphore for more permits than its total: it could never be
    /// granted, so the server refused it at once.
    #[error("semaphore '{key}': {detail}")]
    TooManyPermits {
        /// The semaphore's key.
        key: String,
        /// The permits asked for.
        asked: u64,
        /// The semaphore's total.
        total: u64,
        /// The server's text.
        detail: String,
    },
    /// The node refused to grant for a while (`TRYAGAIN rlock: ...`): it stalled and does
    /// not know its replicas yet, it was promoted less than `rlock.failover-delay` ago, or
    /// its writes are paused. The server's text says which and for how long; trying again
    /// later may succeed.
    #[error("lock '{key}': the node holds grants back ({detail})")]
    HeldBack {
        /// The lock's key.
        key: String,
        /// The server's text, its code included.
        detail: String,
    },
    /// The node has as many waiters as it takes (`rlock.max-waiters`), or the lock has
    /// (`rlock.max-waiters-per-key`): the wait was refused, nothing changed. Trying again
    /// once waiters have left may succeed.
    #[error("'{key}': the node takes no more waiters ({detail})")]
    TooManyWaiters {
        /// The key.
        key: String,
        /// The server's text, its code included.
        detail: String,
    },
    /// A number of permits the server refuses: permits asked for or given that are not 1
    /// to 2147483647, or a total (set, or after adding to it) that would not be 0 to
    /// 2147483647. Nothing changed.
    #[error("semaphore '{key}': {detail}")]
    PermitsOutOfRange {
        /// The semaphore's key.
        key: String,
        /// The server's text, its code included.
        detail: String,
    },
    /// The master has fewer good replicas than its `min-replicas-to-write` asks for
    /// (`NOREPLICAS`): it refused the write, nothing changed. Trying again once replicas
    /// are back may succeed.
    #[error("'{key}': the node has too few replicas to take writes ({detail})")]
    NoReplicas {
        /// The key.
        key: String,
        /// The server's text, its code included.
        detail: String,
    },
    /// The node is out of memory (`OOM`): it is at `maxmemory` and refused the write, or
    /// it evicted the lock while the call waited for it. Memory has to be freed (or
    /// `maxmemory` raised) before writes succeed again.
    #[error("'{key}': the node is out of memory ({detail})")]
    OutOfMemory {
        /// The key.
        key: String,
        /// The server's text, its code included.
        detail: String,
    },
    /// The guard's lock was lost before it was released; see [`LossReason`].
    #[error("lock '{key}' was lost: {reason}")]
    Lost {
        /// The lock's key.
        key: String,
        /// Why the lock was lost.
        reason: LossReason,
    },
    /// [`Lock::acquire`](crate::Lock::acquire) with a wait limit
    /// ([`LockOptions::wait`](crate::LockOptions::wait)) did not get the lock in time.
    #[error("timed out after {waited:?} waiting for lock '{key}'")]
    Timeout {
        /// The lock's key.
        key: String,
        /// How long the acquisition waited (from the call, to the millisecond): the wait
        /// limit, or more when the server answered late.
        waited: Duration,
    },
    /// The lock was granted, but fewer replicas than
    /// [`LockOptions::min_replicas`](crate::LockOptions::min_replicas) asked for acknowledged
    /// the grant in time; the hold was released.
    #[error(
        "lock '{key}' was granted but only {acked} of {wanted} replicas acknowledged it in \
         time; released it"
    )]
    NotReplicated {
        /// The lock's key.
        key: String,
        /// The replicas required.
        wanted: usize,
        /// The replicas that acknowledged the grant.
        acked: usize,
    },
    /// The server did not answer in time (see [`ClientOptions`](crate::ClientOptions)): it
    /// is stopped, overloaded, or cut off. A command that timed out may still have run.
    #[error("the server did not answer in time ({detail})")]
    Unresponsive {
        /// What was waited for.
        detail: String,
    },
    /// The node answered `READONLY`: it is a replica now (a failover), and kept being one
    /// while the acquisition tried again.
    #[error("lock '{key}': the node is a replica, not a master ({detail})")]
    ReadOnly {
        /// The lock's key.
        key: String,
        /// The server's error text.
        detail: String,
    },
    /// The client was closed with [`Client::close`](crate::Client::close).
    #[error("the client was closed")]
    Closed,
    /// A [`RedLock`](crate::RedLock) could not reach a majority of its servers before its
    /// wait ended, or for [`ClientOptions::quorum_timeout`](crate::ClientOptions::quorum_timeout)
    /// (they are down or cut off); nothing is held.
    #[error("RedLock '{key}': only {answered} of its servers answered, {needed} are needed")]
    NoQuorum {
        /// The lock's key.
        key: String,
        /// How many servers answered in the last round.
        answered: usize,
        /// The majority needed.
        needed: usize,
    },
    /// An argument the caller gave cannot work (for example a RedLock over an even number
    /// of servers).
    #[error("invalid argument: {detail}")]
    InvalidArgument {
        /// What is wrong with it.
        detail: String,
    },
    /// The server does not know the `LOCK.*` commands: the rlock module is not loaded.
    #[error(
        "the rlock module is not loaded on this Redis server ({detail}); \
         start it with `--loadmodule /path/to/librlock.so`"
    )]
    ModuleMissing {
        /// The server's own error text.
        detail: String,
    },
    /// A Redis Cluster kept redirecting one command (`MOVED`/`ASK`) for longer than the
    /// response timeout, pauses included: its slot keeps moving, or the nodes disagree about
    /// who serves it. The command was not run.
    #[error("gave up following Redis Cluster redirections for slot {slot} (the last to {to})")]
    TooManyRedirects {
        /// The key's slot.
        slot: u16,
        /// The node the last redirection pointed to, `host:port`.
        to: String,
    },
    /// A fault of the client itself (one of its tasks ended without an answer): not an I/O
    /// error, and trying again does not help.
    #[error("internal error in rlock-client: {detail}")]
    Internal {
        /// What went wrong.
        detail: String,
    },
    /// Any other error from the `redis` crate or the server (I/O, `WRONGTYPE`, `ERR ...`).
    #[error(transparent)]
    Redis(redis::RedisError),
}

impl From<redis::RedisError> for Error {
    /// A redirection that reaches the caller is one the client gave up following; a reply
    /// that did not come in time is [`Error::Unresponsive`].
    fn from(err: redis::RedisError) -> Error {
        if err.is_timeout() {
            return Error::Unresponsive {
                detail: err.to_string(),
            };
        }
        match err.redirect_node() {
            Some((to, slot)) => Error::TooManyRedirects {
                slot,
                to: to.to_owned(),
            },
            None => Error::Redis(err),
        }
    }
}

/// An I/O "timed out" error saying `what` did not come in time.
pub(crate) fn timed_out(what: &str) -> redis::RedisError {
    redis::RedisError::from(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        what.to_owned(),
    ))
}

/// `err`, met opening a connection to `addr`, naming that server: `cannot reach ADDR: ...`.
/// An I/O error stays one, of the same sort (refused, timed out, dropped); other errors (a
/// refused password) are left as they are.
pub(crate) fn unreachable(addr: &str, err: redis::RedisError) -> redis::RedisError {
    if !err.is_io_error() {
        return err;
    }
    let text = format!("cannot reach {addr}: {err}");
    std::io::Error::new(io_kind(&err), text).into()
}

/// The sort of an I/O error (refused, timed out, dropped), kept when it is named anew.
pub(crate) fn io_kind(err: &redis::RedisError) -> std::io::ErrorKind {
    use std::io::ErrorKind;
    if err.is_timeout() {
        ErrorKind::TimedOut
    } else if err.is_connection_refusal() {
        ErrorKind::ConnectionRefused
    } else if err.is_connection_dropped() {
        ErrorKind::ConnectionReset
    } else {
        ErrorKind::Other
    }
}

impl Error {
    /// `got`, or [`Error::Timeout`] for `key` when a wait that began at `started` ended
    /// without it.
    pub(crate) fn timeout_since<T>(
        got: Option<T>,
        key: &str,
        started: tokio::time::Instant,
    ) -> Result<T> {
        let waited = started.elapsed();
        got.ok_or_else(|| Error::Timeout {
            key: key.to_owned(),
            waited: Duration::from_millis(waited.as_millis().try_into().unwrap_or(u64::MAX)),
        })
    }

    /// How many redirections in a row one command follows at once; past them it pauses
    /// before each next one, a pause that grows, until the response timeout has passed
    /// since the first ([`Error::TooManyRedirects`]). A failover followed after a
    /// connection error counts as one; at most this many are followed.
    pub const MAX_REDIRECTS: usize = 5;

    /// Turns `ERR unknown command 'LOCK....'` into [`Error::ModuleMissing`].
    pub(crate) fn module_missing_if_unknown(self) -> Error {
        match self {
            Error::Redis(err) if is_unknown_lock_command(&err) => Error::ModuleMissing {
                detail: err.to_string(),
            },
            other => other,
        }
    }

    /// A failure of the client itself (a background task ended unexpectedly).
    pub(crate) fn internal(what: &str) -> Error {
        Error::Internal {
            detail: what.to_owned(),
        }
    }
}

fn is_unknown_lock_command(err: &redis::RedisError) -> bool {
    let detail = err.detail().unwrap_or_default().to_ascii_lowercase();
    err.code() == Some("ERR") && detail.starts_with("unknown command") && detail.contains("lock.")
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
