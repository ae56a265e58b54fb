//! [`MultiLock`]: several locks (any keys, on one server or several) taken all or none, as
//! one holding.
//!
//! The members are taken one after the other in a canonical order, by key and then by
//! server address, each waited for on its server (`LOCK.ACQUIRE ... WAIT`) within what is
//! left of the overall wait. Every contender takes the locks it shares with another in the
//! same order, so no two of them can each hold a lock the other waits for: overlapping
//! MultiLocks never deadlock (the ordering of resources, as in Dijkstra's dining
//! philosophers). What was taken is released when a member cannot be had in time.

use std::fmt;
use std::future::Future;
use std::time::{Duration, Instant};

use crate::acquire::guard::Guard;
use crate::lock::Lock;
use crate::pure::error::{Error, LossReason, Result};
use crate::several::members::{release_outcome, Members};
use crate::several::signal::{finish, unless_lost, GroupSignal};

/// Several locks held all together, from one or several [`Client`](crate::Client)s: a
/// Redisson `RedissonMultiLock`, waiting on the servers instead of polling.
///
/// Each member keeps its own options (lease, watchdog) and is renewed by its own client's
/// watchdog. Members that name the same key on the same server are taken once. Each member
/// is acquired as its [`Lock`] says: a member from [`Client::lock`](crate::Client::lock)
/// has an owner of its own (it reenters only inside the scope of a holding of that lock,
/// see [`Guard::scope`]), one from [`Owner::lock`](crate::Owner::lock) is that owner's.
///
/// ```no_run
/// # async fn demo(a: rlock_client::Client, b: rlock_client::Client) -> rlock_client::Result<()> {
/// use rlock_client::MultiLock;
///
/// let both = MultiLock::new([a.lock("account:1"), b.lock("account:2")]);
/// let guard = both.acquire().await?;
/// println!("tokens {:?}", guard.tokens());
/// guard.release().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct MultiLock {
    /// In the canonical order.
    locks: Vec<Lock>,
}

impl MultiLock {
    /// A MultiLock over `locks`, which it puts in the canonical order (by key, then by
    /// [`Lock::identity`]); duplicates (one key on one server) are dropped.
    pub fn new(locks: impl IntoIterator<Item = Lock>) -> MultiLock {
        let mut locks: Vec<Lock> = locks.into_iter().collect();
        locks.sort_by(|a, b| canonical(a).cmp(&canonical(b)));
        locks.dedup_by(|a, b| canonical(a) == canonical(b));
        MultiLock { locks }
    }

    /// The members' keys, in the order they are taken.
    pub fn names(&self) -> Vec<&str> {
        self.locks.iter().map(Lock::name).collect()
    }

    /// Takes every member, waiting as long as it takes.
    ///
    /// Cancel-safe: dropping the future releases what was taken (in the background).
    pub async fn acquire(&self) -> Result<MultiGuard> {
        let started = tokio::time::Instant::now();
        Error::timeout_since(self.run(None).await?, &self.names().join(","), started)
    }

    /// Takes every member, waiting up to `wait` in all; `Ok(None)` (and nothing held) if
    /// one of them stayed busy. Fails on the first member that fails, after releasing what
    /// was taken.
    pub async fn try_acquire(&self, wait: Duration) -> Result<Option<MultiGuard>> {
        self.run(Some(wait)).await
    }

    /// Takes every member (as [`acquire`](MultiLock::acquire) does), runs `work` while
    /// holding them, then releases them, as [`Lock::with_lock`] does: if a member is lost
    /// while `work` runs, `work` is dropped and the call fails with [`Error::Lost`]. `work`
    /// runs in the scope of every member (see [`Guard::scope`]): an acquisition of a member
    /// by its client inside it reenters.
    pub async fn with_lock<F, Fut, T>(&self, work: F) -> Result<T>
    where
        F: FnOnce(GroupSignal) -> Fut,
        Fut: Future<Output = T>,
    {
        let guard = self.acquire().await?;
        let signal = guard.lost_signal();
        let members = guard.guards().iter();
        let holdings = members.map(|g| (g.key().to_owned(), g.owner().to_owned()));
        let work = crate::pure::scope::within(holdings.collect::<Vec<_>>(), work(signal.clone()));
        let done = unless_lost(&signal, work).await;
        finish(&self.names().join(","), done, guard.release().await)
    }

    async fn run(&self, limit: Option<Duration>) -> Result<Option<MultiGuard>> {
        let deadline = limit.map(|limit| Instant::now() + limit);
        loop {
            let Some(members) = self.take_all(deadline).await? else {
                return Ok(None);
            };
            if members.lost_count() == 0 {
                return Ok(Some(MultiGuard { members }));
            }
            // A member's fixed lease ran out while a later one was waited for: all again.
            tracing::debug!(keys = %self.names().join(","), "a member was lost before the last was taken; again");
            members.release_quietly().await;
            if deadline.is_some_and(|d| d <= Instant::now()) {
                return Ok(None);
            }
        }
    }

    /// Takes the members in order; `None` (nothing held) if one stayed busy.
    async fn take_all(&self, deadline: Option<Instant>) -> Result<Option<Members>> {
        let mut taken = Members {
            guards: Vec::with_capacity(self.locks.len()),
        };
        for lock in &self.locks {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            match lock.run(left).await {
                Ok(Some(guard)) => taken.guards.push(guard),
                Ok(None) => {
                    taken.release_quietly().await;
                    return Ok(None);
                }
                Err(err) => {
                    taken.release_quietly().await;
                    return Err(err);
                }
            }
        }
        Ok(Some(taken))
    }
}

/// The canonical order's sort key: every process orders the same locks the same way, by
/// what each server reports as its identity (not by how a URL spells its address).
fn canonical(lock: &Lock) -> (&str, &str) {
    (lock.name(), lock.identity())
}

/// The holding of a [`MultiLock`]: every member held. Lost as soon as any member is.
///
/// Dropping it releases every member in the background.
#[must_use = "the locks are released when the guard is dropped"]
pub struct MultiGuard {
    members: Members,
}

impl fmt::Debug for MultiGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultiGuard")
            .field("members", &self.members.guards)
            .finish()
    }
}

impl MultiGuard {
    /// The members' guards, in the canonical order (their keys, owners and tokens).
    pub fn guards(&self) -> &[Guard] {
        &self.members.guards
    }

    /// The members' fencing tokens, in the canonical order: each protects its own key's
    /// resources.
    pub fn tokens(&self) -> Vec<u64> {
        self.members.guards.iter().map(Guard::token).collect()
    }

    /// True once any member is lost (a clock check, as [`Guard::is_lost`]).
    pub fn is_lost(&self) -> bool {
        self.members.lost_count() > 0
    }

    /// Why a member was lost, if one was.
    pub fn loss_reason(&self) -> Option<LossReason> {
        self.members.a_loss()
    }

    /// Resolves as soon as any member is lost, by the earliest member deadline at the latest.
    pub async fn lost(&self) -> LossReason {
        self.members.lost(1).await
    }

    /// A signal of this holding's loss (any member's) that can be moved into spawned work;
    /// see [`GroupSignal`].
    pub fn lost_signal(&self) -> GroupSignal {
        GroupSignal::all(self.members.guards.iter().map(Guard::lost_signal).collect())
    }

    /// Until when every member is surely held: the earliest member deadline.
    pub fn valid_until(&self) -> Instant {
        self.members.valid_until(self.members.guards.len())
    }

    /// Releases every member (at once). Fails with [`Error::Lost`] if a member was lost,
    /// else with the first member's error; every member is released either way.
    pub async fn release(self) -> Result<()> {
        release_outcome(self.members.release().await)
    }
}
