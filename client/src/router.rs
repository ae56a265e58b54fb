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
//! connection failed may or may not have run. After [`MAX_REDIRECTS`] redirections in a row
//! the last one is returned, and reaches the caller as
//! [`Error::TooManyRedirects`](crate::Error::TooManyRedirects).
//!
//! This is why the client does not use `redis::cluster_async`: it re-sends a command after
//! a dropped connection (which could apply a `LOCK.RELEASE` twice), and re-sends a whole
//! pipeline to the target of any redirection in it (a watchdog round spans many slots).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, ConnectionAddr, ConnectionInfo, FromRedisValue, RedisResult, Value};
use tokio::sync::OnceCell;

use crate::commands;
use crate::error::Error;
use crate::slots::{self, SlotMap};

/// How many redirections one command follows before it fails.
const MAX_REDIRECTS: usize = Error::MAX_REDIRECTS;

/// One server: its address and its shared multiplexed connection, opened at first use.
pub(crate) struct Node {
    /// `host:port` (the form redirections use), or the seed's socket path.
    pub(crate) addr: Arc<str>,
    pub(crate) redis: redis::Client,
    shared: OnceCell<ConnectionManager>,
}

impl Node {
    fn new(addr: &str, redis: redis::Client) -> Arc<Node> {
        Arc::new(Node {
            addr: addr.into(),
            redis,
            shared: OnceCell::new(),
        })
    }

    /// The node's shared connection (cheap to clone; it reconnects by itself).
    pub(crate) async fn shared(&self) -> RedisResult<ConnectionManager> {
        // Few, short reconnect retries: a dead server should fail fast, and the watchdog
        // retries every renewal period anyway.
        let config = ConnectionManagerConfig::new()
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_millis(500));
        let open = || ConnectionManager::new_with_config(self.redis.clone(), config);
        self.shared.get_or_try_init(open).await.cloned()
    }
}

/// The nodes the client talks to, and which serves each slot.
pub(crate) struct Router {
    seed: Arc<Node>,
    /// The seed's connection settings (credentials, TLS), used for every node.
    template: ConnectionInfo,
    nodes: Mutex<HashMap<Arc<str>, Arc<Node>>>,
    slots: RwLock<SlotMap<Arc<Node>>>,
}

impl Router {
    /// A router whose seed is `redis`; connects to nothing yet.
    pub(crate) fn new(redis: redis::Client) -> Router {
        let template = redis.get_connection_info().clone();
        let seed = Node::new(&addr_text(template.addr()), redis);
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

    /// The route of a command on `key`: first to the node that serves it.
    pub(crate) fn route(&self, key: &str) -> Route<'_> {
        Route {
            router: self,
            node: self.node_for(key),
            asking: false,
            redirects: 0,
        }
    }

    /// `cmd` on `key` over the shared connection of the node that serves it.
    pub(crate) async fn query<T: FromRedisValue>(&self, key: &str, cmd: &Cmd) -> RedisResult<T> {
        let mut route = self.route(key);
        loop {
            let mut conn = route.node.shared().await?;
            let answer = route.send(&mut conn, cmd).await;
            if !route.redirected(&answer) {
                return answer;
            }
        }
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
        let info = self
            .template
            .clone()
            .set_addr(node_addr(&self.template, host, port));
        let node = Node::new(&addr, redis::Client::open(info)?);
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

/// Where one command goes next, following at most [`MAX_REDIRECTS`] redirections.
pub(crate) struct Route<'a> {
    router: &'a Router,
    /// The node to send to.
    pub(crate) node: Arc<Node>,
    /// Whether to send `ASKING` first (after an `ASK`).
    asking: bool,
    redirects: usize,
}

impl Route<'_> {
    /// Sends `cmd` on `conn` (a connection to [`Route::node`]), after `ASKING` if asked to.
    pub(crate) async fn send<T, C>(&self, conn: &mut C, cmd: &Cmd) -> RedisResult<T>
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

    /// True if `answer` is a redirection to follow: the route then leads to its target.
    /// False for any other answer, and for a redirection past the limit.
    pub(crate) fn redirected<T>(&mut self, answer: &RedisResult<T>) -> bool {
        let Err(err) = answer else {
            return false;
        };
        let Some((addr, slot)) = err.redirect_node() else {
            return false;
        };
        let Some((host, port)) = slots::split_addr(addr) else {
            return false;
        };
        if self.redirects >= MAX_REDIRECTS {
            tracing::warn!(slot, addr, "too many cluster redirections; giving up");
            return false;
        }
        let node = match self.router.node(host, port) {
            Ok(node) => node,
            Err(e) => {
                tracing::warn!(slot, addr, %e, "cannot follow a cluster redirection");
                return false;
            }
        };
        let moved = err.code() == Some("MOVED");
        if moved {
            self.router.learn(slot, &node);
        }
        tracing::debug!(slot, addr, moved, "following a cluster redirection");
        self.redirects += 1;
        self.node = node;
        self.asking = !moved;
        true
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

/// An address in the `host:port` form redirections use.
fn addr_text(addr: &ConnectionAddr) -> String {
    match addr {
        ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
            format!("{host}:{port}")
        }
        other => other.to_string(),
    }
}

/// The address of another node, with the seed's TLS settings.
fn node_addr(template: &ConnectionInfo, host: &str, port: u16) -> ConnectionAddr {
    match template.addr() {
        ConnectionAddr::TcpTls {
            insecure,
            tls_params,
            ..
        } => ConnectionAddr::TcpTls {
            host: host.to_owned(),
            port,
            insecure: *insecure,
            tls_params: tls_params.clone(),
        },
        _ => ConnectionAddr::Tcp(host.to_owned(), port),
    }
}
