//! A named semaphore with leased permits: its acquisitions are [`Lock`]s of so many permits.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::acquire::guard::Guard;
use crate::core::shared::Core;
use crate::lock::Lock;
use crate::pure::error::{Error, Result};
use crate::pure::holding::LostSignal;
use crate::pure::kind::Kind;
use crate::pure::options::LockOptions;
use crate::pure::sem_info::SemaphoreInfo;

/// A semaphore on one Redis key (the module's `SEM.*` commands), from
/// [`Client::semaphore`](crate::Client::semaphore) (owned as by
/// [`Client::lock`](crate::Client::lock)) or [`Owner::semaphore`](crate::Owner::semaphore).
///
/// It has a total of permits ([`set_permits`](Semaphore::set_permits)) shared by its
/// holders. An acquisition of `n` permits is a [`Lock`] acquisition
/// ([`permits`](Semaphore::permits)): the same options, the same [`Guard`], renewed by the
/// client's watchdog (`SEM.RENEW`) in the same pipeline as the locks, the same loss
/// signals and the same cancellation safety (a dropped acquisition leaves no permit held
/// and no wait queued). Waits are served in the order they came, without barging: a large
/// request at the head of the queue is not overtaken by smaller ones behind it.
///
/// Permits are reentrant per owner: an owner that holds permits and acquires more adds them
/// to its holding (the same token, the lease reset for all of them). Releasing (or dropping)
/// a guard gives back that guard's permits only (`SEM.RELEASE key owner n TOKEN t`);
/// [`Guard::release`] returns the permits the owner still holds. The owner holds nothing
/// once all its guards are released.
///
/// ```no_run
/// # async fn demo(client: rlock_client::Client) -> Result<(), rlock_client::Error> {
/// let pool = client.semaphore("sem:db-connections");
/// pool.set_permits(10).await?; // the total, shared by every client
/// let guard = pool.acquire(2).await?; // two of the ten
/// guard.release().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Semaphore {
    lock: Lock,
    core: Arc<Core>,
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("server", &self.lock.server())
            .field("key", &self.lock.name())
            .finish()
    }
}

impl Semaphore {
    pub(crate) fn new(
        core: Arc<Core>,
        server: Arc<str>,
        key: String,
        owner: Option<Arc<str>>,
    ) -> Semaphore {
        Semaphore {
            lock: Lock::new(core.clone(), server, key, owner),
            core,
        }
    }

    /// The semaphore's key.
    pub fn name(&self) -> &str {
        self.lock.name()
    }

    /// Uses `options` (lease, watchdog, wait limit, replicas) for the following
    /// acquisitions, as [`Lock::options`].
    pub fn options(mut self, options: LockOptions) -> Semaphore {
        self.lock = self.lock.options(options);
        self
    }

    /// The acquisitions of `permits` permits (1 or more), as a [`Lock`]:
    /// `SEM.ACQUIRE key owner permits ...`. (Its [`Lock::info`] is refused by the server
    /// with `WRONGTYPE`: use [`Semaphore::info`].)
    pub fn permits(&self, permits: u32) -> Lock {
        self.lock.clone().of_kind(Kind::Sem(permits))
    }

    /// Acquires `permits` permits, waiting as long as it takes (or up to
    /// [`LockOptions::wait`], then [`Error::Timeout`]); see [`Lock::acquire`]. Asking for
    /// more than the total fails at once (the server's `ERR rlock: asks for <n> permits;
    /// the semaphore has <total>`), and so does 0. Cancel-safe.
    pub async fn acquire(&self, permits: u32) -> Result<Guard> {
        self.permits(permits).acquire().await
    }

    /// Tries to acquire `permits` permits, waiting up to `wait` ([`Duration::ZERO`]: not at
    /// all); `Ok(None)` if too few were available. Cancel-safe.
    pub async fn try_acquire(&self, permits: u32, wait: Duration) -> Result<Option<Guard>> {
        self.permits(permits).try_acquire(wait).await
    }

    /// Acquires `permits` permits, runs `work` while holding them, then gives them back;
    /// `work` is cancelled and the call fails with [`Error::Lost`] if they are lost
    /// meanwhile. See [`Lock::with_lock`].
    pub async fn with_permits<F, Fut, T>(&self, permits: u32, work: F) -> Result<T>
    where
        F: FnOnce(LostSignal) -> Fut,
        Fut: Future<Output = T>,
    {
        self.permits(permits).with_lock(work).await
    }

    /// Sets the total of permits (`SEM.PERMITS`), creating the semaphore; returns the total.
    /// A raised total serves the queue at once. A lowered one takes nothing back from the
    /// holders: no permit is granted until enough are released, and queued waits that ask
    /// for more than the new total fail.
    pub async fn set_permits(&self, total: u32) -> Result<u64> {
        let mut cmd = Kind::Sem(0).family("PERMITS");
        cmd.arg(self.name()).arg(total);
        let reply = self.core.query(self.name(), &cmd).await;
        reply.map_err(|e| self.named(Error::of_key(e, self.name())))
    }

    /// Adds `permits` to the total (`SEM.PERMITS key ADD n`, Redisson's `addPermits`),
    /// without knowing it, creating the semaphore (from a total of 0); a negative number
    /// takes permits away. Returns the new total. A raised total serves the queue at once;
    /// a lowered one takes nothing back from the holders, as with
    /// [`set_permits`](Semaphore::set_permits). A total that would leave 0 to 2147483647
    /// is refused with [`Error::PermitsOutOfRange`], nothing changed.
    pub async fn add_permits(&self, permits: i32) -> Result<u64> {
        let mut cmd = Kind::Sem(0).family("PERMITS");
        cmd.arg(self.name()).arg("ADD").arg(permits);
        let reply = self.core.query(self.name(), &cmd).await;
        reply.map_err(|e| self.named(Error::of_key(e, self.name())))
    }

    /// The semaphore's state on the server (`SEM.INFO`), or `None` if it does not exist.
    pub async fn info(&self) -> Result<Option<SemaphoreInfo>> {
        self.core
            .sem_info(self.name())
            .await
            .map_err(|e| self.named(e))
    }

    /// How many permits are free now (`SEM.INFO`'s `available`): the total less the permits
    /// held; 0 if the semaphore does not exist. A snapshot: to take permits, acquire them.
    pub async fn available_permits(&self) -> Result<u64> {
        Ok(self.info().await?.map_or(0, |info| info.available))
    }

    /// Ends every holding of the semaphore whoever holds it (`SEM.FORCERELEASE`, an admin
    /// command); the total stays and the queue is served. True if anyone held. The holders'
    /// guards notice at their next renewal.
    pub async fn force_release(&self) -> Result<bool> {
        let removed = self.core.force_release(Kind::Sem(0), self.name()).await;
        removed.map_err(|e| self.named(e))
    }

    /// `err`, naming the server and the key.
    fn named(&self, err: Error) -> Error {
        self.core.named(err, self.name())
    }
}
