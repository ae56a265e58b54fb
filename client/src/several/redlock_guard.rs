//! [`RedLockGuard`]: a RedLock's holding, the members its tasks keep (`keeper.rs`).

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use crate::pure::error::{Error, LossReason, Result};
use crate::several::election::Won;
use crate::several::keeper::Held;
use crate::several::signal::GroupSignal;

/// A RedLock held on a majority of its servers. While it holds, it keeps a member on
/// every server it can reach: servers that were busy or down when it won are queued on,
/// and a member that is lost is taken back, as long as a majority of members hold. So it
/// survives the loss of any minority of servers. Lost once fewer than a majority of its
/// members hold (a server that stops answering loses its member at that member's safe
/// deadline), for good.
///
/// Dropping it releases every member in the background.
#[must_use = "the lock is released when the guard is dropped"]
pub struct RedLockGuard {
    key: String,
    owner: String,
    token: u64,
    quorum: usize,
    held: Arc<Held>,
    /// One per server: they keep its member.
    tasks: JoinSet<()>,
}

impl fmt::Debug for RedLockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedLockGuard")
            .field("key", &self.key)
            .field("token", &self.token)
            .field("quorum", &self.quorum)
            .field("held_on", &self.held.live())
            .finish()
    }
}

impl RedLockGuard {
    pub(crate) fn new(key: &str, quorum: usize, won: Won) -> RedLockGuard {
        RedLockGuard {
            key: key.to_owned(),
            owner: won.owner.to_string(),
            token: won.token,
            quorum,
            held: won.held,
            tasks: won.tasks,
        }
    }

    /// The fencing token: the largest of the granting servers' tokens. Every server that
    /// granted was raised to it (`LOCK.RAISE`), so a later holding, whose majority shares
    /// a server with this one, gets a larger token, as long as that server kept its counter
    /// (see the README).
    pub fn token(&self) -> u64 {
        self.token
    }

    /// The lock's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The owner id holding the lock on every server.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// On how many servers a live member holds now (at least a majority, until lost).
    pub fn held_on(&self) -> usize {
        self.held.live()
    }

    /// The live members' fencing tokens, in the canonical order of their servers.
    pub fn tokens(&self) -> Vec<u64> {
        self.held.tokens()
    }

    /// True once fewer than a majority of members surely hold (a clock check).
    pub fn is_lost(&self) -> bool {
        self.held.is_lost()
    }

    /// Why a member was lost, once the lock is.
    pub fn loss_reason(&self) -> Option<LossReason> {
        self.is_lost().then(|| self.held.a_loss()).flatten()
    }

    /// Resolves when fewer than a majority of members hold, by their deadlines at the latest.
    pub async fn lost(&self) -> LossReason {
        self.held.lost().await
    }

    /// A signal of this holding's loss that can be moved into spawned work; see
    /// [`GroupSignal`].
    pub fn lost_signal(&self) -> GroupSignal {
        GroupSignal::quorum(&self.held, self.token)
    }

    /// Until when a majority of members surely hold.
    pub fn valid_until(&self) -> Instant {
        self.held.valid_until()
    }

    /// How long a majority surely holds from now; zero once lost.
    pub fn remaining(&self) -> Duration {
        self.valid_until().saturating_duration_since(Instant::now())
    }

    /// Releases every member (at once), and a grant still on its way from a server that had
    /// not answered the acquisition yet, if it comes within the per-server try limit (a fifth
    /// of the lease, at least 100 ms, at most the response timeout); a later one is released
    /// in the background. Fails with [`Error::Lost`] if
    /// the lock was lost (fewer than a majority held); members a minority of servers could
    /// not release end with their leases.
    pub async fn release(mut self) -> Result<()> {
        let (lost, reason, errors) = self.held.release().await;
        // Each task ends now that the holding is closed; a try still on its way first (see
        // `attempt.rs`), so that no member it gets outlives this.
        while self.tasks.join_next().await.is_some() {}
        if lost {
            return Err(Error::Lost {
                key: self.key.clone(),
                reason: reason.unwrap_or(LossReason::Expired),
            });
        }
        for err in errors {
            tracing::debug!(%err, "a RedLock member was not released; it ends with its lease");
        }
        Ok(())
    }
}

impl Drop for RedLockGuard {
    fn drop(&mut self) {
        self.tasks.abort_all();
        // Dropped members release themselves in the background.
        drop(self.held.close());
    }
}
