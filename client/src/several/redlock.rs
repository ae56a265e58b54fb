//! [`RedLock`]: one lock name on N independent rlock servers, held while a majority of them
//! hold it. How contenders reach a majority is in `election.rs`.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::client::Client;
use crate::pure::error::{Error, Result};
use crate::pure::options::LockOptions;
use crate::pure::quorum::{majority, unfit_server_count};
use crate::several::election::{Election, Outcome};
use crate::several::redlock_guard::RedLockGuard;
use crate::several::signal::{finish, unless_lost, GroupSignal};

/// A lock on N independent servers (N odd, at least 3; no replication between them),
/// granted when a majority grants it: the lock survives the loss of a minority of servers,
/// where one server (or a master and its asynchronous replicas) loses it.
///
/// Waiting is done on the servers (`LOCK.ACQUIRE ... WAIT`), never by polling: see the
/// crate's README, *When to use which*, for how contenders reach a majority without
/// deadlock, and for the token.
///
/// Every acquisition uses fresh owner ids of its own (the same on every server): a RedLock
/// is not reentrant, even within one task.
///
/// ```no_run
/// # async fn demo(a: rlock_client::Client, b: rlock_client::Client, c: rlock_client::Client)
/// # -> rlock_client::Result<()> {
/// use rlock_client::RedLock;
///
/// let lock = RedLock::new([a, b, c], "lock:report")?;
/// let guard = lock.acquire().await?;
/// println!("fencing token {}", guard.token());
/// guard.release().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct RedLock {
    key: String,
    /// One per server, in the canonical order (by [`Client::identity`]).
    clients: Arc<[Client]>,
    /// How many servers the lock is over (the clients may reach fewer of them).
    servers: usize,
    options: LockOptions,
    /// Per server: whether it failed its last try (then it is not waited for as the gate).
    suspects: Arc<Mutex<Vec<bool>>>,
}

impl fmt::Debug for RedLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let servers: Vec<&str> = self.clients.iter().map(Client::server).collect();
        f.debug_struct("RedLock")
            .field("key", &self.key)
            .field("servers", &servers)
            .field("options", &self.options)
            .finish()
    }
}

impl RedLock {
    /// A RedLock on `key` over `clients`, one per independent server. Fails with
    /// [`Error::InvalidArgument`] unless there are an odd number, at least 3, of them, or if
    /// two reach the same server (by [`Client::identity`], whatever their URLs' spelling).
    pub fn new(clients: impl IntoIterator<Item = Client>, key: impl Into<String>) -> Result<Self> {
        let clients = canonical(clients)?;
        RedLock::build(clients.len(), clients, key.into())
    }

    /// A RedLock on `key` over `servers` independent servers, of which `clients` reach
    /// those that could be opened (a client cannot be made for a server that is down): the
    /// majority is still of `servers`. Fails with [`Error::InvalidArgument`] unless
    /// `servers` is odd and at least 3 and `clients` are at most that many, or if two
    /// clients reach the same server.
    pub fn with_servers(
        servers: usize,
        clients: impl IntoIterator<Item = Client>,
        key: impl Into<String>,
    ) -> Result<Self> {
        RedLock::build(servers, canonical(clients)?, key.into())
    }

    /// A RedLock over `servers`, of which `clients` (in canonical order) reach some.
    fn build(servers: usize, clients: Vec<Client>, key: String) -> Result<Self> {
        let unfit = unfit_server_count(servers).or_else(|| {
            (clients.is_empty() || clients.len() > servers)
                .then(|| format!("{} clients for {servers} servers", clients.len()))
        });
        if let Some(detail) = unfit {
            return Err(Error::InvalidArgument { detail });
        }
        Ok(RedLock {
            key,
            suspects: Arc::new(Mutex::new(vec![false; clients.len()])),
            clients: clients.into(),
            servers,
            options: LockOptions::new(),
        })
    }

    /// Uses `options` (lease, watchdog, wait limit) on every server.
    pub fn options(mut self, options: LockOptions) -> Self {
        self.options = options;
        self
    }

    /// The lock's key.
    pub fn name(&self) -> &str {
        &self.key
    }

    /// How many servers must grant the lock.
    pub fn quorum(&self) -> usize {
        majority(self.servers)
    }

    /// Acquires the lock on a majority, waiting as long as it takes (or up to
    /// [`LockOptions::wait`], then [`Error::Timeout`]); fails with [`Error::NoQuorum`] once
    /// fewer than a majority of servers answered for
    /// [`ClientOptions::quorum_timeout`](crate::ClientOptions::quorum_timeout) (or until
    /// the wait limit passed).
    pub async fn acquire(&self) -> Result<RedLockGuard> {
        let (limit, started) = (self.options.wait_limit(), tokio::time::Instant::now());
        Error::timeout_since(self.run(limit).await?, &self.key, started)
    }

    /// Tries to acquire the lock on a majority, waiting up to `wait`; `Ok(None)` if it
    /// stayed busy, [`Error::NoQuorum`] if too few servers answered (until `wait` or
    /// [`ClientOptions::quorum_timeout`](crate::ClientOptions::quorum_timeout) passed).
    pub async fn try_acquire(&self, wait: Duration) -> Result<Option<RedLockGuard>> {
        self.run(Some(wait)).await
    }

    /// Acquires the lock (as [`acquire`](RedLock::acquire) does), runs `work` while holding
    /// it, then releases it, as [`Lock::with_lock`](crate::Lock::with_lock) does: if the
    /// lock is lost while `work` runs, `work` is dropped and the call fails with
    /// [`Error::Lost`].
    pub async fn with_lock<F, Fut, T>(&self, work: F) -> Result<T>
    where
        F: FnOnce(GroupSignal) -> Fut,
        Fut: Future<Output = T>,
    {
        let guard = self.acquire().await?;
        let signal = guard.lost_signal();
        let done = unless_lost(&signal, work(signal.clone())).await;
        finish(&self.key, done, guard.release().await)
    }

    async fn run(&self, limit: Option<Duration>) -> Result<Option<RedLockGuard>> {
        let no_quorum_after = self
            .clients
            .iter()
            .map(|c| c.options().quorum_timeout_duration());
        let election = Election {
            clients: &self.clients,
            key: &self.key,
            options: self.options,
            quorum: self.quorum(),
            deadline: limit.map(|limit| Instant::now() + limit),
            no_quorum_after: no_quorum_after.min().unwrap_or_default(),
            suspects: &self.suspects,
        };
        match election.run().await {
            Outcome::Granted(won) => Ok(Some(RedLockGuard::new(&self.key, self.quorum(), won))),
            Outcome::TimedOut => Ok(None),
            Outcome::Unreachable(answered) => Err(Error::NoQuorum {
                key: self.key.clone(),
                answered,
                needed: self.quorum(),
            }),
        }
    }
}

/// `clients` in the canonical order (by server identity); refused if two reach one server.
fn canonical(clients: impl IntoIterator<Item = Client>) -> Result<Vec<Client>> {
    let mut clients: Vec<Client> = clients.into_iter().collect();
    clients.sort_by(|a, b| a.identity().cmp(b.identity()));
    match clients
        .windows(2)
        .find(|w| w[0].identity() == w[1].identity())
    {
        Some(twice) => Err(Error::InvalidArgument {
            detail: format!(
                "one server given twice ({} and {}, both {})",
                twice[0].server(),
                twice[1].server(),
                twice[0].identity()
            ),
        }),
        None => Ok(clients),
    }
}
