//! A named lock and the cancellation-safe acquisition of it.
//!
//! Every acquisition runs in a task of its own that owns the connection and the outcome; the
//! caller awaits a oneshot. If the caller goes away (its future dropped, a
//! `tokio::time::timeout` elapsed), the task ends a pending `WAIT` by killing its connection
//! (see `wait.rs`), and a grant that crossed the cancellation is released right there, so no
//! hold leaks.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::{sleep, Instant};

use crate::client::Client;
use crate::commands;
use crate::error::{Error, Result};
use crate::guard::Guard;
use crate::info::LockInfo;
use crate::options::LockOptions;
use crate::pool::WaitConn;
use crate::router::Sent;

/// The pause before an unlimited wait that ended without the lock is made again.
const REWAIT_PAUSE: Duration = Duration::from_millis(10);

/// A lock on one Redis key, from [`Client::lock`] or [`Owner::lock`](crate::Owner::lock).
#[derive(Clone)]
pub struct Lock {
    client: Client,
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
    pub(crate) fn new(client: Client, key: String, owner: Option<Arc<str>>) -> Lock {
        Lock {
            client,
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
        self.client.info(&self.key).await
    }

    /// Acquires, waiting up to `limit` (`None`: without limit).
    async fn run(&self, limit: Option<Duration>) -> Result<Option<Guard>> {
        let owner = match &self.owner {
            Some(id) => id.to_string(),
            None => self.client.next_owner_id(),
        };
        let (reply, outcome) = oneshot::channel();
        let task = Acquisition {
            client: self.client.clone(),
            key: self.key.clone(),
            owner,
            options: self.options,
            reply,
        };
        self.client.inner.runtime.spawn(task.run(limit));
        outcome
            .await
            .map_err(|_| Error::internal("the acquiring task ended without an answer"))?
    }
}

type Outcome = Result<Option<Guard>>;

/// A grant: its token, a time no later than the server's, and the connection it came on
/// when that was one of the client's wait connections.
type Granted = (u64, Instant, Option<WaitConn>);

/// One acquisition, run in its own task.
struct Acquisition {
    client: Client,
    key: String,
    owner: String,
    options: LockOptions,
    reply: oneshot::Sender<Outcome>,
}

impl Acquisition {
    async fn run(mut self, limit: Option<Duration>) {
        let outcome = self.acquire(limit).await;
        if let Err(Ok(Some(guard))) = self.reply.send(outcome) {
            tracing::debug!(key = %guard.key(), owner = %guard.owner(), "acquire cancelled after the grant; releasing");
            if let Err(err) = guard.release().await {
                tracing::warn!(%err, "could not release the hold of a cancelled acquire");
            }
        }
    }

    async fn acquire(&mut self, limit: Option<Duration>) -> Outcome {
        let Some((token, at, conn)) = self.attempt(limit).await? else {
            return Ok(None);
        };
        let guard = Guard::new(
            &self.client,
            &self.key,
            &self.owner,
            token,
            self.options,
            at,
        );
        tracing::debug!(key = %self.key, owner = %self.owner, token, "lock acquired");
        match (self.options.required_replicas(), conn) {
            (Some((wanted, timeout)), Some(conn)) => {
                crate::replicas::confirm(&self.client, guard, conn, wanted, timeout)
                    .await
                    .map(Some)
            }
            (_, conn) => {
                if let Some(conn) = conn {
                    self.client.inner.waits.put(conn);
                }
                Ok(Some(guard))
            }
        }
    }

    async fn attempt(&mut self, limit: Option<Duration>) -> Result<Option<Granted>> {
        let deadline = limit.map(|limit| Instant::now() + limit);
        if let Some(granted) = self.try_once().await? {
            return Ok(Some(granted));
        }
        if deadline.is_some_and(|d| d <= Instant::now()) || self.reply.is_closed() {
            return Ok(None);
        }
        tracing::debug!(key = %self.key, owner = %self.owner, "lock busy; waiting");
        let waiting = crate::wait::Wait {
            client: &self.client,
            key: &self.key,
            owner: &self.owner,
            lease_ms: self.options.lease_ms(),
            deadline,
        };
        loop {
            match waiting.run(&mut self.reply).await? {
                // The lease started when the server granted it, before its reply arrived.
                Some((token, conn)) => return Ok(Some((token, Instant::now(), Some(conn)))),
                // The server ends an unlimited wait only by a handoff; should one end
                // anyway (an older module, a `CLIENT UNBLOCK` it honoured), wait again.
                None if deadline.is_none() && !self.reply.is_closed() => {
                    tracing::debug!(key = %self.key, "wait ended without the lock; waiting again");
                    sleep(REWAIT_PAUSE).await;
                }
                None => return Ok(None),
            }
        }
    }

    /// One `LOCK.ACQUIRE` without `WAIT`: an uncontended lock costs no waiting. Waiters
    /// cannot be overtaken: a lock with waiters is never free.
    ///
    /// It goes on the shared connection, unless replicas must confirm the grant: `WAIT`
    /// blocks the connection it runs on, and must run on the one that wrote.
    async fn try_once(&mut self) -> Result<Option<Granted>> {
        let sent = Instant::now();
        let cmd = commands::acquire(&self.key, &self.owner, self.options.lease_ms());
        let inner = &self.client.inner;
        let (reply, own) = match self.options.required_replicas() {
            Some(_) => {
                let never = std::future::pending::<std::convert::Infallible>();
                let sent = inner.router.follow(&self.key, &inner.waits, || &cmd, never);
                match sent.await? {
                    Sent::Answered(reply, own) => (reply, Some(own)),
                    Sent::Interrupted(never, _) => match never {},
                }
            }
            None => (inner.router.query(&self.key, &cmd).await, None),
        };
        match reply {
            Ok(Some(token)) => Ok(Some((token, sent, own))),
            Ok(None) => {
                if let Some(conn) = own {
                    self.client.inner.waits.put(conn);
                }
                Ok(None)
            }
            Err(err) => {
                if err.is_timeout() {
                    // The command may still be granted; a check on the same connection
                    // runs after it.
                    crate::wait::release_unreported(&self.client, &self.key, &self.owner).await;
                }
                Err(Error::from_command(err, &self.key, &self.owner))
            }
        }
    }
}
