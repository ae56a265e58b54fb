//! One holding on the server, `(key, owner, token)`, as the client's guards see it: its safe
//! deadline and its loss. Pure bookkeeping, no Redis in it: a loss signal's fenced commands
//! go through the [`Fence`] its guard gave it.
//!
//! The safe deadline is the send time of the request that last set the lease, plus that
//! lease, minus a margin ([`margin_for`]). The server's lease started after that send, so
//! the lock is surely held until the deadline. Past it, the holding counts as lost whatever
//! the watchdog is doing: [`Holding::lost_reason`] reads the clock, and [`Holding::lost`]
//! sleeps until the deadline, so neither waits for a renewal round, and a process or runtime
//! that was paused sees the loss the moment it looks. A loss is final: no later answer
//! revives the holding.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{sleep_until, Instant};

use crate::pure::error::{Error, LossReason, Result};
use crate::pure::kind::Kind;

/// The reply of a command run fenced by a holding.
pub(crate) type Fenced<'a> = Pin<Box<dyn Future<Output = Result<redis::Value>> + Send + 'a>>;

/// Runs commands fenced by one holding (`LOCK.FENCED`), for its loss signals.
pub(crate) trait Fence: Send + Sync {
    /// `cmd`, run only while the holding is the lock's current one.
    fn fenced<'a>(&'a self, cmd: &'a redis::Cmd) -> Fenced<'a>;
}

/// How much of a lease the client does not count on: the configured margin (one round trip,
/// the time work needs to stop) plus 1% of the lease for clock drift, at most half the lease.
pub(crate) fn margin_for(lease: Duration, margin: Duration) -> Duration {
    (margin + lease / 100).min(lease / 2)
}

/// `at + lease - margin`: until then a lease set by a request sent at `at` surely runs.
pub(crate) fn safe_deadline(at: Instant, lease: Duration, margin: Duration) -> Instant {
    at + (lease - margin_for(lease, margin))
}

#[derive(Debug, Clone, Copy)]
struct State {
    lost: Option<LossReason>,
    deadline: Instant,
}

/// One holding, shared by the guards (and loss signals) of its holds.
#[derive(Debug)]
pub(crate) struct Holding {
    pub(crate) key: String,
    pub(crate) owner: String,
    pub(crate) token: u64,
    /// The kind of its first hold: which family (`LOCK.*`, `RWLOCK.*`) renews it.
    pub(crate) kind: Kind,
    state: watch::Sender<State>,
    /// The client's count of losses, shared by its holdings.
    losses: Arc<AtomicU64>,
}

impl Holding {
    pub(crate) fn new(
        (key, owner, kind): (&str, &str, Kind),
        token: u64,
        deadline: Instant,
        losses: &Arc<AtomicU64>,
    ) -> Arc<Holding> {
        Arc::new(Holding {
            key: key.to_owned(),
            owner: owner.to_owned(),
            token,
            kind,
            state: watch::Sender::new(State {
                lost: None,
                deadline,
            }),
            losses: losses.clone(),
        })
    }

    /// The safe deadline: until then the lock is surely held, unless the server said otherwise.
    pub(crate) fn deadline(&self) -> Instant {
        self.state.borrow().deadline
    }

    /// Why the holding was lost, if it was; past the deadline, it is ([`LossReason::Expired`]).
    pub(crate) fn lost_reason(&self) -> Option<LossReason> {
        let state = *self.state.borrow();
        if state.lost.is_none() && Instant::now() >= state.deadline {
            self.mark_lost(LossReason::Expired);
            return self.state.borrow().lost;
        }
        state.lost
    }

    /// Marks the holding lost; true (and counted, and logged) if it was not lost before.
    pub(crate) fn mark_lost(&self, reason: LossReason) -> bool {
        let fresh = self.state.send_if_modified(|state| {
            let fresh = state.lost.is_none();
            if fresh {
                state.lost = Some(reason);
            }
            fresh
        });
        if fresh {
            self.losses.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(key = %self.key, owner = %self.owner, token = self.token, %reason, "lock lost");
        }
        fresh
    }

    /// Moves the safe deadline to `deadline`, unless the holding is already lost (a deadline
    /// that has passed is a loss, whatever answer comes late). True if moved.
    pub(crate) fn set_deadline(&self, deadline: Instant) -> bool {
        if self.lost_reason().is_some() {
            return false;
        }
        self.state.send_if_modified(|state| {
            let live = state.lost.is_none() && Instant::now() < state.deadline;
            if live {
                state.deadline = deadline;
            }
            live
        })
    }

    /// Resolves when the holding is lost, at its deadline at the latest.
    pub(crate) async fn lost(&self) -> LossReason {
        let mut changes = self.state.subscribe();
        loop {
            // Marked seen before the check: a loss marked after it wakes the wait below.
            let deadline = changes.borrow_and_update().deadline;
            if let Some(reason) = self.lost_reason() {
                return reason;
            }
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        // Cannot happen (the sender lives in `self`); the deadline still holds.
                        sleep_until(deadline).await;
                    }
                }
                () = sleep_until(deadline) => {}
            }
        }
    }
}

/// A signal that tells when a lock is lost, like a cancellation token: cheap to clone,
/// `Send + 'static`, so it can be moved into spawned work. From
/// [`Guard::lost_signal`](crate::Guard::lost_signal).
///
/// It fires when the server says the lock is no longer held, when the node that holds it
/// became a replica, or at the lock's safe deadline
/// ([`valid_until`](LostSignal::valid_until)) if no renewal moved it, whatever the watchdog
/// is doing. Holding a signal does not keep the lock: the guard does.
///
/// ```no_run
/// # async fn demo(guard: rlock_client::Guard) {
/// let lost = guard.lost_signal();
/// let work = tokio::spawn(async move {
///     tokio::select! {
///         reason = lost.lost() => Err(reason),
///         () = copy_the_files() => Ok(()),
///     }
/// });
/// # let _ = work.await;
/// # }
/// # async fn copy_the_files() {}
/// ```
#[derive(Clone)]
pub struct LostSignal {
    holding: Arc<Holding>,
    fence: Arc<dyn Fence>,
}

impl fmt::Debug for LostSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LostSignal")
            .field("key", &self.holding.key)
            .field("token", &self.holding.token)
            .field("lost", &self.holding.lost_reason())
            .finish()
    }
}

impl LostSignal {
    pub(crate) fn new(holding: &Arc<Holding>, fence: Arc<dyn Fence>) -> LostSignal {
        LostSignal {
            holding: holding.clone(),
            fence,
        }
    }

    /// The owner id holding the lock.
    pub fn owner(&self) -> &str {
        &self.holding.owner
    }

    /// Runs `cmd` only while this holding is the lock's current one, as
    /// [`Guard::fenced`](crate::Guard::fenced) does (`LOCK.FENCED`, one atomic step on the
    /// server): fails with [`Error::Lost`] when the server says the holding is gone (a
    /// signal kept after its guard's release writes nothing once the lock was freed), and
    /// with [`Error::Closed`] once every handle of its client is gone. Build `cmd` with
    /// [`crate::redis`].
    pub async fn fenced<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T> {
        let reply = self.fence.fenced(cmd).await?;
        redis::from_redis_value(reply).map_err(|e| Error::Redis(e.into()))
    }

    /// True once the lock is lost (a clock check: true from the safe deadline on).
    pub fn is_lost(&self) -> bool {
        self.holding.lost_reason().is_some()
    }

    /// Why the lock was lost, if it was.
    pub fn reason(&self) -> Option<LossReason> {
        self.holding.lost_reason()
    }

    /// Resolves when the lock is lost, at its safe deadline at the latest.
    pub async fn lost(&self) -> LossReason {
        self.holding.lost().await
    }

    /// The lock's key.
    pub fn key(&self) -> &str {
        &self.holding.key
    }

    /// The fencing token of the holding.
    pub fn token(&self) -> u64 {
        self.holding.token
    }

    /// The safe deadline: the lock is held at least until then, unless the server took it
    /// away. Renewals move it.
    pub fn valid_until(&self) -> std::time::Instant {
        self.holding.deadline().into_std()
    }

    /// How long the lock is surely held from now; zero once lost.
    pub fn remaining(&self) -> Duration {
        if self.is_lost() {
            return Duration::ZERO;
        }
        self.holding
            .deadline()
            .saturating_duration_since(Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loss marked while `lost()` is between its check and its wait still resolves it
    /// (the wait starts from the state it checked, not from a later one).
    #[test]
    fn a_loss_marked_during_the_wait_resolves_it() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .expect("a runtime");
        let losses = Arc::default();
        for _ in 0..20_000 {
            let far = Instant::now() + Duration::from_secs(600);
            let holding = Holding::new(("k", "o", Kind::Lock), 1, far, &losses);
            let waiting = runtime.spawn({
                let holding = holding.clone();
                async move { holding.lost().await }
            });
            std::thread::yield_now();
            holding.mark_lost(LossReason::NotHeld);
            let limit = Duration::from_secs(10);
            let resolved = runtime.block_on(async { tokio::time::timeout(limit, waiting).await });
            assert!(
                resolved.is_ok(),
                "lost() missed a loss marked while it waited"
            );
        }
    }
}
