//! What every handle of one client shares: its id and owner numbering, the router (the
//! nodes, their shared connections, the slot map), the wait connections (one per node for
//! ticket waits, a pool for blocking ones), the watchdog and its registry of holdings, and
//! the runtime that runs background work.
//!
//! Guards and acquisitions hold an `Arc<Core>`; the public `Client` is a handle on one. The
//! methods here are the seams they need, so nothing above reaches into the parts.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use redis::aio::ConnectionManager;
use redis::{Cmd, FromRedisValue, RedisResult, Value};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use crate::hold::registry::{Grant, Holding};
use crate::hold::watchdog::{Watchdog, WatchdogStats};
use crate::net::identity;
use crate::net::pool::{WaitConn, WaitPool};
use crate::net::router::{Router, Sent};
use crate::net::sentinel::Sentinels;
use crate::net::tickets::{Carried, Tickets};
use crate::pure::commands;
use crate::pure::config::ClientOptions;
use crate::pure::error::{timed_out, Error, LossReason, Result};
use crate::pure::info::LockInfo;
use crate::pure::turns::{Turn, Turns};

/// The shared state of one client.
pub(crate) struct Core {
    id: String,
    next_owner: AtomicU64,
    router: Arc<Router>,
    waits: WaitPool,
    tickets: Tickets,
    watchdog: Watchdog,
    runtime: Handle,
    options: ClientOptions,
    closed: AtomicBool,
    turns: Arc<Turns>,
    /// What the server reports as its identity (`identity.rs`); `None` for a master
    /// followed through Sentinel.
    identity: Option<String>,
}

impl Core {
    /// Connects through `redis` (checking for the module, loading a cluster's slot map) and
    /// starts the watchdog on the current tokio runtime. With `sentinels`, `redis` is the
    /// master they named, and the client follows the master they name after a failover.
    pub(crate) async fn open(
        redis: redis::Client,
        sentinels: Option<Sentinels>,
        options: ClientOptions,
    ) -> Result<Core> {
        let followed = sentinels.is_some();
        let router = Arc::new(Router::new(redis, sentinels, options));
        check_module(&mut router.seed().shared().await?).await?;
        router.discover().await?;
        let identity = if followed {
            None
        } else {
            identity::learn(&mut router.seed().shared().await?).await
        };
        let runtime = Handle::current();
        let core = Core {
            id: uuid::Uuid::new_v4().to_string(),
            next_owner: AtomicU64::new(1),
            watchdog: Watchdog::start(router.clone(), &runtime, options.margin_duration()),
            waits: WaitPool::default(),
            tickets: Tickets::default(),
            router,
            runtime,
            options,
            closed: AtomicBool::new(false),
            turns: Arc::default(),
            identity,
        };
        tracing::debug!(client = %core.id, "rlock client connected");
        Ok(core)
    }

    /// The client's random id, the prefix of its owner ids.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// The server's identity, if it reports one (`identity.rs`).
    pub(crate) fn identity(&self) -> Option<&str> {
        self.identity.as_deref()
    }

    /// The client's settings.
    pub(crate) fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// A fresh owner id, `<client id>:<n>`.
    pub(crate) fn next_owner_id(&self) -> String {
        let n = self.next_owner.fetch_add(1, Ordering::Relaxed);
        format!("{}:{n}", self.id)
    }

    /// Runs `work` on the client's runtime.
    pub(crate) fn spawn<F>(&self, work: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.runtime.spawn(work)
    }

    /// `cmd` on `key`, over the shared connection of the node that serves it.
    pub(crate) async fn query<T: FromRedisValue>(&self, key: &str, cmd: &Cmd) -> RedisResult<T> {
        self.router.query(key, cmd).await
    }

    /// `cmd` on `key`, over a wait connection of its own to the node that serves it; the
    /// answer, and the connection that gave it (to give back with [`Core::give_back`]).
    /// Bounded by the response timeout, as the shared connection is (wait connections have
    /// no timeout of their own); a connection whose answer is late is dropped.
    pub(crate) async fn query_own<T: FromRedisValue>(
        &self,
        key: &str,
        cmd: &Cmd,
    ) -> RedisResult<(RedisResult<T>, WaitConn)> {
        let late = tokio::time::sleep(self.options.response_timeout_duration());
        match self.send_own(key, || cmd, late).await? {
            Sent::Answered(answer, own) => Ok((answer, own)),
            Sent::Interrupted((), _) => {
                Err(timed_out("no reply in time on a connection of its own"))
            }
        }
    }

    /// The command `make` builds, on `key`, over a wait connection of its own, unless
    /// `interrupt` comes first (see [`Router::follow`]).
    pub(crate) async fn send_own<T, C, I>(
        &self,
        key: &str,
        make: impl FnMut() -> C,
        interrupt: impl Future<Output = I>,
    ) -> RedisResult<Sent<T, WaitConn, I>>
    where
        T: FromRedisValue,
        C: std::borrow::Borrow<Cmd>,
    {
        self.router.follow(key, &self.waits, make, interrupt).await
    }

    /// The command `make` builds, on `key`, over the wait connection of the node that serves
    /// it (`tickets.rs`), unless `interrupt` comes first (see [`Router::follow`]).
    pub(crate) async fn send_ticket<T, C, I>(
        &self,
        key: &str,
        make: impl FnMut() -> C,
        interrupt: impl Future<Output = I>,
    ) -> RedisResult<Sent<T, Carried, I>>
    where
        T: FromRedisValue,
        C: std::borrow::Borrow<Cmd>,
    {
        self.router
            .follow(key, &self.tickets, make, interrupt)
            .await
    }

    /// The client's wait connections.
    pub(crate) fn tickets(&self) -> &Tickets {
        &self.tickets
    }

    /// Gives back a wait connection whose last command was answered (never a killed one).
    pub(crate) fn give_back(&self, conn: WaitConn) {
        self.waits.put(conn);
    }

    /// Asks again where things are after a `READONLY` or `TRYAGAIN`: the sentinels for the
    /// master, or the cluster for its slot map.
    pub(crate) async fn refresh_route(&self) {
        self.router.refresh().await;
    }

    /// `cmd` on `key` as [`Core::query`] does, sent once more if the connection was
    /// dropped: for commands that may run twice (see [`Router::query_again`]).
    pub(crate) async fn query_again<T: FromRedisValue>(
        &self,
        key: &str,
        cmd: &Cmd,
    ) -> RedisResult<T> {
        self.router.query_again(key, cmd).await
    }

    /// Whether a failed node can be replaced by another (Sentinel, Redis Cluster).
    pub(crate) fn follows_failovers(&self) -> bool {
        self.router.follows_failovers()
    }

    /// Whether the node that serves `key` answers a `PING` within the response timeout.
    pub(crate) async fn probe(&self, key: &str) -> RedisResult<()> {
        self.query_again::<String>(key, &commands::ping())
            .await
            .map(drop)
    }

    /// `LOCK.INFO name`: the lock's state, or `None` if it is free.
    pub(crate) async fn info(&self, name: &str) -> Result<Option<LockInfo>> {
        let reply = self.query_again(name, &commands::info(name)).await;
        let reply: Value = reply.map_err(|e| Error::from(e).module_missing_if_unknown())?;
        Ok(LockInfo::from_reply(reply)?)
    }

    /// `LOCK.FORCERELEASE name`: true if a lock was removed.
    pub(crate) async fn force_release(&self, name: &str) -> Result<bool> {
        let removed: i64 = self.admin(name, &commands::force_release(name)).await?;
        Ok(removed == 1)
    }

    /// `LOCK.RELEASE key owner TOKEN token`: the holds that remain.
    pub(crate) async fn release(&self, key: &str, owner: &str, token: u64) -> RedisResult<u64> {
        let cmd = commands::release(key, owner, token);
        self.router.query_fresh(key, &cmd).await
    }

    /// Whether [`Core::close`] was called.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Stops new acquisitions, and releases every hold of the client's guards (they report
    /// [`LossReason::Closed`] from then on). Returns the first error, after trying them all.
    pub(crate) async fn close(&self) -> Result<()> {
        self.closed.store(true, Ordering::SeqCst);
        let held = self.watchdog.drain();
        self.quiesce().await;
        let mut releases = tokio::task::JoinSet::new();
        for (holding, holds) in held {
            holding.mark_lost(LossReason::Closed);
            releases.spawn(release_holds(self.router.clone(), holding, holds));
        }
        let mut first = Ok(());
        while let Some(done) = releases.join_next().await {
            let outcome = done.unwrap_or_else(|_| Err(Error::internal("a release ended early")));
            if let (Ok(()), Err(err)) = (&first, outcome) {
                first = Err(err);
            }
        }
        first
    }

    /// `cmd` on `name`, with an unknown command read as a missing module.
    async fn admin<T: FromRedisValue>(&self, name: &str, cmd: &Cmd) -> Result<T> {
        let reply = self.query(name, cmd).await;
        reply.map_err(|e| Error::from(e).module_missing_if_unknown())
    }

    /// Records a grant with the watchdog; the holding its guard shares.
    pub(crate) fn register(&self, grant: &Grant<'_>) -> Arc<Holding> {
        self.watchdog.register(grant)
    }

    /// Stops renewing one hold at once; true if a `LOCK.RELEASE` must follow.
    pub(crate) fn unregister(&self, holding: &Holding, watchdog: bool) -> bool {
        self.watchdog.unregister(holding, watchdog)
    }

    /// Waits until no renewal round is in flight.
    pub(crate) async fn quiesce(&self) {
        self.watchdog.quiesce().await;
    }

    /// Marks a holding lost, counting and reporting the loss if it is news.
    pub(crate) fn mark_lost(&self, holding: &Holding, reason: LossReason) {
        self.watchdog.mark_lost(holding, reason);
    }

    /// The release a true [`Core::unregister`] called for was answered (or is not sent).
    pub(crate) fn released(&self, holding: &Holding) {
        self.watchdog.released(holding);
    }

    /// The holds of `(key, owner)` the server may count and this client knows of, by token:
    /// its guards' and the releases in flight.
    pub(crate) fn known(&self, key: &str, owner: &str) -> Vec<(u64, usize)> {
        self.watchdog.known(key, owner)
    }

    /// The turn of an acquisition of `key` by `owner` (see `turns.rs`), waited for until
    /// `deadline`; `None` if the lock stayed busy.
    pub(crate) async fn take_turn(
        &self,
        key: &str,
        owner: &str,
        deadline: Option<tokio::time::Instant>,
    ) -> Option<Turn> {
        let grace = self.options.response_timeout_duration();
        self.turns.take(key, owner, deadline, grace).await
    }

    /// Counters of the watchdog's work.
    pub(crate) fn watchdog_stats(&self) -> WatchdogStats {
        self.watchdog.stats()
    }
}

/// Sends `holds` releases of `holding`, stopping when the server says it is free or not held.
async fn release_holds(router: Arc<Router>, holding: Arc<Holding>, holds: usize) -> Result<()> {
    let (key, owner) = (&holding.key, &holding.owner);
    let cmd = commands::release(key, owner, holding.token);
    for _ in 0..holds {
        let answer = router.query_fresh::<u64>(key, &cmd).await;
        match answer.map_err(|e| Error::from_command(e, key, owner)) {
            Ok(0) | Err(Error::NotHeld { .. }) => return Ok(()),
            Ok(_) => {}
            Err(err) => return Err(err),
        }
    }
    tracing::debug!(%key, %owner, holds, "released at close");
    Ok(())
}

/// Asks the server whether it knows `LOCK.ACQUIRE`. A server that refuses `COMMAND INFO`
/// (ACL) is given the benefit of the doubt: the first lock command will tell.
async fn check_module(conn: &mut ConnectionManager) -> Result<()> {
    let reply: RedisResult<Vec<Value>> = commands::module_probe().query_async(conn).await;
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
