//! What an error means to the caller: the server's refusals of a command, mapped to their
//! own [`Error`] variants with the server's text kept, and whether trying again may help.

use crate::pure::error::Error;

impl Error {
    /// True when the same call may succeed if made again later, nothing changed: the server
    /// was unreachable or slow to answer, a failover or a resharding was under way, a
    /// RedLock lacked a majority, replicas lagged, or a wait ran out. False for a refusal
    /// that stays one (a lock not held, an upgrade, a key of another kind, too many
    /// permits, a lost or closed holding, an argument that cannot work).
    pub fn is_retryable(&self) -> bool {
        use redis::RetryMethod::{AskRedirect, MovedRedirect, RefreshSlotsAndRetry};
        use redis::RetryMethod::{RetryImmediately, WaitAndRetry};
        match self {
            Error::Unresponsive { .. }
            | Error::HeldBack { .. }
            | Error::ReadOnly { .. }
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
            Error::Redis(err)
                if err.code() == Some("TRYAGAIN")
                    && err.detail().is_some_and(|d| d.starts_with("rlock: ")) =>
            {
                Error::HeldBack {
                    key: key.to_owned(),
                    detail: format!("TRYAGAIN {}", err.detail().unwrap_or_default()),
                }
            }
            other => other,
        }
    }

    /// Maps an error of a command that reads or removes `key` whoever holds it (`INFO`,
    /// `FORCERELEASE`): a key of another kind, a missing module.
    pub(crate) fn of_key(err: redis::RedisError, key: &str) -> Error {
        match err.code() {
            Some("WRONGTYPE") => Error::WrongType {
                key: key.to_owned(),
                detail: format!("WRONGTYPE {}", err.detail().unwrap_or_default()),
            },
            _ => Error::from(err).module_missing_if_unknown(),
        }
    }

    /// Maps a server or connection error of a `LOCK.*` command on `key` by `owner`.
    pub(crate) fn from_command(err: redis::RedisError, key: &str, owner: &str) -> Error {
        let (key, detail) = (key.to_owned(), err.detail().unwrap_or_default().to_owned());
        match err.code() {
            Some("NOTHELD") => Error::NotHeld {
                key,
                owner: owner.to_owned(),
            },
            Some("READONLY") => Error::ReadOnly { key, detail },
            Some("WRONGTYPE") => Error::of_key(err, &key),
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
                None => Error::from(err).module_missing_if_unknown(),
            },
            _ => Error::from(err).module_missing_if_unknown(),
        }
    }
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
