//! A blocking (synchronous) API for sync code. Reentrant per thread, as Redisson's `RLock`:
//! a thread that acquires a lock it already holds gets another hold, and releases as often.
//!
//! The [`BlockingClient`] runs a small tokio runtime of its own for the watchdog and the
//! connections. Use it from plain threads or `tokio::task::spawn_blocking` (and
//! `block_in_place`), the home of sync code in an async service. In an async task or a
//! future run by `block_on` (the body of `#[tokio::main]`), where blocking would stall a
//! runtime and tokio's `Mutex::blocking_lock` panics, its calls fail with
//! [`Error::InvalidArgument`] (and a guard dropped there is released in the background).
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
use std::time::Duration;

use crate::acquire::guard::Guard;
pub use crate::blocking_guard::BlockingGuard;
pub use crate::blocking_latch::BlockingLatch;
use crate::client::{Client, Owner};
use crate::lock::Lock;
use crate::pure::config::ClientOptions;
use crate::pure::error::{Error, Result};
use crate::pure::info::LockInfo;
use crate::pure::kind::Kind;
use crate::pure::options::LockOptions;
use crate::pure::per_thread::{runtime, Rt, Threads};
use crate::pure::rw_info::RwLockInfo;
use crate::pure::sem_info::SemaphoreInfo;
use crate::semaphore::Semaphore;

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
        self.lock_of(Kind::Lock, name.into())
    }

    /// A countdown latch on `name`; see [`Client::latch`].
    pub fn latch(&self, name: impl Into<String>) -> BlockingLatch {
        BlockingLatch::new(self.client.latch(name), self.rt.clone())
    }

    /// A read-write lock on `name`, reentrant per thread; see [`Client::rw_lock`].
    pub fn rw_lock(&self, name: impl Into<String>) -> BlockingRwLock {
        BlockingRwLock {
            client: self.clone(),
            key: name.into(),
        }
    }

    /// A semaphore on `name`, its permits owned per thread; see [`Client::semaphore`].
    pub fn semaphore(&self, name: impl Into<String>) -> BlockingSemaphore {
        let lock = self.lock_of(Kind::Sem(1), name.into());
        BlockingSemaphore { lock }
    }

    fn lock_of(&self, kind: Kind, key: String) -> BlockingLock {
        let (client, options) = (self.clone(), LockOptions::new());
        BlockingLock {
            client,
            kind,
            key,
            options,
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

    /// How many threads this client keeps an owner id for (those with guards, or that asked).
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

/// A read-write lock from [`BlockingClient::rw_lock`]; see [`RwLock`](crate::RwLock).
#[derive(Debug, Clone)]
pub struct BlockingRwLock {
    client: BlockingClient,
    key: String,
}

impl BlockingRwLock {
    /// The lock's key.
    pub fn name(&self) -> &str {
        &self.key
    }

    /// The read side: read holds, shared; see [`RwLock::read`](crate::RwLock::read).
    pub fn read(&self) -> BlockingLock {
        self.client.lock_of(Kind::Read, self.key.clone())
    }

    /// The write side: write holds, exclusive; see [`RwLock::write`](crate::RwLock::write).
    pub fn write(&self) -> BlockingLock {
        self.client.lock_of(Kind::Write, self.key.clone())
    }

    /// The lock's state (`RWLOCK.INFO`), or `None` if nobody holds it.
    pub fn info(&self) -> Result<Option<RwLockInfo>> {
        let rw = self.client.client.rw_lock(&self.key);
        self.client.rt.block_on(async move { rw.info().await })
    }
}

/// A semaphore from [`BlockingClient::semaphore`]; see [`Semaphore`].
#[derive(Debug, Clone)]
pub struct BlockingSemaphore {
    lock: BlockingLock,
}

impl BlockingSemaphore {
    /// The semaphore's key.
    pub fn name(&self) -> &str {
        &self.lock.key
    }

    /// Uses `options` for the following acquisitions.
    pub fn options(mut self, options: LockOptions) -> BlockingSemaphore {
        self.lock.options = options;
        self
    }

    /// The acquisitions of `permits` permits, as a [`BlockingLock`].
    pub fn permits(&self, permits: u32) -> BlockingLock {
        let lock = self.lock.clone();
        BlockingLock {
            kind: Kind::Sem(permits),
            ..lock
        }
    }

    /// Acquires `permits` permits as the calling thread; see [`Semaphore::acquire`].
    pub fn acquire(&self, permits: u32) -> Result<BlockingGuard> {
        self.permits(permits).acquire()
    }

    /// Tries to acquire `permits` permits, waiting up to `wait`.
    pub fn try_acquire(&self, permits: u32, wait: Duration) -> Result<Option<BlockingGuard>> {
        self.permits(permits).try_acquire(wait)
    }

    fn run<T>(&self, work: impl AsyncFnOnce(Semaphore) -> Result<T>) -> Result<T> {
        let sem = self.lock.client.client.semaphore(self.lock.key.as_str());
        self.lock.client.rt.block_on(work(sem))
    }

    /// Sets the total of permits; see [`Semaphore::set_permits`].
    pub fn set_permits(&self, total: u32) -> Result<u64> {
        self.run(async move |sem| sem.set_permits(total).await)
    }

    /// The semaphore's state (`SEM.INFO`), or `None` if it does not exist.
    pub fn info(&self) -> Result<Option<SemaphoreInfo>> {
        self.run(async |sem| sem.info().await)
    }

    /// How many permits are free now; see [`Semaphore::available_permits`].
    pub fn available_permits(&self) -> Result<u64> {
        self.run(async |sem| sem.available_permits().await)
    }

    /// Ends every holding; see [`Semaphore::force_release`].
    pub fn force_release(&self) -> Result<bool> {
        self.run(async |sem| sem.force_release().await)
    }
}

/// A lock from [`BlockingClient::lock`], or a side of a [`BlockingRwLock`].
#[derive(Debug, Clone)]
pub struct BlockingLock {
    client: BlockingClient,
    kind: Kind,
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

    /// Tries to acquire it as the calling thread, for up to `wait`; see [`Lock::try_acquire`].
    pub fn try_acquire(&self, wait: Duration) -> Result<Option<BlockingGuard>> {
        let guard = self.client.rt.block_on(self.as_thread().try_acquire(wait));
        self.wrap(guard)
    }

    /// The lock, acquired as the calling thread's owner.
    fn as_thread(&self) -> Lock {
        let lock = self.client.owner().lock(&self.key).of_kind(self.kind);
        lock.options(self.options)
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
