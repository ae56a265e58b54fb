//! The client: one shared multiplexed connection per server (per node in a cluster), a pool
//! of wait connections, one watchdog; opened on a server, a cluster node, or the sentinels
//! of a master.

use std::fmt;
use std::sync::Arc;

use crate::core::shared::Core;
use crate::hold::watchdog::WatchdogStats;
use crate::latch::Latch;
use crate::lock::Lock;
use crate::net::sentinel::Sentinels;
use crate::pure::config::ClientOptions;
use crate::pure::error::Result;
use crate::pure::info::LockInfo;
use crate::rw_lock::RwLock;
use crate::semaphore::Semaphore;

/// A connection to a Redis server (or a Redis Cluster) with the rlock module, and the
/// factory of its locks.
///
/// Cheap to clone (all clones share one connection per server and one watchdog). Each client
/// has a random id, the prefix of its owner ids: `<client id>:<n>` for each acquisition
/// outside a scope and for each [`Owner`] (see [`Client::lock`]). The client's background
/// work (the watchdog, background releases) runs on the tokio runtime it was opened on.
#[derive(Clone)]
pub struct Client {
    core: Arc<Core>,
    /// The address the client was opened on (`host:port`), naming its server in a
    /// [`MultiLock`](crate::MultiLock)'s and a [`RedLock`](crate::RedLock)'s canonical order.
    server: Arc<str>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("id", &self.core.id())
            .finish()
    }
}

impl Client {
    /// Connects to the server at `url` (e.g. `redis://127.0.0.1:6379/`).
    ///
    /// If the server is a Redis Cluster node, any node's address will do: the client loads
    /// the cluster's slot map from it, sends each command to the node that serves its key,
    /// and follows `MOVED` and `ASK` redirections (see the crate docs, *Redis Cluster*).
    ///
    /// A Sentinel URL names the sentinels and the master, and the client talks to the
    /// server the sentinels name as the master, following it after a failover (see the
    /// crate docs, *Redis Sentinel*):
    /// `redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/<master-name>[/db]`
    /// (port 26379 by default; the credentials and db are the master's).
    ///
    /// Fails with [`Error::ModuleMissing`] if the server does not have the rlock module.
    /// Must be called within a tokio runtime, which then runs the client's background work.
    /// (For TLS or other settings that a URL does not carry, see [`Client::from_redis`].)
    ///
    /// [`Error::ModuleMissing`]: crate::Error::ModuleMissing
    pub async fn open(url: impl AsRef<str>) -> Result<Client> {
        Client::open_with(url, ClientOptions::new()).await
    }

    /// Connects as [`open`](Client::open) does, with `options` (timeouts, retries, margin).
    pub async fn open_with(url: impl AsRef<str>, options: ClientOptions) -> Result<Client> {
        let url = url.as_ref();
        let (redis, sentinels) = match Sentinels::parse(url)? {
            Some(sentinels) => {
                let (host, port) = sentinels.master(None).await?;
                (sentinels.server(&host, port)?, Some(sentinels))
            }
            None => (redis::Client::open(url)?, None),
        };
        // A followed master is named by its sentinels and name, not by the server that
        // happens to be master now.
        let server = match sentinels {
            Some(_) => without_credentials(url),
            None => address(&redis),
        };
        Client::start(redis, sentinels, server, options).await
    }

    /// Builds a client over an existing [`redis::Client`] (its address, TLS and credentials;
    /// in a cluster, every node is reached with the same TLS settings and credentials).
    pub async fn from_redis(redis: redis::Client) -> Result<Client> {
        Client::from_redis_with(redis, ClientOptions::new()).await
    }

    /// Builds a client over an existing [`redis::Client`], with `options`.
    pub async fn from_redis_with(redis: redis::Client, options: ClientOptions) -> Result<Client> {
        let server = address(&redis);
        Client::start(redis, None, server, options).await
    }

    async fn start(
        redis: redis::Client,
        sentinels: Option<Sentinels>,
        server: String,
        options: ClientOptions,
    ) -> Result<Client> {
        #[cfg(feature = "tls")]
        {
            // rustls needs a process-wide crypto provider; one the application installed
            // first is kept.
            drop(rustls::crypto::ring::default_provider().install_default());
        }
        let core = Core::open(redis, sentinels, options).await?;
        Ok(Client {
            core: Arc::new(core),
            server: server.into(),
        })
    }

    /// Releases every lock this client's guards hold (all their holds), and refuses new
    /// acquisitions ([`Error::Closed`](crate::Error::Closed)). Guards report
    /// [`LossReason::Closed`](crate::LossReason::Closed) from then on, and dropping them
    /// sends nothing. Returns the first error, after trying every lock.
    ///
    /// Call it before the runtime ends (before `main` returns under `#[tokio::main]`): a
    /// guard dropped while the runtime shuts down cannot be released, and its lock is only
    /// freed when its lease runs out.
    pub async fn close(&self) -> Result<()> {
        self.core.close().await
    }

    /// This client's random id, the prefix of its owner ids.
    pub fn id(&self) -> &str {
        self.core.id()
    }

    /// The server the client was opened on: its address (`host:port`, or a socket path), or
    /// for a Sentinel URL, that URL without credentials.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// A lock on `name` (the Redis key). Each acquisition is a holding of its own (owner
    /// id `<client id>:<n>`): acquisitions contend as with tokio's `Mutex`, in different
    /// tasks or in futures joined in one task (`join!`, `join_all`, `select!`).
    ///
    /// - Inside a holding's scope (the work of [`Lock::with_lock`], a future in
    ///   [`Guard::scope`](crate::Guard::scope)), an acquisition of the same lock reenters
    ///   that holding: another hold at once, the same owner and token; the lock stays held
    ///   until every hold is released.
    /// - Outside any scope, a task that acquires a lock it holds already waits for its own
    ///   holding to end (for ever, or up to its wait limit, while it keeps the guard); the
    ///   client logs a `WARN` event naming the key when that wait starts.
    /// - A guard keeps its owner wherever it is moved, and releases from any task.
    /// - An [`Owner`] (from [`Client::owner`]) shares one holding between tasks explicitly.
    /// - [`ClientOptions::reentrant_per_task`](crate::ClientOptions::reentrant_per_task)
    ///   makes acquisitions owned by their task instead, as Redisson's are by their thread.
    pub fn lock(&self, name: impl Into<String>) -> Lock {
        Lock::new(self.core.clone(), self.server.clone(), name.into(), None)
    }

    /// A countdown latch on `name` (the Redis key, Redisson's `RCountDownLatch` layout).
    pub fn latch(&self, name: impl Into<String>) -> Latch {
        Latch::new(self.core.clone(), name.into())
    }

    /// A read-write lock on `name` (the Redis key): each acquisition of its
    /// [`read`](RwLock::read) and [`write`](RwLock::write) sides is a holding of its own,
    /// and reenters inside a holding's scope, as for [`Client::lock`]. `name` is a read-write lock, not the
    /// plain lock of the same name (the server refuses one family on the other's key).
    pub fn rw_lock(&self, name: impl Into<String>) -> RwLock {
        RwLock::new(self.core.clone(), self.server.clone(), name.into(), None)
    }

    /// A semaphore on `name` (the Redis key): each acquisition of permits is a holding of
    /// its own, as for [`Client::lock`]; inside a holding's scope it adds permits to that
    /// holding.
    pub fn semaphore(&self, name: impl Into<String>) -> Semaphore {
        Semaphore::new(self.core.clone(), self.server.clone(), name.into(), None)
    }

    /// A new owner, `<client id>:<n>`, whatever task uses it: locks taken through it are
    /// reentrant (the same owner acquiring a lock it holds gets another hold on it, and needs
    /// as many releases). Share it (it is `Clone`) to share a holding between tasks, or take a
    /// fresh one to make two acquisitions of one task contend.
    pub fn owner(&self) -> Owner {
        Owner {
            id: self.next_owner_id().into(),
            core: self.core.clone(),
            server: self.server.clone(),
        }
    }

    /// The state of lock `name` (`LOCK.INFO`), or `None` if it is free.
    pub async fn info(&self, name: &str) -> Result<Option<LockInfo>> {
        let info = self.core.info(name).await;
        info.map_err(|e| self.core.named(e, name))
    }

    /// Removes lock `name` whoever holds it (`LOCK.FORCERELEASE`, an admin command). True if a
    /// lock was removed. Its holder's guard notices at its next renewal.
    pub async fn force_release(&self, name: &str) -> Result<bool> {
        let removed = self.core.force_release(crate::pure::kind::Kind::Lock, name);
        removed.await.map_err(|e| self.core.named(e, name))
    }

    /// Counters of the watchdog's work: rounds, round trips, renewals, losses.
    pub fn watchdog_stats(&self) -> WatchdogStats {
        self.core.watchdog_stats()
    }

    /// What names the server in a [`MultiLock`](crate::MultiLock)'s and a
    /// [`RedLock`](crate::RedLock)'s canonical order, whatever the URL's spelling: its
    /// `run_id` (learned at connect); for a Redis Cluster its smallest node id; for a
    /// Sentinel URL, that URL without credentials.
    pub fn identity(&self) -> &str {
        self.core.identity().unwrap_or(&self.server)
    }

    /// Whether the server of `key` answers a `PING` within the response timeout.
    pub(crate) async fn answers(&self, key: &str) -> bool {
        self.core.probe(key).await.is_ok()
    }

    pub(crate) fn options(&self) -> &ClientOptions {
        self.core.options()
    }

    pub(crate) fn next_owner_id(&self) -> String {
        self.core.next_owner_id()
    }
}

/// The server's address, `host:port` (or a socket path).
fn address(redis: &redis::Client) -> String {
    crate::net::node::addr_text(redis.get_connection_info().addr())
}

/// `url` without the `user:password@` part.
fn without_credentials(url: &str) -> String {
    match (url.split_once("://"), url.rsplit_once('@')) {
        (Some((scheme, _)), Some((_, rest))) => format!("{scheme}://{rest}"),
        _ => url.to_owned(),
    }
}

/// An owner id for reentrant locking in async code, from [`Client::owner`].
///
/// Every lock taken through the same `Owner` (or its clones) is held by the same owner id,
/// so acquiring a lock it already holds adds a hold instead of waiting.
///
/// Clones (and tasks sharing one `Owner`) are safe: the acquisitions of one owner on one
/// key take turns, from their first command until their guard exists, so a cancelled
/// acquisition that releases a grant whose reply it lost never releases another's. A
/// `try_acquire` whose wait ends while another acquisition of the same owner is queued on
/// the key (the lock is busy) answers `None`; behind one that is not queued, it waits for
/// its turn (up to the response timeout more).
#[derive(Clone)]
pub struct Owner {
    core: Arc<Core>,
    server: Arc<str>,
    id: Arc<str>,
}

impl fmt::Debug for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Owner").field("id", &self.id).finish()
    }
}

impl Owner {
    /// The owner id, `<client id>:<n>`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Lock `name`, acquired as this owner.
    pub fn lock(&self, name: impl Into<String>) -> Lock {
        let server = self.server.clone();
        Lock::new(
            self.core.clone(),
            server,
            name.into(),
            Some(self.id.clone()),
        )
    }

    /// Read-write lock `name`, acquired as this owner.
    pub fn rw_lock(&self, name: impl Into<String>) -> RwLock {
        let (core, server) = (self.core.clone(), self.server.clone());
        RwLock::new(core, server, name.into(), Some(self.id.clone()))
    }

    /// Semaphore `name`, its permits acquired as this owner.
    pub fn semaphore(&self, name: impl Into<String>) -> Semaphore {
        let (core, server) = (self.core.clone(), self.server.clone());
        Semaphore::new(core, server, name.into(), Some(self.id.clone()))
    }

    /// An owner with the id `id` on `client` (for example one owner per thread).
    pub(crate) fn with_id(client: &Client, id: Arc<str>) -> Owner {
        Owner {
            core: client.core.clone(),
            server: client.server.clone(),
            id,
        }
    }
}
