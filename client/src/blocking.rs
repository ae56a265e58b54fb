//! A blocking (synchronous) API for applications without an async runtime. Reentrant per
//! thread, as Redisson's `RLock`: a thread that acquires a lock it already holds gets another
//! hold on it, and must release as many times.
//!
//! The [`BlockingClient`] runs a small tokio runtime of its own for the watchdog and the
//! connections. Use it from plain threads, not from inside an async runtime: there its
//! calls fail with [`Error::InvalidArgument`] (and a guard dropped there is released in the
//! background).
//!
//! A thread's owner id is kept while the thread has guards (or asked for its id), and
//! forgotten when its last guard is released: a thread that holds nothing reenters
//! nothing.
//!
//! ```no_run
//! use rlock_client::blocking::BlockingClient;
//!
//! # fn main() -> Result<(), rlock_client::Error> {
//! let client = BlockingClient::open("redis://127.0.0.1:6379/")?;
//! let lock = client.lock("lock:report");
//! let outer = lock.acquire()?;
//! let inner = lock.acquire()?; // same thread: reentry, 2 holds
//! assert_eq!(inner.release()?, 1);
//! assert_eq!(outer.release()?, 0);
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;
use std::thread::ThreadId;
use std::time::Duration;

use crate::acquire::guard::Guard;
use crate::client::{Client, Owner};
use crate::lock::Lock;
use crate::pure::config::ClientOptions;
use crate::pure::error::{Error, LossReason, Result};
use crate::pure::holding::LostSignal;
use crate::pure::info::LockInfo;
use crate::pure::options::LockOptions;
use crate::pure::per_thread::{runtime, Rt, Threads};

/// A blocking client; cheap to clone. Owner ids are per thread: `<client id>:<n>`.
#[derive(Clone)]
pub struct BlockingClient {
    client: Client,
    rt: Arc<Rt>,
    threads: Arc<Threads>,
}

impl std::fmt::Debug for BlockingClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockingClient")
            .field("id", &self.client.id())
            .finish()
    }
}

impl BlockingClient {
    /// Connects to the server at `url` (or the master a Sentinel URL names); see
    /// [`Client::open`].
    pub fn open(url: impl AsRef<str>) -> Result<BlockingClient> {
        BlockingClient::open_with(url, ClientOptions::new())
    }

    /// Connects to the server at `url` with `options`; see [`Client::open_with`].
    pub fn open_with(url: impl AsRef<str>, options: ClientOptions) -> Result<BlockingClient> {
        let rt = runtime()?;
        let client = rt.block_on(Client::open_with(url, options))?;
        Ok(BlockingClient::with(client, rt))
    }

    /// Builds a blocking client over an existing [`redis::Client`].
    pub fn from_redis(redis: redis::Client) -> Result<BlockingClient> {
        BlockingClient::from_redis_with(redis, ClientOptions::new())
    }

    /// Builds a blocking client over an existing [`redis::Client`], with `options`.
    pub fn from_redis_with(redis: redis::Client, options: ClientOptions) -> Result<BlockingClient> {
        let rt = runtime()?;
        let client = rt.block_on(Client::from_redis_with(redis, options))?;
        Ok(BlockingClient::with(client, rt))
    }

    fn with(client: Client, rt: Rt) -> BlockingClient {
        BlockingClient {
            client,
            rt: Arc::new(rt),
            threads: Arc::default(),
        }
    }

    /// A lock on `name`, reentrant per thread.
    pub fn lock(&self, name: impl Into<String>) -> BlockingLock {
        BlockingLock {
            client: self.clone(),
            key: name.into(),
            options: LockOptions::new(),
        }
    }

    /// The calling thread's owner id.
    pub fn thread_owner(&self) -> String {
        self.owner().id().to_owned()
    }

    fn owner(&self) -> Owner {
        let thread = std::thread::current().id();
        let id = self
            .threads
            .id(thread, || self.client.next_owner_id().into());
        Owner::with_id(&self.client, id)
    }

    /// How many threads this client keeps an owner id for: those with guards (or that asked
    /// for their id and hold nothing yet).
    pub fn owners(&self) -> usize {
        self.threads.map().len()
    }

    /// The state of lock `name`, or `None` if it is free; see [`Client::info`].
    pub fn info(&self, name: &str) -> Result<Option<LockInfo>> {
        self.rt.block_on(self.client.info(name))
    }

    /// Removes lock `name` whoever holds it; see [`Client::force_release`].
    pub fn force_release(&self, name: &str) -> Result<bool> {
        self.rt.block_on(self.client.force_release(name))
    }

    /// Releases every lock of this client's guards; see [`Client::close`].
    pub fn close(&self) -> Result<()> {
        self.rt.block_on(self.client.close())
    }

    /// The async client underneath (its futures must run on a runtime of your own).
    pub fn client(&self) -> &Client {
        &self.client
    }
}

/// A lock from [`BlockingClient::lock`].
#[derive(Debug, Clone)]
pub struct BlockingLock {
    client: BlockingClient,
    key: String,
    options: LockOptions,
}

impl BlockingLock {
    /// The lock's key.
    pub fn name(&self) -> &str {
        &self.key
    }

    /// Uses `options` for the following acquisitions.
    pub fn options(mut self, options: LockOptions) -> BlockingLock {
        self.options = options;
        self
    }

    /// Acquires the lock as the calling thread; see [`Lock::acquire`](crate::Lock::acquire).
    pub fn acquire(&self) -> Result<BlockingGuard> {
        let guard = self.client.rt.block_on(self.as_thread().acquire());
        let guard = self.wrap(guard.map(Some))?;
        guard.ok_or_else(|| Error::internal("an acquisition ended without a guard"))
    }

    /// Tries to acquire the lock as the calling thread, waiting up to `wait`; see
    /// [`Lock::try_acquire`](crate::Lock::try_acquire).
    pub fn try_acquire(&self, wait: Duration) -> Result<Option<BlockingGuard>> {
        let guard = self.client.rt.block_on(self.as_thread().try_acquire(wait));
        self.wrap(guard)
    }

    /// The lock, acquired as the calling thread's owner.
    fn as_thread(&self) -> Lock {
        self.client.owner().lock(&self.key).options(self.options)
    }

    /// The calling thread's guard, counted; an acquisition that got none forgets the
    /// thread's id if it holds nothing else.
    fn wrap(&self, got: Result<Option<Guard>>) -> Result<Option<BlockingGuard>> {
        let thread = std::thread::current().id();
        let threads = &self.client.threads;
        let Ok(Some(guard)) = got else {
            threads.ended(thread, None);
            return got.map(|_| None);
        };
        threads.held(thread, guard.owner());
        Ok(Some(BlockingGuard {
            guard,
            rt: self.client.rt.clone(),
            threads: threads.clone(),
            thread,
        }))
    }
}

/// One hold taken through the blocking API. Dropping it releases the hold before `drop`
/// returns (in the background if dropped inside an async runtime).
#[derive(Debug)]
#[must_use = "the lock is released when the guard is dropped"]
pub struct BlockingGuard {
    guard: Guard,
    rt: Arc<Rt>,
    threads: Arc<Threads>,
    /// The thread that acquired it, whose owner id it holds.
    thread: ThreadId,
}

impl BlockingGuard {
    /// The fencing token; see [`Guard::token`].
    pub fn token(&self) -> u64 {
        self.guard.token()
    }

    /// The lock's key.
    pub fn key(&self) -> &str {
        self.guard.key()
    }

    /// The owner id (the acquiring thread's).
    pub fn owner(&self) -> &str {
        self.guard.owner()
    }

    /// True once the lock is known to be lost; see [`Guard::lost`].
    pub fn is_lost(&self) -> bool {
        self.guard.is_lost()
    }

    /// Why the lock was lost, if it was.
    pub fn loss_reason(&self) -> Option<LossReason> {
        self.guard.loss_reason()
    }

    /// The safe deadline; see [`Guard::valid_until`].
    pub fn valid_until(&self) -> std::time::Instant {
        self.guard.valid_until()
    }

    /// How long the lock is surely held from now; see [`Guard::remaining`].
    pub fn remaining(&self) -> Duration {
        self.guard.remaining()
    }

    /// A loss signal to hand to other threads or tasks; see [`Guard::lost_signal`].
    pub fn lost_signal(&self) -> LostSignal {
        self.guard.lost_signal()
    }

    /// Blocks until the lock is lost or `timeout` passes; the loss reason, if lost.
    /// Inside an async runtime it cannot block, and answers `None`.
    pub fn wait_lost(&self, timeout: Duration) -> Option<LossReason> {
        let lost = async { Ok(tokio::time::timeout(timeout, self.guard.lost()).await.ok()) };
        self.rt.block_on(lost).ok().flatten()
    }

    /// Runs `cmd` only while this holding is the lock's current one; see [`Guard::fenced`].
    pub fn fenced<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T> {
        self.rt.block_on(self.guard.fenced(cmd))
    }

    /// Releases this one hold; see [`Guard::release`]. Inside an async runtime it cannot
    /// block: it fails with [`Error::InvalidArgument`], and the hold is released in the
    /// background.
    pub fn release(mut self) -> Result<u64> {
        if tokio::runtime::Handle::try_current().is_ok() {
            // Fails without blocking; `drop` releases in the background.
            return self.rt.block_on(async { Ok(0) });
        }
        let release = self.guard.start_release();
        self.rt.block_on(release)
    }
}

impl Drop for BlockingGuard {
    fn drop(&mut self) {
        // Inside an async runtime blocking is not allowed: the guard's own drop releases in
        // the background.
        if !self.guard.is_released() && tokio::runtime::Handle::try_current().is_err() {
            let release = self.guard.start_release();
            if let Err(err) = self.rt.block_on(release) {
                tracing::debug!(%err, "release of a dropped blocking guard failed");
            }
        }
        self.threads.ended(self.thread, Some(()));
    }
}
