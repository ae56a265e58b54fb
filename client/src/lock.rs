//! A named lock: its options, and its acquisitions (each run as a task of its own, see
//! `acquire.rs`, so that a dropped `acquire` future leaks no hold).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::acquire;
use crate::core::Core;
use crate::error::{Error, Result};
use crate::guard::Guard;
use crate::info::LockInfo;
use crate::options::LockOptions;

/// A lock on one Redis key, from [`Client::lock`] or [`Owner::lock`](crate::Owner::lock).
///
/// [`Client::lock`]: crate::Client::lock
#[derive(Clone)]
pub struct Lock {
    core: Arc<Core>,
    key: String,
    owner: Option<Arc<str>>,
    options: LockOptions,
}

impl fmt::Debug for Lock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock")
            .field("key", &self.key)
            .field("owner", &self.owner)
            .field("options", &self.options)
            .finish()
    }
}

impl Lock {
    pub(crate) fn new(core: Arc<Core>, key: String, owner: Option<Arc<str>>) -> Lock {
        Lock {
            core,
            key,
            owner,
            options: LockOptions::new(),
        }
    }

    /// The lock's key.
    pub fn name(&self) -> &str {
        &self.key
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
        let limit = self.options.wait_limit();
        self.run(limit).await?.ok_or_else(|| Error::Timeout {
            key: self.key.clone(),
            waited: limit.unwrap_or_default(),
        })
    }

    /// Tries to acquire the lock, waiting up to `wait` ([`Duration::ZERO`]: not at all).
    /// `Ok(None)` if it stayed busy. Cancel-safe, as [`acquire`](Lock::acquire).
    pub async fn try_acquire(&self, wait: Duration) -> Result<Option<Guard>> {
        self.run(Some(wait)).await
    }

    /// The lock's state on the server (`LOCK.INFO`), or `None` if it is free.
    pub async fn info(&self) -> Result<Option<LockInfo>> {
        self.core.info(&self.key).await
    }

    /// Acquires, waiting up to `limit` (`None`: without limit).
    async fn run(&self, limit: Option<Duration>) -> Result<Option<Guard>> {
        let owner = match &self.owner {
            Some(id) => id.to_string(),
            None => self.core.next_owner_id(),
        };
        acquire::acquire(&self.core, &self.key, owner, self.options, limit).await
    }
}
