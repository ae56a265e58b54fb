//! A named read-write lock: its read side and its write side, each a [`Lock`].

use std::fmt;
use std::sync::Arc;

use crate::core::shared::Core;
use crate::lock::Lock;
use crate::pure::error::{Error, Result};
use crate::pure::kind::Kind;
use crate::pure::rw_info::RwLockInfo;

/// A read-write lock on one Redis key (the module's `RWLOCK.*` commands), from
/// [`Client::rw_lock`](crate::Client::rw_lock) (owned as by
/// [`Client::lock`](crate::Client::lock)) or [`Owner::rw_lock`](crate::Owner::rw_lock).
///
/// Any number of owners hold read holds at once; a write hold excludes every other owner's
/// read and write holds. Waiters are served in the order they came: a writer queued behind
/// readers is not overtaken by a reader that comes later.
///
/// [`read`](RwLock::read) and [`write`](RwLock::write) are [`Lock`]s: the same options,
/// `acquire`, `try_acquire`, `with_lock`, the same [`Guard`](crate::Guard), renewed by the
/// client's watchdog in the same pipeline as the plain locks, and the same cancellation
/// safety. Holds are reentrant per owner:
///
/// - a reader (or the writer) acquiring a read hold again gets another hold at once;
/// - the writer acquiring the write hold again gets another hold at once;
/// - the writer may take read holds (the same token): releasing its write holds then keeps
///   the read holds, a downgrade;
/// - an owner holding only read holds that asks for a write hold is refused at once with
///   [`Error::Upgrade`](crate::Error::Upgrade): release the read holds first.
///
/// The key is a read-write lock, a different object from a plain lock: the server refuses
/// `LOCK.*` on it, and `RWLOCK.*` on a plain lock's key, with `WRONGTYPE`.
///
/// ```no_run
/// # async fn demo(client: rlock_client::Client) -> Result<(), rlock_client::Error> {
/// let config = client.rw_lock("lock:config");
/// let reading = config.read().acquire().await?; // shared with other readers
/// reading.release().await?;
/// let writing = config.write().acquire().await?; // alone
/// writing.release().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct RwLock {
    lock: Lock,
    core: Arc<Core>,
}

impl fmt::Debug for RwLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RwLock")
            .field("server", &self.lock.server())
            .field("key", &self.lock.name())
            .finish()
    }
}

impl RwLock {
    pub(crate) fn new(
        core: Arc<Core>,
        server: Arc<str>,
        key: String,
        owner: Option<Arc<str>>,
    ) -> RwLock {
        RwLock {
            lock: Lock::new(core.clone(), server, key, owner),
            core,
        }
    }

    /// The lock's key.
    pub fn name(&self) -> &str {
        self.lock.name()
    }

    /// The read side: its acquisitions take read holds (`RWLOCK.ACQUIRE key owner READ`),
    /// shared with other readers, granted while no writer holds the lock and nobody is
    /// queued before them.
    ///
    /// A read guard's [`fenced`](crate::Guard::fenced) writes run only while its owner holds
    /// the write hold too (the server refuses a reader's with `NOTHELD`, which comes back as
    /// [`Error::NotHeld`](crate::Error::NotHeld) and does not count as a loss).
    pub fn read(&self) -> Lock {
        self.lock.clone().of_kind(Kind::Read)
    }

    /// The write side: its acquisitions take write holds (`RWLOCK.ACQUIRE key owner WRITE`),
    /// granted while nobody else holds the lock and nobody is queued before them. A write
    /// guard's [`fenced`](crate::Guard::fenced) writes run only while its holding is current
    /// (`LOCK.FENCED`).
    pub fn write(&self) -> Lock {
        self.lock.clone().of_kind(Kind::Write)
    }

    /// The lock's state on the server (`RWLOCK.INFO`), or `None` if nobody holds it.
    pub async fn info(&self) -> Result<Option<RwLockInfo>> {
        self.core
            .rw_info(self.name())
            .await
            .map_err(|e| self.named(e))
    }

    /// Removes the read-write lock whoever holds it (`RWLOCK.FORCERELEASE`, an admin
    /// command); the queue is served. True if it was held. Its holders' guards notice at
    /// their next renewal.
    pub async fn force_release(&self) -> Result<bool> {
        let removed = self.core.force_release(Kind::Read, self.name()).await;
        removed.map_err(|e| self.named(e))
    }

    /// `err`, naming the server and the key.
    fn named(&self, err: Error) -> Error {
        self.core.named(err, self.name())
    }
}
