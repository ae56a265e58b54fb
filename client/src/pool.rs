//! Connections of their own for `LOCK.ACQUIRE ... WAIT`, which blocks the connection it runs
//! on: a blocked command on the shared multiplexed connection would stall every other command.
//! In a cluster, each node has its own idle connections.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Cmd, FromRedisValue, RedisResult};

use crate::commands;
use crate::router::{Node, Router};

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
    /// An idle connection to `node`, or a new one.
    pub(crate) async fn get(&self, node: &Arc<Node>) -> RedisResult<WaitConn> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(&node.addr)
            .and_then(Vec::pop);
        if let Some(conn) = idle {
            return Ok(conn);
        }
        // No response timeout: the reply to a WAIT comes when the server grants or gives up.
        let config = AsyncConnectionConfig::new().set_response_timeout(None);
        let mut conn = node
            .redis
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        let id = commands::client_id().query_async(&mut conn).await?;
        Ok(WaitConn {
            conn,
            id,
            node: node.clone(),
        })
    }

    /// Gives back a connection whose last command was answered (never a killed one).
    pub(crate) fn put(&self, conn: WaitConn) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let idle = idle.entry(conn.node.addr.clone()).or_default();
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }

    /// `cmd` on `key` over a connection of its own to the node that serves the key,
    /// following redirections; the answer, and the connection that gave it.
    pub(crate) async fn query<T: FromRedisValue>(
        &self,
        router: &Router,
        key: &str,
        cmd: &Cmd,
    ) -> RedisResult<(RedisResult<T>, WaitConn)> {
        let mut route = router.route(key);
        loop {
            let mut own = self.get(&route.node).await?;
            let answer = route.send(&mut own.conn, cmd).await;
            if !route.redirected(&answer) {
                return Ok((answer, own));
            }
            self.put(own);
        }
    }
}
