//! What an error means to the caller: the server's refusals of a command, mapped to their
//! own [`Error`] variants with the server's text kept, and whether trying again may help.

use crate::pure::error::Error;

impl Error {
    /// True when the same call may succeed if made again later, nothing changed: the server
    /// was unreachable or slow to answer, a failover or a resharding was under way, the node
    /// held grants back, had as many waiters as it takes or too few replicas, a RedLock
    /// lacked a majority, replicas lagged, or a wait ran out. False for a refusal that stays
    /// one (a lock not held, an upgrade, a key of another kind, permits out of range, a node
    /// out of memory, a lost or closed holding, an argument that cannot work).
    pub fn is_retryable(&self) -> bool {
        use redis::RetryMethod::{AskRedirect, MovedRedirect, RefreshSlotsAndRetry};
        use redis::RetryMethod::{RetryImmediately, WaitAndRetry};
        match self {
            Error::Unresponsive { .. }
            | Error::HeldBack { .. }
            | Error::ReadOnly { .. }
            | Error::TooManyWaiters { .. }
            | Error::NoReplicas { .. }
            | Error::NoQuorum { .. }
            | Error::TooManyRedirects { .. }
            | Error::Timeout { .. }
            | Error::NotReplicated { .. } => true,
            Error::Redis(err) => {
                err.is_io_error()
                    || matches!(
                        err.retry_method(),
                        WaitAndRetry
                            | RetryImmediately
                            | MovedRedirect
                            | AskRedirect
                            | RefreshSlotsAndRetry
                    )
            }
            _ => false,
        }
    }

    /// The error an acquisition of `key` ends with: a node's refusal to grant for a while
    /// (`TRYAGAIN rlock: ...`, retried within the wait first) is [`Error::HeldBack`].
    pub(crate) fn held_back_at(self, key: &str) -> Error {
        match self {
            Error::Redis(err) if is_held_back(&err) => Error::of_key(err, key),
            other => other,
        }
    }

    /// Maps an error of a command on `key`, whoever sent it (`INFO`, `FORCERELEASE`,
    /// `SEM.PERMITS`, a latch's): the server's refusals to their own variants, the
    /// server's text kept; a missing module.
    pub(crate) fn of_key(err: redis::RedisError, key: &str) -> Error {
        let (code, detail) = (err.code(), err.detail().unwrap_or_default());
        let text = format!("{} {detail}", code.unwrap_or_default());
        let key = key.to_owned();
        match code {
            Some("WRONGTYPE") => Error::WrongType { key, detail: text },
            Some("READONLY") => Error::ReadOnly {
                key,
                detail: detail.to_owned(),
            },
            Some("TRYAGAIN") if is_held_back(&err) => Error::HeldBack { key, detail: text },
            Some("NOREPLICAS") => Error::NoReplicas { key, detail: text },
            Some("OOM") => Error::OutOfMemory { key, detail: text },
            Some("ERR") if detail.starts_with("too many waiters") => {
                Error::TooManyWaiters { key, detail: text }
            }
            Some("ERR") if is_permits_out_of_range(detail) => {
                Error::PermitsOutOfRange { key, detail: text }
            }
            _ => Error::from(err).module_missing_if_unknown(),
        }
    }

    /// Maps a server or connection error of a `LOCK.*` command on `key` by `owner`: those
    /// of [`Error::of_key`], and the refusals of that owner's command.
    pub(crate) fn from_command(err: redis::RedisError, key: &str, owner: &str) -> Error {
        let (key, detail) = (key.to_owned(), err.detail().unwrap_or_default().to_owned());
        match err.code() {
            Some("NOTHELD") => Error::NotHeld {
                key,
                owner: owner.to_owned(),
            },
            Some("ERR") if is_upgrade(&detail) => Error::Upgrade {
                key,
                owner: owner.to_owned(),
            },
            Some("ERR") => match too_many_permits(&detail) {
                Some((asked, total)) => Error::TooManyPermits {
                    key,
                    asked,
                    total,
                    detail,
                },
                None => Error::of_key(err, &key),
            },
            _ => Error::of_key(err, &key),
        }
    }
}

/// `TRYAGAIN rlock: ...`: the node holds grants back for a while (stalled, promoted a
/// moment ago, writes paused); a `TRYAGAIN` of a slot in migration is not one.
fn is_held_back(err: &redis::RedisError) -> bool {
    err.code() == Some("TRYAGAIN") && err.detail().is_some_and(|d| d.starts_with("rlock: "))
}

/// `ERR permits must be ...`, `ERR the total of permits must be ...`, `ERR the permits to
/// add must be ...`: a number of permits out of range.
fn is_permits_out_of_range(detail: &str) -> bool {
    ["permits", "the total of permits", "the permits to add"]
        .iter()
        .any(|name| {
            detail
                .strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(" must be "))
        })
}

/// `ERR rlock: ... upgrade ...`: the server's refusal of a write hold to a reader.
fn is_upgrade(detail: &str) -> bool {
    detail.starts_with("rlock: ") && detail.contains("upgrade")
}

/// `ERR rlock: asks for <n> permits; the semaphore has <total>`: `(n, total)`.
fn too_many_permits(detail: &str) -> Option<(u64, u64)> {
    let rest = detail.strip_prefix("rlock: asks for ")?;
    let (asked, total) = rest.split_once(" permits; the semaphore has ")?;
    Some((asked.parse().ok()?, total.trim().parse().ok()?))
}

#[cfg(test)]
#[path = "refusal_tests.rs"]
mod tests;
