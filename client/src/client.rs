//! The client: one shared multiplexed connection per server (per node in a cluster), a pool
//! of wait connections, one watchdog.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use redis::aio::ConnectionManager;
use redis::{FromRedisValue, IntoConnectionInfo, Value};
use tokio::runtime::Handle;

use crate::commands;
use crate::error::{Error, Result};
use crate::info::LockInfo;
use crate::lock::Lock;
use crate::pool::WaitPool;
use crate::router::Router;
use crate::watchdog::{Watchdog, WatchdogStats};

/// A connection to a Redis server (or a Redis Cluster) with the rlock module, and the
/// factory of its locks.
///
/// Cheap to clone (all clones share one connection per server and one watchdog). Each client
/// has a random id; owner ids are `<client id>:<n>`. The client's background work (the
/// watchdog, background releases) runs on the tokio runtime it was opened on.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    id: String,
    next_owner: AtomicU64,
    pub(crate) router: Arc<Router>,
    pub(crate) waits: WaitPool,
    pub(crate) watchdog: Watchdog,
    pub(crate) runtime: Handle,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("id", &self.inner.id)
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
    /// Fails with [`Error::ModuleMissing`] if the server does not have the rlock module.
    /// Must be called within a tokio runtime, which then runs the client's background work.
    pub async fn open<T: IntoConnectionInfo>(url: T) -> Result<Client> {
        Client::from_redis(redis::Client::open(url)?).await
    }

    /// Builds a client over an existing [`redis::Client`] (its address, TLS and credentials;
    /// in a cluster, every node is reached with the same TLS settings and credentials).
    pub async fn from_redis(redis: redis::Client) -> Result<Client> {
        let router = Arc::new(Router::new(redis));
        check_module(&mut router.seed().shared().await?).await?;
        router.discover().await?;
        let runtime = Handle::current();
        let inner = Inner {
            id: uuid::Uuid::new_v4().to_string(),
            next_owner: AtomicU64::new(1),
            watchdog: Watchdog::start(router.clone(), &runtime),
            waits: WaitPool::default(),
            router,
            runtime,
        };
        tracing::debug!(client = %inner.id, "rlock client connected");
        Ok(Client {
            inner: Arc::new(inner),
        })
    }

    /// This client's random id, the prefix of its owner ids.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// A lock on `name` (the Redis key). Each acquisition through it uses a fresh owner id,
    /// so it is not reentrant: take an [`Owner`] handle for reentrancy.
    pub fn lock(&self, name: impl Into<String>) -> Lock {
        Lock::new(self.clone(), name.into(), None)
    }

    /// A new owner: locks taken through it are reentrant (the same owner acquiring a lock it
    /// holds gets another hold on it, and needs as many releases).
    pub fn owner(&self) -> Owner {
        Owner {
            id: self.next_owner_id().into(),
            client: self.clone(),
        }
    }

    /// The state of lock `name` (`LOCK.INFO`), or `None` if it is free.
    pub async fn info(&self, name: &str) -> Result<Option<LockInfo>> {
        let reply: Value = self.query(name, &commands::info(name)).await?;
        Ok(LockInfo::from_reply(reply)?)
    }

    /// Removes lock `name` whoever holds it (`LOCK.FORCERELEASE`, an admin command). True if a
    /// lock was removed. Its holder's guard notices at its next renewal.
    pub async fn force_release(&self, name: &str) -> Result<bool> {
        let removed: i64 = self.query(name, &commands::force_release(name)).await?;
        Ok(removed == 1)
    }

    /// `cmd` on the shared connection of the node that serves `name`.
    async fn query<T: FromRedisValue>(&self, name: &str, cmd: &redis::Cmd) -> Result<T> {
        let reply = self.inner.router.query(name, cmd).await;
        reply.map_err(|e| Error::from(e).module_missing_if_unknown())
    }

    /// Counters of the watchdog's work: rounds, round trips, renewals, losses.
    pub fn watchdog_stats(&self) -> WatchdogStats {
        self.inner.watchdog.stats()
    }

    pub(crate) fn next_owner_id(&self) -> String {
        let n = self.inner.next_owner.fetch_add(1, Ordering::Relaxed);
        format!("{}:{n}", self.inner.id)
    }
}

/// Asks the server whether it knows `LOCK.ACQUIRE`. A server that refuses `COMMAND INFO`
/// (ACL) is given the benefit of the doubt: the first lock command will tell.
async fn check_module(conn: &mut ConnectionManager) -> Result<()> {
    let reply: redis::RedisResult<Vec<Value>> = commands::module_probe().query_async(conn).await;
    match reply {
        Ok(found) if matches!(found.first(), None | Some(Value::Nil)) => {
            Err(Error::ModuleMissing {
                detail: "COMMAND INFO does not know LOCK.ACQUIRE".into(),
            })
        }
        Ok(_) => Ok(()),
        Err(err) if err.is_io_error() => Err(err.into()),
        Err(err) => {
            tracing::debug!(%err, "COMMAND INFO refused; not checking for the module");
            Ok(())
        }
    }
}

/// An owner id for reentrant locking in async code, from [`Client::owner`].
///
/// Every lock taken through the same `Owner` (or its clones) is held by the same owner id,
/// so acquiring a lock it already holds adds a hold instead of waiting.
#[derive(Clone)]
pub struct Owner {
    client: Client,
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
        Lock::new(self.client.clone(), name.into(), Some(self.id.clone()))
    }

    /// An owner with the id `id` on `client` (for example one owner per thread).
    pub(crate) fn with_id(client: Client, id: Arc<str>) -> Owner {
        Owner { client, id }
    }
}
