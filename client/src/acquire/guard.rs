//! The guard of one held hold: its token, its loss signal, its release.

use std::fmt;
use std::sync::{Arc, Weak};

use tokio::time::Instant;

use crate::core::shared::Core;
use crate::hold::registry::{Grant, Holding};
use crate::pure::commands;
use crate::pure::error::{Error, LossReason, Result};
use crate::pure::holding::{Fence, Fenced, LostSignal};
use crate::pure::kind::Kind;
use crate::pure::options::LockOptions;
use crate::pure::scope::Outside;

/// One hold on a lock. While it lives, the client's watchdog renews the lock (unless it was
/// taken with an explicit lease) and watches for its loss.
///
/// [`release`](Guard::release) is the clean path and reports the outcome. Dropping the guard
/// stops the renewal at once and releases the hold in the background on the client's
/// runtime; if that runtime has shut down, the hold ends with its lease instead.
#[must_use = "the lock is released when the guard is dropped"]
pub struct Guard {
    core: Arc<Core>,
    holding: Arc<Holding>,
    /// What this hold is: of a plain lock, or a read or a write hold.
    kind: Kind,
    /// The options it was acquired with (a downgrade takes its read hold with them).
    options: LockOptions,
    watchdog: bool,
    released: bool,
    /// Counts it as its acquiring task's while it lives, if acquired outside any scope.
    outside: Option<Box<Outside>>,
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard")
            .field("key", &self.holding.key)
            .field("owner", &self.holding.owner)
            .field("token", &self.holding.token)
            .field("lost", &self.holding.lost_reason())
            .finish()
    }
}

impl Guard {
    pub(crate) fn new(
        core: &Arc<Core>,
        (kind, key, owner): (Kind, &str, &str),
        token: u64,
        options: LockOptions,
        at: Instant,
    ) -> Guard {
        let watchdog = options.watchdog_enabled();
        let grant = Grant {
            key,
            owner,
            kind,
            token,
            lease: options.lease_duration(),
            watchdog,
            at,
        };
        Guard {
            holding: core.register(&grant),
            core: core.clone(),
            kind,
            options,
            watchdog,
            released: false,
            outside: None,
        }
    }

    /// The guard, counted as held by its acquiring task outside any scope.
    pub(crate) fn held_outside(mut self, outside: Outside) -> Guard {
        self.outside = Some(Box::new(outside));
        self
    }

    /// Its client's core, what it holds, and the options it was acquired with.
    pub(crate) fn parts(&self) -> (&Arc<Core>, Kind, LockOptions) {
        (&self.core, self.kind, self.options)
    }

    /// The fencing token of the holding: pass it to the resources you protect, and have them
    /// refuse any token lower than the highest they have seen.
    pub fn token(&self) -> u64 {
        self.holding.token
    }

    /// The lock's key.
    pub fn key(&self) -> &str {
        &self.holding.key
    }

    /// The owner id holding the lock.
    pub fn owner(&self) -> &str {
        &self.holding.owner
    }

    /// Whether the watchdog renews this hold.
    pub fn has_watchdog(&self) -> bool {
        self.watchdog
    }

    /// True once the lock is lost, or may be: the server said so, or the safe deadline
    /// ([`valid_until`](Guard::valid_until)) passed without a renewal. The critical section
    /// is then unprotected. This reads the clock: it is true from the deadline on, even if
    /// the watchdog could not run (a paused process, a blocked runtime).
    pub fn is_lost(&self) -> bool {
        self.holding.lost_reason().is_some()
    }

    /// The safe deadline: the send time of the request that last set the lease, plus the
    /// lease, minus the client's margin ([`ClientOptions::margin`](crate::ClientOptions::margin)).
    /// The lock is held at least until then unless the server took it away; each renewal
    /// moves it.
    pub fn valid_until(&self) -> std::time::Instant {
        self.holding.deadline().into_std()
    }

    /// How long the lock is surely held from now ([`valid_until`](Guard::valid_until) minus
    /// now); zero once lost.
    pub fn remaining(&self) -> std::time::Duration {
        self.lost_signal().remaining()
    }

    /// A signal of this guard's loss that can be moved into spawned work, like a
    /// cancellation token; see [`LostSignal`].
    pub fn lost_signal(&self) -> LostSignal {
        let fence = Arc::new(Fencer {
            core: Arc::downgrade(&self.core),
            holding: self.holding.clone(),
            kind: self.kind,
        });
        LostSignal::new(&self.holding, fence)
    }

    /// Why the lock was lost, if it was.
    pub fn loss_reason(&self) -> Option<LossReason> {
        self.holding.lost_reason()
    }

    /// Resolves when the lock is lost: a renewal answered 0 (force release, deletion) or
    /// `READONLY` (a failover), or the safe deadline passed without a successful renewal
    /// (server unreachable or paused, an explicit lease ended). It has a timer of its own:
    /// it resolves at the deadline at the latest, whatever the watchdog is doing. Never
    /// resolves while the lock is safely held.
    ///
    /// ```no_run
    /// # async fn demo(guard: rlock_client::Guard) {
    /// tokio::select! {
    ///     reason = guard.lost() => eprintln!("lock lost ({reason}); abandoning the work"),
    ///     () = do_the_work() => {}
    /// }
    /// # }
    /// # async fn do_the_work() {}
    /// ```
    pub async fn lost(&self) -> LossReason {
        self.holding.lost().await
    }

    /// Releases this one hold. Returns the holds that remain for the owner (0: the lock is
    /// free, or handed to the next waiter; for a read-write lock, those of this guard's mode:
    /// 0 after the last write hold is a downgrade if read holds remain; for a semaphore, the
    /// owner's permits that remain, this guard's given back). Fails with
    /// [`Error::Lost`] if the lock was lost before the release.
    ///
    /// The renewal stops before the `LOCK.RELEASE` is sent: no `LOCK.RENEW` for this hold
    /// reaches the server after it. The release carries the holding's token, so it cannot
    /// free a newer holding of the same owner; none is sent once the server said the lock
    /// is not held. Completes even if this future is dropped.
    pub async fn release(mut self) -> Result<u64> {
        self.start_release().await
    }

    /// Marks the guard released, stops the renewal now, and returns the (spawned) release.
    pub(crate) fn start_release(&mut self) -> impl std::future::Future<Output = Result<u64>> {
        self.released = true;
        let job = release_job(&self.core, &self.holding, self.kind, self.watchdog);
        let task = self.core.spawn(job);
        async move {
            task.await
                .map_err(|_| Error::internal("the releasing task ended without an answer"))?
        }
    }

    pub(crate) fn is_released(&self) -> bool {
        self.released
    }

    /// Runs `cmd` on the lock's node only while this holding is the lock's current one, in
    /// one atomic step on the server (`LOCK.FENCED`): a write accepted means the holding was
    /// current when it ran, even if this process was paused past its lease. Returns the
    /// command's reply. The command's keys must be in the lock's slot in a cluster (a hash
    /// tag: `lock:{order:42}` guards `order:{order:42}`); `EVAL`/`FCALL` run several writes.
    ///
    /// Fails with [`Error::Lost`] (and the guard is lost from then on) when the server says
    /// the holding is gone: the lock is free, someone else holds it, or this owner holds a
    /// newer holding. The server decides, not the client's clock: a guard whose safe deadline
    /// passed may still write if the server still has its holding.
    ///
    /// ```no_run
    /// # async fn demo(guard: rlock_client::Guard) -> rlock_client::Result<()> {
    /// let mut hset = redis::cmd("HSET");
    /// hset.arg("order:{order:42}").arg("state").arg("paid");
    /// let added: i64 = guard.fenced(&hset).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn fenced<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T> {
        fenced(&self.core, &self.holding, self.kind, cmd).await
    }
}

/// `cmd` run fenced by `holding`; a holding the server says is gone is lost from then on,
/// but a read hold's `NOTHELD` (its owner holds no write hold) is [`Error::NotHeld`] alone.
async fn fenced<T: redis::FromRedisValue>(
    core: &Core,
    holding: &Holding,
    kind: Kind,
    cmd: &redis::Cmd,
) -> Result<T> {
    let (key, owner) = (&holding.key, &holding.owner);
    let fenced = commands::fenced(key, owner, holding.token, cmd);
    let answer = core.query(key, &fenced).await;
    answer.map_err(|err| match (err.code(), kind) {
        (Some("NOTHELD"), Kind::Read) => Error::from_command(err, key, owner),
        (Some("NOTHELD" | "FENCED"), _) => {
            core.mark_lost(holding, LossReason::NotHeld);
            lost_error(holding, LossReason::NotHeld)
        }
        _ => core.named(Error::from_command(err, key, owner), key),
    })
}

/// The way from a guard's loss signals to fenced commands on its holding. A signal does not
/// keep its client alive: once every handle of the client is gone, it fails with `Closed`.
struct Fencer {
    core: Weak<Core>,
    holding: Arc<Holding>,
    kind: Kind,
}

impl Fence for Fencer {
    fn fenced<'a>(&'a self, cmd: &'a redis::Cmd) -> Fenced<'a> {
        let core = self.core.upgrade();
        Box::pin(async move {
            let core = core.ok_or(Error::Closed)?;
            fenced(&core, &self.holding, self.kind, cmd).await
        })
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.released {
            tracing::debug!(key = %self.key(), owner = %self.owner(), "guard dropped; releasing in the background");
            let job = release_job(&self.core, &self.holding, self.kind, self.watchdog);
            drop(self.core.spawn(job));
        }
    }
}

/// Stops renewing this hold now; returns the work that tells the server (see `deliver.rs`).
fn release_job(
    core: &Arc<Core>,
    holding: &Arc<Holding>,
    kind: Kind,
    watchdog: bool,
) -> impl std::future::Future<Output = Result<u64>> + Send + 'static {
    let counted = core.unregister(holding, kind, watchdog);
    let (core, holding) = (core.clone(), holding.clone());
    async move {
        if !counted {
            let reason = holding.lost_reason().unwrap_or(LossReason::NotHeld);
            return Err(lost_error(&holding, reason));
        }
        send_release(&core, &holding, kind).await
    }
}

/// The `LOCK.RELEASE` of one hold that the registry forgot, unless the server said the
/// holding is not ours.
async fn send_release(core: &Arc<Core>, holding: &Arc<Holding>, kind: Kind) -> Result<u64> {
    // A renewal round may be on its way with this lock in it: let it land first.
    core.quiesce().await;
    let lost = holding.lost_reason();
    if let Some(reason @ (LossReason::NotHeld | LossReason::Closed)) = lost {
        // The server said it is not ours (or `close` released it): nothing to release.
        core.released(holding, kind);
        return Err(lost_error(holding, reason));
    }
    let patience = core.options().retry_count();
    let answer = core.deliver_release(holding, kind, patience).await;
    let key = &holding.key;
    let answer = answer.map_err(|e| core.named(Error::from_command(e, key, &holding.owner), key));
    match (answer, lost) {
        (_, Some(reason)) => Err(lost_error(holding, reason)),
        (Ok(remaining), None) => {
            tracing::debug!(key = %holding.key, owner = %holding.owner, remaining, "lock released");
            Ok(remaining)
        }
        (Err(Error::NotHeld { .. }), None) => {
            core.mark_lost(holding, LossReason::NotHeld);
            Err(lost_error(holding, LossReason::NotHeld))
        }
        (Err(err), None) => Err(err),
    }
}

fn lost_error(holding: &Holding, reason: LossReason) -> Error {
    Error::Lost {
        key: holding.key.clone(),
        reason,
    }
}
