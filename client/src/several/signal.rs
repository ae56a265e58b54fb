//! [`GroupSignal`]: the loss signal of a holding over several locks (a [`MultiGuard`]'s, a
//! [`RedLockGuard`]'s), as [`LostSignal`] is a [`Guard`]'s; and what `with_lock` does
//! with the outcome of the work and of the release.
//!
//! [`MultiGuard`]: crate::MultiGuard
//! [`RedLockGuard`]: crate::RedLockGuard
//! [`Guard`]: crate::Guard

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::pure::error::{Error, LossReason, Result};
use crate::pure::holding::LostSignal;
use crate::several::keeper::{losses, Held};

/// A signal that tells when a [`MultiGuard`](crate::MultiGuard)'s or a
/// [`RedLockGuard`](crate::RedLockGuard)'s holding is lost, like a cancellation token: cheap
/// to clone, `Send + 'static`, so it can be moved into spawned work. A MultiLock's is lost
/// when any member is; a RedLock's when fewer than a majority of its members hold. Holding
/// a signal does not keep the lock: the guard does.
#[derive(Clone)]
pub struct GroupSignal {
    inner: Inner,
}

#[derive(Clone)]
enum Inner {
    /// Lost when fewer than a majority of the members hold.
    Quorum { held: Arc<Held>, token: u64 },
    /// Lost when any member is.
    All(Arc<[LostSignal]>),
}

impl fmt::Debug for GroupSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupSignal")
            .field("lost", &self.reason())
            .finish()
    }
}

impl GroupSignal {
    pub(crate) fn quorum(held: &Arc<Held>, token: u64) -> GroupSignal {
        let held = held.clone();
        GroupSignal {
            inner: Inner::Quorum { held, token },
        }
    }

    pub(crate) fn all(members: Vec<LostSignal>) -> GroupSignal {
        GroupSignal {
            inner: Inner::All(members.into()),
        }
    }

    /// True once the holding is lost (a clock check).
    pub fn is_lost(&self) -> bool {
        match &self.inner {
            Inner::Quorum { held, .. } => held.is_lost(),
            Inner::All(members) => members.iter().any(LostSignal::is_lost),
        }
    }

    /// Why (a member of) the holding was lost, once it is.
    pub fn reason(&self) -> Option<LossReason> {
        match &self.inner {
            Inner::Quorum { held, .. } => held.is_lost().then(|| held.a_loss()).flatten(),
            Inner::All(members) => members.iter().find_map(LostSignal::reason),
        }
    }

    /// Resolves when the holding is lost, by its safe deadline at the latest.
    pub async fn lost(&self) -> LossReason {
        match &self.inner {
            Inner::Quorum { held, .. } => held.lost().await,
            Inner::All(members) => {
                losses(members.to_vec(), 1).await;
                self.reason().unwrap_or(LossReason::Expired)
            }
        }
    }

    /// The fencing tokens: a RedLock's one token, or a MultiLock's members' tokens in the
    /// canonical order.
    pub fn tokens(&self) -> Vec<u64> {
        match &self.inner {
            Inner::Quorum { token, .. } => vec![*token],
            Inner::All(members) => members.iter().map(LostSignal::token).collect(),
        }
    }

    /// Until when the holding surely lasts, unless a server took it away.
    pub fn valid_until(&self) -> Instant {
        match &self.inner {
            Inner::Quorum { held, .. } => held.valid_until(),
            Inner::All(members) => {
                let until = members.iter().map(LostSignal::valid_until).min();
                until.unwrap_or_else(Instant::now)
            }
        }
    }

    /// How long the holding surely lasts from now; zero once lost.
    pub fn remaining(&self) -> Duration {
        if self.is_lost() {
            return Duration::ZERO;
        }
        self.valid_until().saturating_duration_since(Instant::now())
    }
}

/// Runs `work` until it ends, or until `signal` says the holding is lost: then `work` is
/// dropped, and the reason returned.
pub(crate) async fn unless_lost<T>(
    signal: &GroupSignal,
    work: impl std::future::Future<Output = T>,
) -> std::result::Result<T, LossReason> {
    tokio::select! {
        biased;
        reason = signal.lost() => Err(reason),
        value = work => Ok(value),
    }
}

/// What `with_lock` returns: the work's value, unless the holding was lost while it ran or
/// the release found it lost; a release that failed otherwise is logged (the locks end with
/// their leases).
pub(crate) fn finish<T>(
    key: &str,
    done: std::result::Result<T, LossReason>,
    released: Result<()>,
) -> Result<T> {
    let lost = |reason| Error::Lost {
        key: key.to_owned(),
        reason,
    };
    match (done, released) {
        (Err(reason), _) => Err(lost(reason)),
        (Ok(_), Err(Error::Lost { reason, .. })) => Err(lost(reason)),
        (Ok(value), Err(err)) => {
            tracing::warn!(%key, %err, "could not release after the work; the locks end with their leases");
            Ok(value)
        }
        (Ok(value), Ok(())) => Ok(value),
    }
}
