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
//! connection failed may or may not have run. After [`Error::MAX_REDIRECTS`] redirections in
//! a row the last one is returned, and reaches the caller as [`Error::TooManyRedirects`].
//!
//! [`Router::follow`] is the one loop that follows redirections, for every path: commands on
//! the shared connections, commands on a connection of their own, and waits (which a
//! caller's cancellation may interrupt).
//!
//! This is why the client does not use `redis::cluster_async`: it re-sends a command after
//! a dropped connection (which could apply a `LOCK.RELEASE` twice), and re-sends a whole
//! pipeline to the target of any redirection in it (a watchdog round spans many slots).

use std::borrow::Borrow;
use std::collections::HashMap;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use redis::aio::ConnectionLike;
use redis::{Cmd, ConnectionAddr, ConnectionInfo, FromRedisValue, RedisResult, Value};

use crate::commands;
use crate::config::ClientOptions;
use crate::error::Error;
use crate::node::{Carrier, Node, Shared};
use crate::slots::{self, SlotMap};

/// The nodes the client talks to, and which serves each slot.
pub(crate) struct Router {
    seed: Arc<Node>,
    /// The seed's connection settings (credentials, TLS), used for every node.
    template: ConnectionInfo,
    nodes: Mutex<HashMap<Arc<str>, Arc<Node>>>,
    slots: RwLock<SlotMap<Arc<Node>>>,
}

/// How a command sent with [`Router::follow`] ended.
pub(crate) enum Sent<T, C, I> {
    /// The answer (anything but a redirection to follow), and the connection that gave it.
    Answered(RedisResult<T>, C),
    /// The interruption came first; the command may still be running on the connection.
    Interrupted(I, C),
}

impl Router {
    /// A router whose seed is `redis`; connects to nothing yet.
    pub(crate) fn new(redis: redis::Client, options: ClientOptions) -> Router {
        let template = redis.get_connection_info().clone();
        let seed = Node::seed(redis, options);
        let nodes = HashMap::from([(seed.addr.clone(), seed.clone())]);
        Router {
            seed,
            template,
            nodes: Mutex::new(nodes),
            slots: RwLock::new(SlotMap::new()),
        }
    }

    /// The node the client was opened on.
    pub(crate) fn seed(&self) -> &Arc<Node> {
        &self.seed
    }

    /// Loads the slot map if the seed is a cluster node. A server that refuses `INFO` or
    /// `CLUSTER SLOTS` (ACL) is taken as it comes: redirections then teach the map.
    pub(crate) async fn discover(&self) -> RedisResult<()> {
        let mut conn = self.seed.shared().await?;
        let info = commands::info_cluster()
            .query_async::<String>(&mut conn)
            .await;
        let Some(info) = allowed(info)? else {
            return Ok(());
        };
        if !info.lines().any(|line| line.trim() == "cluster_enabled:1") {
            return Ok(());
        }
        let slots = commands::cluster_slots()
            .query_async::<Value>(&mut conn)
            .await;
        let Some(reply) = allowed(slots)? else {
            return Ok(());
        };
        let ranges = slots::parse_cluster_slots(reply, self.seed_host())?;
        let mut map = SlotMap::new();
        for range in &ranges {
            let node = self.node(&range.host, range.port)?;
            map.assign(range.first, range.last, &node);
        }
        *self.slots.write().unwrap_or_else(PoisonError::into_inner) = map;
        tracing::debug!(ranges = ranges.len(), "cluster slot map loaded");
        Ok(())
    }

    /// The node that serves `key`, as far as the client knows.
    pub(crate) fn node_for(&self, key: &str) -> Arc<Node> {
        let slot = slots::slot(key.as_bytes());
        let map = self.slots.read().unwrap_or_else(PoisonError::into_inner);
        map.owner(slot).unwrap_or(&self.seed).clone()
    }

    /// `cmd` on `key` over the shared connection of the node that serves it.
    pub(crate) async fn query<T: FromRedisValue>(&self, key: &str, cmd: &Cmd) -> RedisResult<T> {
        let never = std::future::pending::<std::convert::Infallible>();
        match self.follow(key, &Shared, || cmd, never).await? {
            Sent::Answered(answer, _) => answer,
            Sent::Interrupted(never, _) => match never {},
        }
    }

    /// Sends the command `make` builds (once per node it goes to) on a connection from
    /// `carrier` to the node that serves `key`, then to the target of each redirection, at
    /// most [`Error::MAX_REDIRECTS`] of them. While a command is on its way, `interrupt` may
    /// end the whole: the connection is then handed back with the interruption.
    ///
    /// Fails only if no connection could be had; the command's own answer is in [`Sent`].
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
            let mut conn = carrier.connect(&route.node).await?;
            let cmd = make();
            let answer = tokio::select! {
                biased;
                answer = route.send(K::link(&mut conn), cmd.borrow()) => answer,
                stop = &mut interrupt => return Ok(Sent::Interrupted(stop, conn)),
            };
            if !self.redirect(&mut route, &answer) {
                return Ok(Sent::Answered(answer, conn));
            }
            carrier.recycle(conn);
        }
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
        if route.redirects >= Error::MAX_REDIRECTS {
            tracing::warn!(slot, addr, "too many cluster redirections; giving up");
            return false;
        }
        let node = match self.node(host, port) {
            Ok(node) => node,
            Err(e) => {
                tracing::warn!(slot, addr, %e, "cannot follow a cluster redirection");
                return false;
            }
        };
        let moved = err.code() == Some("MOVED");
        if moved {
            self.learn(slot, &node);
        }
        tracing::debug!(slot, addr, moved, "following a cluster redirection");
        route.redirects += 1;
        route.node = node;
        route.asking = !moved;
        true
    }

    /// The node at `host:port`, made on first sight.
    fn node(&self, host: &str, port: u16) -> RedisResult<Arc<Node>> {
        let host = match host {
            "" => self.seed_host(),
            host => host,
        };
        let addr = format!("{host}:{port}");
        let mut nodes = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(node) = nodes.get(addr.as_str()) {
            return Ok(node.clone());
        }
        let node = Node::at(&self.template, host, port, self.seed.options)?;
        nodes.insert(node.addr.clone(), node.clone());
        Ok(node)
    }

    fn seed_host(&self) -> &str {
        match self.template.addr() {
            ConnectionAddr::Tcp(host, _) | ConnectionAddr::TcpTls { host, .. } => host,
            _ => "127.0.0.1",
        }
    }

    fn learn(&self, slot: u16, node: &Arc<Node>) {
        let mut map = self.slots.write().unwrap_or_else(PoisonError::into_inner);
        map.assign(slot, slot, node);
    }
}

/// Where one command goes next.
struct Route {
    /// The node to send to.
    node: Arc<Node>,
    /// Whether to send `ASKING` first (after an `ASK`).
    asking: bool,
    redirects: usize,
}

impl Route {
    fn to(node: Arc<Node>) -> Route {
        Route {
            node,
            asking: false,
            redirects: 0,
        }
    }

    /// Sends `cmd` on `conn` (a connection to [`Route::node`]), after `ASKING` if asked to.
    async fn send<T, C>(&self, conn: &mut C, cmd: &Cmd) -> RedisResult<T>
    where
        T: FromRedisValue,
        C: ConnectionLike,
    {
        if !self.asking {
            return cmd.query_async(conn).await;
        }
        // One write: `ASKING` holds for the next command on this connection only.
        let mut pipe = redis::pipe();
        pipe.ignore_errors()
            .add_command(commands::asking())
            .ignore()
            .add_command(cmd.clone());
        let mut replies: Vec<RedisResult<T>> = pipe.query_async(conn).await?;
        replies.pop().unwrap_or_else(|| {
            Err(redis::RedisError::from((
                redis::ErrorKind::Parse,
                "no reply after ASKING",
            )))
        })
    }
}

/// `Some` reply, or `None` if the server refused the command (ACL, renamed); I/O errors stay.
fn allowed<T>(reply: RedisResult<T>) -> RedisResult<Option<T>> {
    match reply {
        Ok(reply) => Ok(Some(reply)),
        Err(err) if err.is_io_error() => Err(err),
        Err(err) => {
            tracing::debug!(%err, "cluster discovery refused; following redirections only");
            Ok(None)
        }
    }
}
