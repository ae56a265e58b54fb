//! Where things are: the seed (the node the client was opened on, or the master the
//! sentinels name now), the nodes the client knows, and the Redis Cluster slot map; and
//! how they are asked again when the deployment changes shape.
//!
//! After a connection error or a `READONLY` answer (a demoted master), a Sentinel client
//! asks the sentinels for the master (`sentinel.rs`), and a cluster client reloads the slot
//! map from the first node it knows that answers in time. At most one such refresh runs at
//! a time, and not more often than every [`REFRESH_EVERY`], however many commands fail.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use redis::{ConnectionAddr, ConnectionInfo, RedisError, RedisResult, Value};
use tokio::time::{timeout, Instant};

use crate::net::node::Node;
use crate::net::sentinel::{Sentinels, ASK_WITHIN};
use crate::pure::commands;
use crate::pure::config::ClientOptions;
use crate::pure::slots::{self, SlotMap};

/// The shortest time between two refreshes of where things are.
const REFRESH_EVERY: Duration = Duration::from_millis(100);

/// The nodes the client talks to, and which serves each slot.
pub(crate) struct Topology {
    /// The node the client was opened on, or the master the sentinels name now.
    seed: RwLock<Arc<Node>>,
    /// The seed's connection settings (credentials, TLS), used for every node.
    template: ConnectionInfo,
    sentinels: Option<Sentinels>,
    nodes: Mutex<HashMap<Arc<str>, Arc<Node>>>,
    slots: RwLock<SlotMap<Arc<Node>>>,
    /// When the last refresh ended; held while one runs.
    refreshed: tokio::sync::Mutex<Option<Instant>>,
}

impl Topology {
    /// The seed is `redis` (the master `sentinels` named, if given); every node is reached
    /// with `options`. Connects to nothing yet.
    pub(crate) fn new(
        redis: redis::Client,
        sentinels: Option<Sentinels>,
        options: ClientOptions,
    ) -> Topology {
        let template = redis.get_connection_info().clone();
        let seed = Node::seed(redis, options);
        let nodes = HashMap::from([(seed.addr.clone(), seed.clone())]);
        Topology {
            seed: RwLock::new(seed),
            template,
            sentinels,
            nodes: Mutex::new(nodes),
            slots: RwLock::new(SlotMap::new()),
            refreshed: tokio::sync::Mutex::new(None),
        }
    }

    /// The node the client was opened on (with Sentinel: the master as last known).
    pub(crate) fn seed(&self) -> Arc<Node> {
        self.seed
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Loads the slot map if the seed is a cluster node. A server that refuses `INFO` or
    /// `CLUSTER SLOTS` (ACL) is taken as it comes: redirections then teach the map.
    pub(crate) async fn discover(&self) -> RedisResult<()> {
        let mut conn = self.seed().shared().await?;
        let info = commands::info_cluster()
            .query_async::<String>(&mut conn)
            .await;
        let Some(info) = allowed(info)? else {
            return Ok(());
        };
        if !info.lines().any(|line| line.trim() == "cluster_enabled:1") {
            return Ok(());
        }
        self.load_slots(&self.seed()).await
    }

    /// Loads the slot map from `node`'s `CLUSTER SLOTS`.
    async fn load_slots(&self, node: &Arc<Node>) -> RedisResult<()> {
        let mut conn = node.shared().await?;
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
        tracing::debug!(ranges = ranges.len(), from = %node.addr, "cluster slot map loaded");
        Ok(())
    }

    /// The node that serves `key`, as far as the client knows.
    pub(crate) fn node_for(&self, key: &str) -> Arc<Node> {
        let slot = slots::slot(key.as_bytes());
        let map = self.slots.read().unwrap_or_else(PoisonError::into_inner);
        match map.owner(slot) {
            Some(node) => node.clone(),
            None => self.seed(),
        }
    }

    /// Tells that `err` came from `node`. After a connection error, `READONLY` (a demoted
    /// master) or `UNBLOCKED` (a wait its demotion ended), it asks again where things are;
    /// true if it was such an error.
    pub(crate) async fn failed(&self, node: &Arc<Node>, err: &RedisError) -> bool {
        let demoted = matches!(err.code(), Some("READONLY" | "UNBLOCKED"));
        if !(err.is_io_error() || demoted) {
            return false;
        }
        self.refresh(node).await;
        true
    }

    /// Asks again where things are, because `node` failed: the sentinels for the master,
    /// or the cluster for its slot map. Nothing to ask for a lone server.
    pub(crate) async fn refresh(&self, node: &Arc<Node>) {
        let mut last = self.refreshed.lock().await;
        // Someone moved on already, or asked a moment ago.
        let moved_on = self.sentinels.is_some() && self.seed().addr != node.addr;
        if moved_on || last.is_some_and(|at| at.elapsed() < REFRESH_EVERY) {
            return;
        }
        if let Some(sentinels) = &self.sentinels {
            self.follow_master(sentinels, node).await;
        } else if self.is_cluster() {
            self.reload_slots().await;
        }
        *last = Some(Instant::now());
    }

    /// Moves the seed to the master the sentinels name, if it is not `failed`.
    async fn follow_master(&self, sentinels: &Sentinels, failed: &Node) {
        let found = sentinels.master(Some(&failed.addr)).await;
        let master = found.and_then(|(host, port)| self.node(&host, port));
        match master {
            Ok(master) => {
                tracing::info!(from = %failed.addr, to = %master.addr, "following the new master");
                *self.seed.write().unwrap_or_else(PoisonError::into_inner) = master;
            }
            Err(err) => tracing::debug!(%err, "no new master yet"),
        }
    }

    /// Loads the slot map again from the first known node that answers in time.
    async fn reload_slots(&self) {
        let seed = self.seed();
        let others: Vec<Arc<Node>> = {
            let nodes = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
            nodes
                .values()
                .filter(|n| n.addr != seed.addr)
                .cloned()
                .collect()
        };
        for node in std::iter::once(seed).chain(others) {
            match timeout(ASK_WITHIN, self.load_slots(&node)).await {
                Ok(Ok(())) => return,
                Ok(Err(err)) => tracing::debug!(node = %node.addr, %err, "no slot map"),
                Err(_) => tracing::debug!(node = %node.addr, "no slot map in time"),
            }
        }
        tracing::warn!("no known cluster node gave its slot map");
    }

    /// Whether a failed node can be replaced by another: the client follows a Sentinel
    /// master or a cluster's slot map.
    pub(crate) fn follows_failovers(&self) -> bool {
        self.sentinels.is_some() || self.is_cluster()
    }

    fn is_cluster(&self) -> bool {
        let map = self.slots.read().unwrap_or_else(PoisonError::into_inner);
        !map.is_empty()
    }

    /// The node at `host:port`, made on first sight.
    pub(crate) fn node(&self, host: &str, port: u16) -> RedisResult<Arc<Node>> {
        let host = match host {
            "" => self.seed_host(),
            host => host,
        };
        let addr = format!("{host}:{port}");
        let mut nodes = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(node) = nodes.get(addr.as_str()) {
            return Ok(node.clone());
        }
        let node = Node::at(&self.template, host, port, self.seed().options)?;
        nodes.insert(node.addr.clone(), node.clone());
        Ok(node)
    }

    fn seed_host(&self) -> &str {
        match self.template.addr() {
            ConnectionAddr::Tcp(host, _) | ConnectionAddr::TcpTls { host, .. } => host,
            _ => "127.0.0.1",
        }
    }

    /// Records that `node` serves `slot`.
    pub(crate) fn learn(&self, slot: u16, node: &Arc<Node>) {
        let mut map = self.slots.write().unwrap_or_else(PoisonError::into_inner);
        map.assign(slot, slot, node);
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
