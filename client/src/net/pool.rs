//! Connections of their own for `LOCK.ACQUIRE ... WAIT`, which blocks the connection it runs
//! on: a blocked command on the shared multiplexed connection would stall every other command.
//! In a cluster, each node has its own idle connections.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::io::tcp::socket2::TcpKeepalive;
use redis::{AsyncConnectionConfig, RedisResult};

use crate::net::node::{Carrier, Node};
use crate::pure::commands;
use crate::pure::error::{timed_out, unreachable};

/// How many idle wait connections a client keeps for reuse, per node.
const MAX_IDLE: usize = 4;

/// A connection used by one waiter at a time, with its node and its server-side client id
/// (for `CLIENT KILL ID` on that node, the only way to end a wait early).
pub(crate) struct WaitConn {
    pub(crate) conn: MultiplexedConnection,
    pub(crate) id: i64,
    pub(crate) node: Arc<Node>,
}

/// A small pool of idle wait connections per node; more are opened when all are busy.
#[derive(Default)]
pub(crate) struct WaitPool {
    idle: Mutex<HashMap<Arc<str>, Vec<WaitConn>>>,
}

impl WaitPool {
    /// An idle connection to `node` that still answers, or a new one.
    pub(crate) async fn get(&self, node: &Arc<Node>) -> RedisResult<WaitConn> {
        while let Some(mut conn) = self.idle(node) {
            // A pooled connection may have been closed by the server meanwhile (its idle
            // `timeout`, a restart, `CLIENT KILL`); a wait sent on it would get no answer.
            if conn.answers().await {
                return Ok(conn);
            }
            tracing::debug!(node = %node.addr, "a pooled wait connection is stale; dropping it");
        }
        self.open(node).await
    }

    fn idle(&self, node: &Node) -> Option<WaitConn> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        idle.get_mut(&node.addr).and_then(Vec::pop)
    }

    /// A new wait connection to `node`.
    async fn open(&self, node: &Arc<Node>) -> RedisResult<WaitConn> {
        // No response timeout: the reply to a WAIT comes when the server grants or gives up.
        // The wait watches its deadline and its server's liveness itself (`wait.rs`); TCP
        // keepalive notices a peer host that is gone.
        let o = node.options;
        let config = AsyncConnectionConfig::new()
            .set_response_timeout(None)
            .set_connection_timeout(Some(o.connect_timeout_duration()));
        // The kernel counts keepalive times in whole seconds, 1 at least.
        let every = o.keepalive_interval().max(Duration::from_secs(1));
        let info = node.redis.get_connection_info().clone();
        let tcp = info.tcp_settings().clone().set_nodelay(true);
        let tcp = tcp.set_keepalive(TcpKeepalive::new().with_time(every).with_interval(every));
        let redis = redis::Client::open(info.set_tcp_settings(tcp))?;
        let mut conn = redis
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|err| unreachable(&node.addr, err))?;
        let ask = commands::client_id();
        let id = tokio::time::timeout(o.response_timeout_duration(), ask.query_async(&mut conn))
            .await
            .map_err(|_| timed_out("no reply to CLIENT ID in time"))??;
        Ok(WaitConn {
            conn,
            id,
            node: node.clone(),
        })
    }

    /// Drops the idle connections to `node`: one of them broke, the others are suspect.
    pub(crate) fn forget(&self, node: &Node) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        idle.remove(&node.addr);
    }

    /// Gives back a connection whose last command was answered (never a killed one).
    pub(crate) fn put(&self, conn: WaitConn) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let idle = idle.entry(conn.node.addr.clone()).or_default();
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }
}

impl Carrier for WaitPool {
    type Conn = WaitConn;
    type Link = MultiplexedConnection;

    async fn connect(&self, node: &Arc<Node>) -> RedisResult<WaitConn> {
        self.get(node).await
    }

    fn link(conn: &mut WaitConn) -> &mut MultiplexedConnection {
        &mut conn.conn
    }

    fn recycle(&self, conn: WaitConn) {
        self.put(conn);
    }

    fn forget(&self, node: &Node) {
        WaitPool::forget(self, node);
    }
}

impl WaitConn {
    /// Whether the connection answers a `PING` within the response timeout.
    async fn answers(&mut self) -> bool {
        let ping = commands::ping();
        let reply = ping.query_async::<String>(&mut self.conn);
        let within = self.node.options.response_timeout_duration();
        matches!(tokio::time::timeout(within, reply).await, Ok(Ok(_)))
    }

    /// Ends whatever runs on this connection with `CLIENT KILL ID`, sent on the shared
    /// connection of the same node (client ids are per server). Once it is answered, the
    /// server has closed the connection.
    pub(crate) async fn kill(&self) -> RedisResult<()> {
        let kill = redis::pipe()
            .add_command(commands::client_kill_id(self.id))
            .clone();
        // Killing twice kills once: it may be sent again on a fresh connection.
        let killed: RedisResult<(i64,)> = self.node.pipeline(&kill).await;
        killed.map(drop)
    }
}
