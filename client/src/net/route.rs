//! Where one command goes next while the router follows redirections (`router.rs`): its
//! node, whether `ASKING` comes first, how many redirections it followed and for how long,
//! and the pause before the next one.

use std::sync::Arc;

use redis::aio::ConnectionLike;
use redis::{Cmd, FromRedisValue, RedisResult};

use crate::net::node::Node;
use crate::pure::commands;
use crate::pure::error::Error;

/// The longest pause between two redirections of one command.
const PAUSE_CAP: std::time::Duration = std::time::Duration::from_millis(100);

/// Where one command goes next.
pub(crate) struct Route {
    /// The node to send to.
    pub(crate) node: Arc<Node>,
    /// Whether to send `ASKING` first (after an `ASK`).
    pub(crate) asking: bool,
    pub(crate) redirects: usize,
    /// When the first redirection came, and the pause before following the last one.
    pub(crate) since: Option<tokio::time::Instant>,
    pub(crate) pause: std::time::Duration,
}

impl Route {
    pub(crate) fn to(node: Arc<Node>) -> Route {
        Route {
            node,
            asking: false,
            redirects: 0,
            since: None,
            pause: std::time::Duration::ZERO,
        }
    }

    /// The pause before following the next redirection: none for the first
    /// [`Error::MAX_REDIRECTS`], then 2 ms, doubling up to 100 ms.
    pub(crate) fn next_pause(&self) -> std::time::Duration {
        if self.redirects < Error::MAX_REDIRECTS {
            return std::time::Duration::ZERO;
        }
        let past = self.redirects - Error::MAX_REDIRECTS;
        std::time::Duration::from_millis(2 << past.min(6)).min(PAUSE_CAP)
    }

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
}
