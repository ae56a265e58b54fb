//! A named lock: its options, and its acquisitions (each run as a task of its own, see
//! `acquire/cancel_safe.rs`, so that a dropped `acquire` future leaks no hold).

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::acquire::cancel_safe;
use crate::acquire::guard::Guard;
use crate::core::shared::Core;
use crate::pure::error::{Error, Result};
use crate::pure::holding::LostSignal;
use crate::pure::info::LockInfo;
use crate::pure::kind::Kind;
use crate::pure::options::LockOptions;
use crate::pure::per_thread::caller_owner;
use crate::pure::scope::{self, Outside};

/// A lock on one Redis key, from [`Client::lock`] (each acquisition a holding of its own,
/// reentrant inside its scope) or [`Owner::lock`](crate::Owner::lock) (owned by that owner).
///
/// The read and the write side of a read-write lock ([`RwLock::read`],
/// [`RwLock::write`]) are `Lock`s too: they are acquired, waited for, renewed and released
/// the same way, with `RWLOCK.*` commands.
///
/// [`Client::lock`]: crate::Client::lock
/// [`RwLock::read`]: crate::RwLock::read
/// [`RwLock::write`]: crate::RwLock::write
#[derive(Clone)]
pub struct Lock {
    core: Arc<Core>,
    server: Arc<str>,
    kind: Kind,
    key: String,
    owner: Option<Arc<str>>,
    options: LockOptions,
}

impl fmt::Debug for Lock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock")
            .field("server", &self.server)
            .field("key", &self.key)
            .field("kind", &self.kind)
            .field("owner", &self.owner)
            .field("options", &self.options)
            .finish()
    }
}

/// Awaiting a lock acquires it, as [`Lock::acquire`]: `client.lock(key).await`,
/// `rw.read().await`, `pool.permits(2).await`. The owner is chosen as for `acquire`, and
/// dropping the future leaks no hold.
impl std::future::IntoFuture for Lock {
    type Output = Result<Guard>;
    type IntoFuture = std::pin::Pin<Box<dyn Future<Output = Result<Guard>> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { self.acquire().await })
    }
}

impl Guard {
    /// Turns this write hold of a read-write lock into a read hold of the same holding (the
    /// same owner and token, still renewed): it takes a read hold, which the writer always
    /// gets at once, then releases this write hold, so queued readers come in while writers
    /// still wait. The owner keeps writing if it has other write holds.
    ///
    /// A guard that is not a write hold is released, and the call fails with
    /// [`Error::InvalidArgument`]; an error releasing the write hold ([`Error::Lost`]) is
    /// returned, and the read hold is then released too.
    pub async fn downgrade(self) -> Result<Guard> {
        let (core, kind, options) = self.parts();
        if kind != Kind::Write {
            drop(self.release().await);
            return Err(Error::InvalidArgument {
                detail: "only a write guard of a read-write lock downgrades".into(),
            });
        }
        let (what, owner) = ((Kind::Read, self.key()), self.owner().to_owned());
        let read = cancel_safe::acquire(core, what, owner, options, Some(Duration::ZERO));
        let Some(reading) = read.await? else {
            // Refused at once: this owner does not hold the write hold any more.
            let key = self.key().to_owned();
            self.release().await?;
            return Err(Error::Lost {
                key,
                reason: crate::pure::error::LossReason::NotHeld,
            });
        };
        self.release().await?;
        Ok(reading)
    }
}

impl Lock {
    pub(crate) fn new(
        core: Arc<Core>,
        server: Arc<str>,
        key: String,
        owner: Option<Arc<str>>,
    ) -> Lock {
        Lock {
            core,
            server,
            kind: Kind::Lock,
            key,
            owner,
            options: LockOptions::new(),
        }
    }

    /// The same lock, taking holds of `kind` (a read or a write hold of a read-write lock).
    pub(crate) fn of_kind(mut self, kind: Kind) -> Lock {
        self.kind = kind;
        self
    }

    /// The lock's key.
    pub fn name(&self) -> &str {
        &self.key
    }

    /// The address of the server its client was opened on ([`Client::server`]).
    ///
    /// [`Client::server`]: crate::Client::server
    pub fn server(&self) -> &str {
        &self.server
    }

    /// What names its server in a [`MultiLock`](crate::MultiLock)'s canonical order
    /// ([`Client::identity`](crate::Client::identity)).
    pub fn identity(&self) -> &str {
        self.core.identity().unwrap_or(&self.server)
    }

    /// Uses `options` for the following acquisitions.
    pub fn options(mut self, options: LockOptions) -> Lock {
        self.options = options;
        self
    }

    /// Acquires the lock, waiting as long as it takes (or up to
    /// [`LockOptions::wait`], then [`Error::Timeout`]). With the default options the lease
    /// is 30 s and the watchdog renews it until the guard is released.
    ///
    /// Cancel-safe: dropping the future leaks no hold.
    pub async fn acquire(&self) -> Result<Guard> {
        let started = tokio::time::Instant::now();
        let limit = self.options.wait_limit();
        Error::timeout_since(self.run(limit).await?, &self.key, started)
    }

    /// Tries to acquire the lock, waiting up to `wait` ([`Duration::ZERO`]: not at all).
    /// `Ok(None)` if it stayed busy. Cancel-safe, as [`acquire`](Lock::acquire).
    pub async fn try_acquire(&self, wait: Duration) -> Result<Option<Guard>> {
        self.run(Some(wait)).await
    }

    /// Acquires the lock (as [`acquire`](Lock::acquire) does), runs `work` while holding it,
    /// then releases it: node-redlock's `using`, etcd's `Session.Done()` in one call.
    ///
    /// `work` gets the holding's [`LostSignal`]: its fencing token
    /// ([`token`](LostSignal::token)), its owner ([`owner`](LostSignal::owner)), fenced
    /// writes ([`fenced`](LostSignal::fenced), as [`Guard::fenced`]), its deadline, and a
    /// signal to hand to spawned work. `work` runs in the holding's scope
    /// ([`Guard::scope`]): an acquisition of the same lock by the same client inside it
    /// reenters (the same owner and token), while any other waits. If the lock is lost while `work` runs, `work` is
    /// dropped (cancelled at its next `.await`) and the call fails with [`Error::Lost`];
    /// it also fails so if the release finds the lock lost after `work` finished. A release
    /// that fails otherwise (the server unreachable) is logged, and `work`'s value returned:
    /// the lock then ends with its lease.
    ///
    /// ```no_run
    /// # async fn demo(client: rlock_client::Client) -> Result<(), rlock_client::Error> {
    /// let rows = client
    ///     .lock("lock:report")
    ///     .with_lock(|held| async move {
    ///         println!("writing with fencing token {}", held.token());
    ///         42 // the work's value
    ///     })
    ///     .await?;
    /// // A write that lands only while the holding is current (`LOCK.FENCED`):
    /// let added = client
    ///     .lock("lock:{order:42}")
    ///     .with_lock(|held| async move {
    ///         let mut hset = rlock_client::redis::cmd("HSET");
    ///         hset.arg("order:{order:42}").arg("state").arg("paid");
    ///         held.fenced::<i64>(&hset).await
    ///     })
    ///     .await??;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn with_lock<F, Fut, T>(&self, work: F) -> Result<T>
    where
        F: FnOnce(LostSignal) -> Fut,
        Fut: Future<Output = T>,
    {
        let guard = self.acquire().await?;
        let work = guard.scope(work(guard.lost_signal()));
        let done = tokio::select! {
            biased;
            reason = guard.lost() => Err(reason),
            value = work => Ok(value),
        };
        let lost = |reason| Error::Lost {
            key: self.key.clone(),
            reason,
        };
        match (done, guard.release().await) {
            (Err(reason), _) => Err(lost(reason)),
            (Ok(_), Err(Error::Lost { reason, .. })) => Err(lost(reason)),
            (Ok(value), Err(err)) => {
                tracing::warn!(key = %self.key, %err, "could not release after the work; the lock ends with its lease");
                Ok(value)
            }
            (Ok(value), Ok(_)) => Ok(value),
        }
    }

    /// The lock's state on the server (`LOCK.INFO`), or `None` if it is free. (For the read
    /// or the write side of a read-write lock, the server refuses `LOCK.INFO` with
    /// `WRONGTYPE`: use [`RwLock::info`](crate::RwLock::info).)
    pub async fn info(&self) -> Result<Option<LockInfo>> {
        let info = self.core.info(&self.key).await;
        info.map_err(|e| self.core.named(e, &self.key))
    }

    /// `cmd` on this lock's key, over its server's shared connection.
    pub(crate) async fn query<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T> {
        let reply = self.core.query(&self.key, cmd).await;
        let owner = self.owner.as_deref().unwrap_or("");
        reply.map_err(|err| {
            self.core
                .named(Error::from_command(err, &self.key, owner), &self.key)
        })
    }

    /// Acquires, waiting up to `limit` (`None`: without limit).
    pub(crate) async fn run(&self, limit: Option<Duration>) -> Result<Option<Guard>> {
        let id = self.core.id();
        let (owner, outside) = match (&self.owner, scope::owner_in_scope(id, &self.key)) {
            (Some(owner), _) => (owner.to_string(), None),
            (None, Some(owner)) => (owner, None),
            (None, None) if self.core.options().reenters_per_task() => (caller_owner(id), None),
            (None, None) => {
                let caller = caller_owner(id);
                if limit != Some(Duration::ZERO) && scope::holds_outside(&caller, &self.key) {
                    tracing::warn!(key = %self.key, "acquiring a lock this task already holds, outside the holding's scope: it waits for that holding to end (use with_lock or Guard::scope to reenter)");
                }
                (self.core.next_owner_id(), Some(caller))
            }
        };
        let what = (self.kind, self.key.as_str());
        let acquired = cancel_safe::acquire(&self.core, what, owner, self.options, limit).await;
        let acquired =
            acquired.map_err(|e| self.core.named(e.held_back_at(&self.key), &self.key))?;
        Ok(match (acquired, outside) {
            (Some(guard), Some(caller)) => {
                Some(guard.held_outside(Outside::new(caller, &self.key)))
            }
            (acquired, _) => acquired,
        })
    }
}
