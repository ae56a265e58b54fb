//! What `run` holds while the command runs: a lock on one server, or a RedLock on several.

use std::time::{Duration, Instant};

use rlock_client::{Error, Guard, LossReason, RedLockGuard};

use crate::check::Holding;

/// A held lock, on one server or on a majority of several.
pub enum Held {
    /// A lock on one server (or one Redis Cluster).
    One(Guard),
    /// A RedLock on a majority of independent servers.
    Quorum(RedLockGuard),
}

impl Held {
    pub fn key(&self) -> &str {
        match self {
            Held::One(guard) => guard.key(),
            Held::Quorum(guard) => guard.key(),
        }
    }

    pub fn owner(&self) -> &str {
        match self {
            Held::One(guard) => guard.owner(),
            Held::Quorum(guard) => guard.owner(),
        }
    }

    /// The fencing token to give the command (a RedLock's: the largest of its servers').
    pub fn token(&self) -> u64 {
        match self {
            Held::One(guard) => guard.token(),
            Held::Quorum(guard) => guard.token(),
        }
    }

    /// What the servers show while it holds (`check.rs`).
    pub fn holding(&self) -> Holding {
        Holding {
            key: self.key().to_owned(),
            owner: self.owner().to_owned(),
            token: matches!(self, Held::One(_)).then(|| self.token()),
        }
    }

    /// The safe deadline: until then the lock is surely held (a RedLock: by a majority),
    /// unless a server said otherwise; renewals move it.
    pub fn valid_until(&self) -> Instant {
        match self {
            Held::One(guard) => guard.valid_until(),
            Held::Quorum(guard) => guard.valid_until(),
        }
    }

    /// How long the lock is surely held from now; zero once lost.
    pub fn remaining(&self) -> Duration {
        match self {
            Held::One(guard) => guard.remaining(),
            Held::Quorum(guard) => guard.remaining(),
        }
    }

    /// Resolves when the lock is lost (a RedLock: when fewer than a majority hold it).
    pub async fn lost(&self) -> LossReason {
        match self {
            Held::One(guard) => guard.lost().await,
            Held::Quorum(guard) => guard.lost().await,
        }
    }

    /// Releases the lock; [`Error::Lost`] if it was lost before.
    pub async fn release(self) -> Result<(), Error> {
        match self {
            Held::One(guard) => guard.release().await.map(drop),
            Held::Quorum(guard) => guard.release().await,
        }
    }
}
