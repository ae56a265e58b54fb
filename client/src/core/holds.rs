//! What a client's `Core` does with holdings: records them with the watchdog and stops
//! renewing them, counts the holds it knows of, gives an acquisition its turn, and closes
//! (stops new acquisitions, releases every hold).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::time::Instant;

use crate::core::shared::Core;
use crate::hold::registry::{Grant, Holding};
use crate::hold::watchdog::WatchdogStats;
use crate::pure::ended::owner_prefix;
use crate::pure::error::{Error, LossReason, Result};
use crate::pure::kind::{Kind, Units};
use crate::pure::turns::Turn;

impl Core {
    /// Stops new acquisitions, and releases every hold of the client's guards (they report
    /// [`LossReason::Closed`] from then on). Returns the first error, after trying them all.
    pub(crate) async fn close(self: &Arc<Self>) -> Result<()> {
        self.closed.store(true, Ordering::SeqCst);
        let held = self.watchdog.drain();
        self.quiesce().await;
        let mut releases = tokio::task::JoinSet::new();
        for (holding, holds) in held {
            holding.mark_lost(LossReason::Closed);
            releases.spawn(release_holds(self.clone(), holding, holds));
        }
        let mut first = Ok(());
        while let Some(done) = releases.join_next().await {
            let outcome = done.unwrap_or_else(|_| Err(Error::internal("a release ended early")));
            if let (Ok(()), Err(err)) = (&first, outcome) {
                first = Err(err);
            }
        }
        first
    }

    /// Records a grant with the watchdog; the holding its guard shares. An owner id of
    /// another prefix than the client's (a RedLock's, on all but its first server) is
    /// listened for from now on: on the holding's node at once, then renewed, so that the
    /// server tracks it.
    pub(crate) fn register(&self, grant: &Grant<'_>) -> Arc<Holding> {
        let holding = self.watchdog.register(grant);
        let prefix = owner_prefix(grant.owner);
        if prefix != self.id && self.listeners.add_prefix(prefix) {
            let (listeners, node) = (self.listeners.clone(), self.router.node_for(grant.key));
            self.spawn(async move {
                listeners.ensure(&node).await;
                listeners.renew();
            });
        }
        holding
    }

    /// Stops renewing one hold of `kind` at once; true if a `LOCK.RELEASE` must follow.
    pub(crate) fn unregister(&self, holding: &Holding, kind: Kind, watchdog: bool) -> bool {
        self.watchdog.unregister(holding, kind, watchdog)
    }

    /// Waits until no renewal round is in flight.
    pub(crate) async fn quiesce(&self) {
        self.watchdog.quiesce().await;
    }

    /// Marks a holding lost, counting and reporting the loss if it is news.
    pub(crate) fn mark_lost(&self, holding: &Holding, reason: LossReason) {
        self.watchdog.mark_lost(holding, reason);
    }

    /// A release of one hold of `kind` of `holding`, which no guard holds, is about to be
    /// sent: it is in flight until [`Core::released`].
    pub(crate) fn sending(&self, holding: &Holding, kind: Kind) {
        self.watchdog.sending(holding, kind);
    }

    /// The release a true [`Core::unregister`] called for was answered (or is not sent).
    pub(crate) fn released(&self, holding: &Holding, kind: Kind) {
        self.watchdog.released(holding, kind);
    }

    /// What the server may count for `(key, owner)` and this client knows of, by token
    /// (see [`Units`]): its guards' and the releases in flight.
    pub(crate) fn known(&self, key: &str, owner: &str) -> Vec<(u64, Units)> {
        self.watchdog.known(key, owner)
    }

    /// Whether a release of `(key, owner)` is in flight for a holding no guard of this
    /// client holds (its hold is on its way out: an acquisition must not reenter it).
    pub(crate) fn leaving(&self, key: &str, owner: &str) -> bool {
        self.watchdog.leaving(key, owner)
    }

    /// Waits until no release of `(key, owner)` is in flight for a holding no guard holds
    /// (see `deliver.rs`), until `deadline`; false if one still was then.
    pub(crate) async fn settle(&self, key: &str, owner: &str, deadline: Option<Instant>) -> bool {
        let left = self.watchdog.left(key, owner);
        match deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, left).await.is_ok(),
            None => {
                left.await;
                true
            }
        }
    }

    /// The turn of an acquisition of `key` by `owner` (see `turns.rs`), waited for until
    /// `deadline`; `None` if the lock stayed busy.
    pub(crate) async fn take_turn(
        &self,
        key: &str,
        owner: &str,
        deadline: Option<Instant>,
    ) -> Option<Turn> {
        let grace = self.options.response_timeout_duration();
        self.turns.take(key, owner, deadline, grace).await
    }

    /// Counters of the watchdog's work.
    pub(crate) fn watchdog_stats(&self) -> WatchdogStats {
        self.watchdog.stats()
    }
}

/// Delivers `holds` releases of `holding` (see `deliver.rs`), stopping when the server
/// says it is free or not held. The holding of a read-write lock is released write holds
/// first, then read holds (the registry counts its holds, not their modes).
async fn release_holds(core: Arc<Core>, holding: Arc<Holding>, holds: usize) -> Result<()> {
    let modes: &[Kind] = match holding.kind {
        Kind::Lock => &[Kind::Lock],
        Kind::Read | Kind::Write => &[Kind::Write, Kind::Read],
        // A latch's wait is never a holding.
        Kind::Latch => &[],
        // One `SEM.RELEASE key owner TOKEN t` gives back all the owner's permits.
        Kind::Sem(_) => &[Kind::Sem(0)],
    };
    let mut left = holds;
    for &kind in modes {
        left = left.saturating_sub(release_mode(&core, &holding, kind, left).await?);
    }
    tracing::debug!(key = %holding.key, owner = %holding.owner, holds, "released at close");
    Ok(())
}

/// Delivers up to `most` releases of `kind`'s holds of `holding`, until the server says
/// none of that kind is left; how many holds it released.
async fn release_mode(
    core: &Arc<Core>,
    holding: &Arc<Holding>,
    kind: Kind,
    most: usize,
) -> Result<usize> {
    let (key, owner) = (&holding.key, &holding.owner);
    let patience = core.options.retry_count();
    for released in 0..most {
        core.sending(holding, kind);
        let answer = core.deliver_release(holding, kind, patience).await;
        match answer.map_err(|e| Error::from_command(e, key, owner)) {
            Ok(0) => return Ok(released + 1),
            Err(Error::NotHeld { .. }) => return Ok(released),
            Ok(_) => {}
            Err(err) => return Err(err),
        }
    }
    Ok(most)
}
