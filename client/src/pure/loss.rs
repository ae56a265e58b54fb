//! Why a held lock was lost.

use std::fmt;

use crate::pure::ended::EndCause;

/// Why a held lock was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LossReason {
    /// The server said the owner no longer holds the lock: a renewal answered 0, a release
    /// answered `NOTHELD`, or the same owner was granted a new holding (new token) meanwhile.
    /// Typical causes: `LOCK.FORCERELEASE`, a `DEL`, or the lease ran out on the server,
    /// when the server's announcement of it did not reach the client (see [`LossReason::Ended`]).
    NotHeld,
    /// The server announced that it ended the holding, and why: it was force-released, its
    /// key was deleted, renamed, moved, overwritten, restored, flushed, swapped or evicted,
    /// or its lease ran out on the server. Seen as soon as the announcement arrives, without
    /// waiting for the next renewal.
    Ended(EndCause),
    /// The safe deadline passed without a successful renewal (the server did not answer in
    /// time, the process or its runtime was paused), or, without the watchdog, the explicit
    /// lease ended. The deadline comes a margin before the server's lease ends.
    Expired,
    /// A renewal was refused with `READONLY`: the node that held the lock became a replica
    /// (a failover). The new master may or may not have the lock; the client does not count
    /// on it.
    Demoted,
    /// [`Client::close`](crate::Client::close) released the lock.
    Closed,
}

impl fmt::Display for LossReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LossReason::NotHeld => "the server says it is no longer held",
            LossReason::Ended(cause) => return write!(f, "the server ended it: {cause}"),
            LossReason::Expired => "its lease ran out without renewal",
            LossReason::Demoted => "its node became a replica",
            LossReason::Closed => "the client was closed",
        })
    }
}
