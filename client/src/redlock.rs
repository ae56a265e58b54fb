//! [`RedLock`]: one lock name on N independent rlock servers, held while a majority of them
//! hold it. How contenders reach a majority is in `election.rs`.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::client::{Client, Owner};
use crate::election::{Election, Outcome};
use crate::error::{Error, LossReason, Result};
use crate::guard::Guard;
use crate::lock::Lock;
use crate::members::Members;
use crate::options::LockOptions;
use crate::quorum::{losses_to_fall_below, majority, quorum_token, unfit_server_count};

/// A lock on N independent servers (N odd, at least 3; no replication between them),
/// granted when a majority grants it: the lock survives the loss of a minority of servers,
/// where one server (or a master and its asynchronous replicas) loses it.
///
/// Waiting is done on the servers (`LOCK.ACQUIRE ... WAIT`), never by polling: see the
/// crate's README, *When to use which*, for how contenders reach a majority without
/// deadlock, and for the token.
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
    /// One per server, in the canonical order (by [`Client::server`]).
    clients: Arc<[Client]>,
    /// How many servers the lock is over (the clients may reach fewer of them).
    servers: usize,
    options: LockOptions,
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
    /// [`Error::InvalidArgument`] unless there are an odd number, at least 3, of distinct
    /// server addresses.
    pub fn new(clients: impl IntoIterator<Item = Client>, key: impl Into<String>) -> Result<Self> {
        let clients = canonical(clients);
        RedLock::build(clients.len(), clients, key.into())
    }

    /// A RedLock on `key` over `servers` independent servers, of which `clients` reach
    /// those that could be opened (a client cannot be made for a server that is down): the
    /// majority is still of `servers`. Fails with [`Error::InvalidArgument`] unless
    /// `servers` is odd and at least 3, and `clients` name at most that many distinct
    /// server addresses.
    pub fn with_servers(
        servers: usize,
        clients: impl IntoIterator<Item = Client>,
        key: impl Into<String>,
    ) -> Result<Self> {
        RedLock::build(servers, canonical(clients), key.into())
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
    /// [`LockOptions::wait`], then [`Error::Timeout`]); fails with [`Error::NoQuorum`] if
    /// the wait limit passes while too few servers answer.
    pub async fn acquire(&self) -> Result<RedLockGuard> {
        let limit = self.options.wait_limit();
        Error::timeout_if_none(self.run(limit).await?, &self.key, limit)
    }

    /// Tries to acquire the lock on a majority, waiting up to `wait`; `Ok(None)` if it
    /// stayed busy, [`Error::NoQuorum`] if too few servers answered.
    pub async fn try_acquire(&self, wait: Duration) -> Result<Option<RedLockGuard>> {
        self.run(Some(wait)).await
    }

    async fn run(&self, limit: Option<Duration>) -> Result<Option<RedLockGuard>> {
        // One owner id on every server, so `LOCK.INFO` shows the same holder everywhere.
        let owner: Arc<str> = self.clients[0].next_owner_id().into();
        let locks: Vec<Lock> = self
            .clients
            .iter()
            .map(|c| Owner::with_id(c, owner.clone()).lock(self.key.clone()))
            .map(|lock| lock.options(self.options))
            .collect();
        let election = Election {
            locks: &locks,
            quorum: self.quorum(),
            lease: self.options.lease_duration(),
            deadline: limit.map(|limit| Instant::now() + limit),
        };
        match election.run().await {
            Outcome::Granted(members) => Ok(Some(RedLockGuard::new(self, &owner, members))),
            Outcome::TimedOut => Ok(None),
            Outcome::Unreachable(answered) => Err(Error::NoQuorum {
                key: self.key.clone(),
                answered,
                needed: self.quorum(),
            }),
        }
    }
}

/// `clients` in the canonical order (by server address), one per address.
fn canonical(clients: impl IntoIterator<Item = Client>) -> Vec<Client> {
    let mut clients: Vec<Client> = clients.into_iter().collect();
    clients.sort_by(|a, b| a.server().cmp(b.server()));
    clients.dedup_by(|a, b| a.server() == b.server());
    clients
}

/// A RedLock held on a majority of its servers. Lost once fewer than a majority of its
/// members still hold (a server that stops answering loses its member at that member's
/// safe deadline).
///
/// Dropping it releases every member in the background.
#[must_use = "the lock is released when the guard is dropped"]
pub struct RedLockGuard {
    key: String,
    owner: String,
    token: u64,
    quorum: usize,
    members: Members,
}

impl fmt::Debug for RedLockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedLockGuard")
            .field("key", &self.key)
            .field("token", &self.token)
            .field("quorum", &self.quorum)
            .field("members", &self.members.guards)
            .finish()
    }
}

impl RedLockGuard {
    fn new(lock: &RedLock, owner: &str, members: Members) -> RedLockGuard {
        let tokens: Vec<u64> = members.guards.iter().map(Guard::token).collect();
        RedLockGuard {
            key: lock.key.clone(),
            owner: owner.to_owned(),
            token: quorum_token(&tokens),
            quorum: lock.quorum(),
            members,
        }
    }

    /// The fencing token: the largest of the granting servers' tokens. It is higher than
    /// every earlier holding's whenever the server that gave that holding's token granted
    /// this one too (always, while every server is up); see the README.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// The lock's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The owner id holding the lock on every server.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The guards of the servers that granted (at least a majority), in canonical order.
    pub fn guards(&self) -> &[Guard] {
        &self.members.guards
    }

    /// True once fewer than a majority of members surely hold (a clock check).
    pub fn is_lost(&self) -> bool {
        self.members.guards.len() - self.members.lost_count() < self.quorum
    }

    /// Why a member was lost, once the lock is.
    pub fn loss_reason(&self) -> Option<LossReason> {
        self.is_lost().then(|| self.members.a_loss()).flatten()
    }

    /// Resolves when fewer than a majority of members hold, by their deadlines at the latest.
    pub async fn lost(&self) -> LossReason {
        let held = self.members.guards.len();
        let enough = losses_to_fall_below(held, self.quorum);
        self.members.lost(enough).await
    }

    /// Until when a majority of members surely hold.
    pub fn valid_until(&self) -> Instant {
        self.members.valid_until(self.quorum)
    }

    /// How long a majority surely holds from now; zero once lost.
    pub fn remaining(&self) -> Duration {
        self.valid_until().saturating_duration_since(Instant::now())
    }

    /// Releases every member (at once). Fails with [`Error::Lost`] if the lock was lost
    /// (fewer than a majority held); members a minority of servers could not release end
    /// with their leases.
    pub async fn release(self) -> Result<()> {
        let (lost, key) = (self.is_lost(), self.key.clone());
        let reason = self.members.a_loss();
        let errors = self.members.release().await;
        match (lost, reason) {
            (true, reason) => Err(Error::Lost {
                key,
                reason: reason.unwrap_or(LossReason::Expired),
            }),
            (false, _) => {
                for err in errors {
                    tracing::debug!(%err, "a RedLock member was not released; it ends with its lease");
                }
                Ok(())
            }
        }
    }
}
