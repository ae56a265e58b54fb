//! Where each command goes: to one server, or to the node of a Redis Cluster that serves the
//! key's slot, following `MOVED` and `ASK`.
//!
//! The client opens on one node (the *seed*). If `INFO cluster` says `cluster_enabled:1`, it
//! loads the slot map from `CLUSTER SLOTS`; a key whose slot is not in the map goes to the
//! seed. Every command is one key's (`LOCK.*` take their key first), so it goes to one node:
//!
//! - `MOVED slot host:port`: the slot now lives there. The map learns it, and the command is
//!   sent there.
//! - `ASK slot host:port`: the slot is being migrated and this key is already there. The
//!   command is sent there once, right after `ASKING` on the same connection; the map is
//!   not changed.
//!
//! A server answers a redirection instead of running the command, so sending it again is
//! safe, even for `LOCK.ACQUIRE` and `LOCK.RELEASE`. Nothing else is retried: a command whose
//! connection failed may or may not have run. While a slot moves, the nodes may disagree
//! for a moment and send a command back and forth: after [`Error::MAX_REDIRECTS`]
//! redirections in a row, each next one waits a pause that grows (from 2 ms to 100 ms), as
//! cluster clients do during resharding, and once the response timeout has passed since the
//! first redirection the last one is returned: it reaches the caller as
//! [`Error::TooManyRedirects`]. The limit counts time, not hops.
//!
//! [`Router::follow`] is the one loop that follows redirections, for every path: commands on
//! the shared connections, commands on a connection of their own, and waits (which a
//! caller's cancellation may interrupt).
//!
//! When the deployment changes shape (a connection error, `READONLY`, `UNBLOCKED`), the
//! router has the topology asked again (`topology.rs`). A command that was not sent (its
//! connection was refused) or not run (`READONLY`, or a wait ended by `UNBLOCKED`) then goes
//! to the node that serves its key now; a command whose connection broke may have run, so
//! its error is returned, and only the next commands go there.
//!
//! This is why the client does not use `redis::cluster_async`: it re-sends a command after
//! a dropped connection (which could apply a `LOCK.RELEASE` twice), and re-sends a whole
//! pipeline to the target of any redirection in it (a watchdog round spans many slots).

use std::borrow::Borrow;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;

use redis::{Cmd, FromRedisValue, RedisError, RedisResult};

use crate::net::node::{dropped, Carrier, Node, Shared, IDLE_CHECK};
use crate::net::route::Route;
use crate::net::sentinel::Sentinels;
use crate::net::topology::Topology;
use crate::pure::commands;
use crate::pure::config::ClientOptions;
use crate::pure::error::Error;
use crate::pure::naming::at_node;
use crate::pure::slots;

/// Sends commands to the nodes that serve their keys.
pub(crate) struct Router {
    topology: Topology,
}

/// How a command sent with [`Router::follow`] ended.
pub(crate) enum Sent<T, C, I> {
    /// The answer (anything but a redirection to follow), and the connection that gave it.
    Answered(RedisResult<T>, C),
    /// The interruption came first; the command may still be running on the connection.
    Interrupted(I, C),
}

impl Router {
    /// A router whose seed is `redis` (the master `sentinels` named, if given), reaching
    /// every node with `options`; connects to nothing yet.
    pub(crate) fn new(
        redis: redis::Client,
        sentinels: Option<Sentinels>,
        options: ClientOptions,
    ) -> Router {
        Router {
            topology: Topology::new(redis, sentinels, options),
        }
    }

    /// The node the client was opened on (with Sentinel: the master as last known).
    pub(crate) fn seed(&self) -> Arc<Node> {
        self.topology.seed()
    }

    /// Loads the slot map if the seed is a cluster node (see [`Topology::discover`]).
    pub(crate) async fn discover(&self) -> RedisResult<()> {
        self.topology.discover().await
    }

    /// Whether a failed node can be replaced by another (Sentinel, Redis Cluster).
    pub(crate) fn follows_failovers(&self) -> bool {
        self.topology.follows_failovers()
    }

    /// The node that serves `key`, as far as the client knows.
    pub(crate) fn node_for(&self, key: &str) -> Arc<Node> {
        self.topology.node_for(key)
    }

    /// Asks again where things are (after an answer that names no node: `READONLY`,
    /// `TRYAGAIN`): the sentinels for the master, or the cluster for its slot map.
    pub(crate) async fn refresh(&self) {
        self.topology.refresh(&self.seed()).await;
    }

    /// Tells the router that `err` came from `node`; true if it may mean that the
    /// deployment changed shape (then where things are was asked again).
    pub(crate) async fn failed(&self, node: &Arc<Node>, err: &RedisError) -> bool {
        self.topology.failed(node, err).await
    }

    /// `cmd` on `key` over the shared connection of the node that serves it.
    pub(crate) async fn query<T: FromRedisValue>(&self, key: &str, cmd: &Cmd) -> RedisResult<T> {
        let never = std::future::pending::<std::convert::Infallible>();
        match self.follow(key, &Shared, || cmd, never).await? {
            Sent::Answered(answer, _) => answer,
            Sent::Interrupted(never, _) => match never {},
        }
    }

    /// `cmd` on `key` as [`query`](Router::query) does, sent once more if the connection
    /// was dropped before the answer: for commands that may run twice (`LOCK.RENEW`,
    /// `LOCK.INFO`, `PING`), so that a connection the server closed while idle (its
    /// `timeout`) costs no failure.
    pub(crate) async fn query_again<T: FromRedisValue>(
        &self,
        key: &str,
        cmd: &Cmd,
    ) -> RedisResult<T> {
        match self.query(key, cmd).await {
            Err(err) if dropped(&err) => {
                tracing::debug!(key, %err, "the connection was dropped; sending again");
                self.query(key, cmd).await
            }
            answer => answer,
        }
    }

    /// `cmd` on `key` as [`query`](Router::query) does, for a command that must not run
    /// twice (`LOCK.RELEASE`): after [`IDLE_CHECK`] without commands, the shared connection
    /// is checked with a `PING` first (sent again if the server had closed it while idle),
    /// which also restarts the server's idle clock, so `cmd` is not lost to a closed one.
    pub(crate) async fn query_fresh<T: FromRedisValue>(
        &self,
        key: &str,
        cmd: &Cmd,
    ) -> RedisResult<T> {
        if self.node_for(key).idle() >= IDLE_CHECK {
            self.query_again::<String>(key, &commands::ping()).await?;
        }
        self.query(key, cmd).await
    }

    /// Sends the command `make` builds (once per node it goes to) on a connection from
    /// `carrier` to the node that serves `key`, then to the target of each redirection, at
    /// most [`Error::MAX_REDIRECTS`] of them. While a command is on its way, `interrupt` may
    /// end the whole: the connection is then handed back with the interruption.
    ///
    /// Fails only if no connection could be had; the command's own answer is in [`Sent`]. An
    /// I/O error names the node it came from.
    pub(crate) async fn follow<T, K, C, I>(
        &self,
        key: &str,
        carrier: &K,
        mut make: impl FnMut() -> C,
        interrupt: impl Future<Output = I>,
    ) -> RedisResult<Sent<T, K::Conn, I>>
    where
        T: FromRedisValue,
        K: Carrier,
        C: Borrow<Cmd>,
    {
        let mut route = Route::to(self.node_for(key));
        let mut interrupt = pin!(interrupt);
        loop {
            let mut conn = match carrier.connect(&route.node).await {
                Ok(conn) => conn,
                // Nothing was sent: it may go to where the key is served now.
                Err(err) if self.recover(key, &mut route, carrier, &err).await => continue,
                Err(err) => return Err(at_node(&route.node.addr, err)),
            };
            let cmd = make();
            let adapted = K::adapt(&conn, cmd.borrow());
            let cmd = adapted.as_ref().unwrap_or(cmd.borrow());
            let answer = tokio::select! {
                biased;
                answer = route.send(K::link(&mut conn), cmd) => answer,
                stop = &mut interrupt => return Ok(Sent::Interrupted(stop, conn)),
            };
            if self.redirect(&mut route, &answer) {
                if !route.pause.is_zero() {
                    let pause = route.pause;
                    tokio::select! {
                        biased;
                        stop = &mut interrupt => return Ok(Sent::Interrupted(stop, conn)),
                        () = tokio::time::sleep(pause) => {}
                    }
                }
                carrier.recycle(conn);
                continue;
            }
            if let Err(err) = &answer {
                carrier.failed(&conn, err);
                if self.recover(key, &mut route, carrier, err).await && not_run(err) {
                    continue;
                }
            }
            let answer = answer.map_err(|err| at_node(&route.node.addr, err));
            return Ok(Sent::Answered(answer, conn));
        }
    }

    /// After `err` on `route`'s node: if it may mean that the deployment changed shape,
    /// refreshes where things are; true if `key` is now served by another node, to which
    /// `route` then leads.
    async fn recover<K: Carrier>(
        &self,
        key: &str,
        route: &mut Route,
        carrier: &K,
        err: &RedisError,
    ) -> bool {
        if !self.topology.failed(&route.node, err).await {
            return false;
        }
        carrier.forget(&route.node);
        let node = self.node_for(key);
        if node.addr == route.node.addr || route.redirects >= Error::MAX_REDIRECTS {
            return false;
        }
        tracing::debug!(from = %route.node.addr, to = %node.addr, %err, "following a failover");
        route.redirects += 1;
        route.node = node;
        route.asking = false;
        true
    }

    /// True if `answer` is a redirection to follow: `route` then leads to its target.
    /// False for any other answer, and for a redirection past the limit.
    fn redirect<T>(&self, route: &mut Route, answer: &RedisResult<T>) -> bool {
        let Err(err) = answer else {
            return false;
        };
        let Some((addr, slot)) = err.redirect_node() else {
            return false;
        };
        let Some((host, port)) = slots::split_addr(addr) else {
            return false;
        };
        let limit = route.node.options.response_timeout_duration();
        let since = *route.since.get_or_insert_with(tokio::time::Instant::now);
        route.pause = route.next_pause();
        if since.elapsed() + route.pause > limit {
            tracing::warn!(
                slot,
                addr,
                redirects = route.redirects,
                "cluster redirections for longer than the response timeout; giving up"
            );
            return false;
        }
        let node = match self.topology.node(host, port) {
            Ok(node) => node,
            Err(e) => {
                tracing::warn!(slot, addr, %e, "cannot follow a cluster redirection");
                return false;
            }
        };
        let moved = err.code() == Some("MOVED");
        if moved {
            self.topology.learn(slot, &node);
        }
        tracing::debug!(slot, addr, moved, "following a cluster redirection");
        route.redirects += 1;
        route.node = node;
        route.asking = !moved;
        true
    }
}

/// Whether a command answered `err` was surely not run: its connection was refused, a
/// replica refused it, or a wait was ended without the lock because its master became a
/// replica (`UNBLOCKED`, after which the server closes the connection).
fn not_run(err: &RedisError) -> bool {
    err.is_connection_refusal() || matches!(err.code(), Some("READONLY" | "UNBLOCKED"))
}
