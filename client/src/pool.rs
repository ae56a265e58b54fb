//! Connections of their own for `LOCK.ACQUIRE ... WAIT`, which blocks the connection it runs
//! on: a blocked command on the shared multiplexed connection would stall every other command.

use std::sync::{Mutex, PoisonError};

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, RedisResult};

/// How many idle wait connections a client keeps for reuse.
const MAX_IDLE: usize = 4;

/// A connection used by one waiter at a time, with its server-side client id (for
/// `CLIENT KILL ID`, the only way to end a wait early).
pub(crate) struct WaitConn {
    pub(crate) conn: MultiplexedConnection,
    pub(crate) id: i64,
}

/// A small pool of idle wait connections; more are opened when all are busy.
pub(crate) struct WaitPool {
    redis: redis::Client,
    idle: Mutex<Vec<WaitConn>>,
}

impl WaitPool {
    pub(crate) fn new(redis: redis::Client) -> WaitPool {
        WaitPool {
            redis,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// An idle connection, or a new one.
    pub(crate) async fn get(&self) -> RedisResult<WaitConn> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        if let Some(conn) = idle {
            return Ok(conn);
        }
        // No response timeout: the reply to a WAIT comes when the server grants or gives up.
        let config = AsyncConnectionConfig::new().set_response_timeout(None);
        let mut conn = self
            .redis
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        let id = redis::cmd("CLIENT")
            .arg("ID")
            .query_async(&mut conn)
            .await?;
        Ok(WaitConn { conn, id })
    }

    /// Gives back a connection whose last command was answered (never a killed one).
    pub(crate) fn put(&self, conn: WaitConn) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }
}
