//! The watchdog: one background task per client that renews every held lock with one
//! pipelined round of `LOCK.RENEW` per renewal period, and notices lost locks.
//!
//! A round is one pipeline per node (see `rounds.rs`): one round trip for all locks on one
//! server, and one per node, all at once, in a Redis Cluster.
//!
//! The task's shape is mini-redis's drop guard: it sleeps until the next renewal or lease end,
//! wakes early when the registry changes, and stops when the client's last handle is dropped
//! (the [`Watchdog`] owns the sending half of its shutdown channel).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::{oneshot, Notify};
use tokio::time::{sleep, sleep_until, Instant};

use crate::hold::registry::{Grant, Holding, Registry, Renewal};
use crate::net::listener::Listeners;
use crate::net::router::Router;
use crate::pure::error::LossReason;
use crate::pure::kind::{Kind, Units};

/// Counters of the watchdog's work, from [`Client::watchdog_stats`](crate::Client::watchdog_stats).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WatchdogStats {
    /// Renewal rounds run (rounds with at least one lock to renew).
    pub rounds: u64,
    /// Round trips to the servers those rounds cost: one pipeline per node per round, plus
    /// one per renewal sent again after a cluster redirection.
    pub round_trips: u64,
    /// `LOCK.RENEW` commands sent.
    pub renewals: u64,
    /// Rounds in which a pipeline failed or timed out.
    pub failed_rounds: u64,
    /// How long the last round's round trips took.
    pub last_round: Duration,
    /// Locks lost while held (renewal answered 0, or the lease ran out).
    pub losses: u64,
    /// Distinct holdings currently recorded by the client.
    pub holdings: usize,
}

struct Shared {
    registry: Mutex<Registry>,
    wake: Notify,
    /// Told when a release in flight ends (see [`Watchdog::left`]).
    settled: Notify,
    /// Held for the whole of a round, so that a release can wait for the round that may
    /// contain its lock, and no `LOCK.RENEW` reaches the server after the `LOCK.RELEASE`.
    in_flight: tokio::sync::Mutex<()>,
    stats: Mutex<WatchdogStats>,
    router: Arc<Router>,
    /// The listening connections, which a round opens on a node without one.
    listeners: Arc<Listeners>,
}

impl Shared {
    fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn stats(&self) -> MutexGuard<'_, WatchdogStats> {
        self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The handle on a client's watchdog task; dropping it stops the task.
pub(crate) struct Watchdog {
    shared: Arc<Shared>,
    _stop: oneshot::Sender<()>,
}

impl Watchdog {
    /// Starts the task on `runtime`, renewing through `router` (with `listeners` on each
    /// node renewed); deadlines keep `margin`.
    pub(crate) fn start(
        (router, listeners): (Arc<Router>, Arc<Listeners>),
        runtime: &tokio::runtime::Handle,
        margin: Duration,
    ) -> Watchdog {
        let shared = Arc::new(Shared {
            registry: Mutex::new(Registry::new(margin)),
            wake: Notify::new(),
            settled: Notify::new(),
            in_flight: tokio::sync::Mutex::new(()),
            stats: Mutex::new(WatchdogStats::default()),
            router,
            listeners,
        });
        let (stop, stopped) = oneshot::channel();
        runtime.spawn(run(shared.clone(), stopped));
        Watchdog {
            shared,
            _stop: stop,
        }
    }

    /// Records a grant; the watchdog renews it if asked to and watches its lease.
    pub(crate) fn register(&self, grant: &Grant<'_>) -> Arc<Holding> {
        let holding = self.shared.registry().register(grant);
        self.shared.wake.notify_one();
        holding
    }

    /// Stops renewing one hold at once; true if a `LOCK.RELEASE` must follow.
    pub(crate) fn unregister(&self, holding: &Holding, kind: Kind, watchdog: bool) -> bool {
        self.shared.registry().unregister(holding, kind, watchdog)
    }

    /// Forgets every hold; returns the holdings that may still be held, with their holds.
    pub(crate) fn drain(&self) -> Vec<(Arc<Holding>, usize)> {
        self.shared.registry().drain()
    }

    /// Marks a holding lost (the server answered `NOTHELD`).
    pub(crate) fn mark_lost(&self, holding: &Holding, reason: LossReason) {
        self.shared.registry().mark_lost(holding, reason);
    }

    /// A release of a hold no guard holds is about to be sent (see `Registry::sending`).
    pub(crate) fn sending(&self, holding: &Holding, kind: Kind) {
        self.shared.registry().sending(holding, kind);
    }

    /// The release a true [`unregister`](Watchdog::unregister) called for was answered.
    pub(crate) fn released(&self, holding: &Holding, kind: Kind) {
        self.shared.registry().released(holding, kind);
        self.shared.settled.notify_waiters();
    }

    /// Whether a release of `(key, owner)` is in flight for a holding no guard holds.
    pub(crate) fn leaving(&self, key: &str, owner: &str) -> bool {
        self.shared.registry().leaving(key, owner)
    }

    /// Resolves once no release of `(key, owner)` is in flight for a holding no guard holds.
    pub(crate) async fn left(&self, key: &str, owner: &str) {
        loop {
            let settled = self.shared.settled.notified();
            let mut settled = std::pin::pin!(settled);
            settled.as_mut().enable();
            if !self.leaving(key, owner) {
                return;
            }
            settled.await;
        }
    }

    /// The holds of `(key, owner)` this client knows of, by token (see `Registry::known`).
    pub(crate) fn known(&self, key: &str, owner: &str) -> Vec<(u64, Units)> {
        self.shared.registry().known(key, owner)
    }

    /// Waits until no renewal round is in flight.
    pub(crate) async fn quiesce(&self) {
        drop(self.shared.in_flight.lock().await);
    }

    /// A handle for the task that hears the servers' announcements (`heard.rs`), which does
    /// not keep the watchdog's state alive.
    pub(crate) fn hearing(&self) -> Hearing {
        Hearing(Arc::downgrade(&self.shared))
    }

    /// A snapshot of the counters.
    pub(crate) fn stats(&self) -> WatchdogStats {
        let registry = self.shared.registry();
        let (holdings, losses) = (registry.len(), registry.losses());
        drop(registry);
        WatchdogStats {
            holdings,
            losses,
            ..self.shared.stats().clone()
        }
    }
}

/// What the task that hears announcements may do with the holdings (see `heard.rs`).
#[derive(Clone)]
pub(crate) struct Hearing(Weak<Shared>);

impl Hearing {
    /// The current holding of `(key, owner)`, if recorded.
    pub(crate) fn holding(&self, key: &str, owner: &str) -> Option<Arc<Holding>> {
        self.0.upgrade()?.registry().holding(key, owner)
    }

    /// Marks a holding lost.
    pub(crate) fn mark_lost(&self, holding: &Holding, reason: LossReason) {
        if let Some(shared) = self.0.upgrade() {
            shared.registry().mark_lost(holding, reason);
        }
    }

    /// One renewal round of every holding the watchdog renews, due or not: `Some(true)` if
    /// a node's pipeline failed, `None` once the client is gone.
    pub(crate) async fn renew_all(&self) -> Option<bool> {
        let shared = self.0.upgrade()?;
        let flight = shared.in_flight.lock().await;
        let (period, all) = {
            let registry = shared.registry();
            (registry.period(), registry.renewing())
        };
        let failed = match period {
            Some(period) if !all.is_empty() => renew(&shared, &all, period).await,
            _ => false,
        };
        drop(flight);
        shared.wake.notify_one();
        Some(failed)
    }
}

async fn run(shared: Arc<Shared>, mut stop: oneshot::Receiver<()>) {
    loop {
        let next = shared.registry().next_wakeup();
        let wakeup = async {
            match next {
                Some(at) => sleep_until(at).await,
                None => sleep(Duration::from_secs(3600)).await,
            }
        };
        tokio::select! {
            _ = &mut stop => break,
            _ = shared.wake.notified() => continue,
            _ = wakeup => round(&shared).await,
        }
    }
    tracing::debug!("watchdog stopped");
}

/// One round: renew what is due. (What ran out is marked lost by the first look at it: the
/// loop's `next_wakeup` looks at every holding right after.)
async fn round(shared: &Shared) {
    let flight = shared.in_flight.lock().await;
    let now = Instant::now();
    let period = shared.registry().period();
    if let Some(period) = period {
        let due = shared.registry().due(now, period);
        if !due.is_empty() {
            renew(shared, &due, period).await;
        }
    }
    drop(flight);
}

/// Renews `due`; true if a node's pipeline failed.
async fn renew(shared: &Shared, due: &[Renewal], period: Duration) -> bool {
    let sent = Instant::now();
    let (router, listeners) = (&shared.router, &shared.listeners);
    let answers = crate::hold::rounds::send(router, listeners, due, period).await;
    let failed = answers.failed;
    let took = sent.elapsed();
    {
        let mut stats = shared.stats();
        stats.rounds += 1;
        stats.round_trips += answers.round_trips;
        stats.renewals += due.len() as u64;
        stats.failed_rounds += u64::from(answers.failed);
        stats.last_round = took;
    }
    let mut registry = shared.registry();
    for r in due {
        registry.attempted(r, sent);
    }
    let mut refused = Vec::new();
    for (r, reply) in due.iter().zip(answers.replies) {
        let lost = |reason| (r.holding.clone(), reason);
        match reply {
            // Its node's pipeline failed (already told): the deadline keeps running.
            None => {}
            Some(Ok(1)) => registry.renewed(r, sent),
            Some(Ok(_)) => refused.push(lost(LossReason::NotHeld)),
            Some(Err(err)) => match err.code() {
                Some("WRONGTYPE") => refused.push(lost(LossReason::NotHeld)),
                // The node became a replica: whatever the new master has, we cannot count on it.
                Some("READONLY") => refused.push(lost(LossReason::Demoted)),
                _ => tracing::warn!(key = %r.holding.key, %err, "lock renewal failed"),
            },
        }
    }
    drop(registry);
    for (h, reason) in refused {
        shared.registry().mark_lost(&h, reason);
    }
    tracing::debug!(locks = due.len(), ?took, "locks renewed");
    failed
}
