//! The wait connections of a client: per node, one RESP3 connection (`push.rs`) that
//! carries every ticket wait (`LOCK.WAIT`) of the client on that node and receives their
//! outcomes by push, or, on a node that answers "needs TO" (a Redis Cluster node), a pair
//! that pulls them (`pull.rs`: [`Tickets::take_pull`]). Opened lazily at the first wait for
//! the node, and again once one is given up (`channel.rs`: the server has dropped its
//! tickets by then, so nothing is lost by opening another).
//!
//! A node whose server cannot take tickets is marked as taking blocking waits only: one
//! without RESP3 or without the rights the wait connection needs (it does not open: see
//! [`no_tickets`]), or one that answers the first `LOCK.WAIT` with `unknown command` (an
//! older module; see [`Tickets::unsupported`]). Any other failure to open (a network error,
//! a busy or loading server, a refused sign-in) fails that one wait, and the next wait tries
//! again.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use redis::aio::MultiplexedConnection;
use redis::{Cmd, RedisError, RedisResult};

use crate::net::channel::{broken, Channel};
use crate::net::mailbox::Loss;
use crate::net::node::{Carrier, Node};
use crate::net::{pull, push};

type Slot = Arc<tokio::sync::Mutex<Option<Arc<Channel>>>>;

/// What [`Tickets::connect`] fails with for a node that takes blocking waits only.
const BLOCKING_ONLY: &str = "rlock: this node takes blocking waits only";

/// A wait connection as the router hands it out: a handle to send on, and its channel.
pub(crate) struct Carried {
    pub(crate) link: MultiplexedConnection,
    pub(crate) channel: Arc<Channel>,
}

/// The wait connections of one client, one per node, and the nodes without tickets.
#[derive(Default)]
pub(crate) struct Tickets {
    channels: Mutex<HashMap<Arc<str>, Slot>>,
    blocking_only: Mutex<HashSet<Arc<str>>>,
    pulling: Mutex<HashSet<Arc<str>>>,
}

impl Tickets {
    /// Whether waits on `node` are to be blocking ones (see the module docs).
    pub(crate) fn blocking_only(&self, node: &Node) -> bool {
        self.blocking_only
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&node.addr)
    }

    /// From now on, waits on `node` are blocking ones.
    pub(crate) fn take_blocking_only(&self, node: &Node) {
        tracing::info!(node = %node.addr, "the server takes no ticket waits; waiting with blocking commands");
        self.blocking_only
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(node.addr.clone());
    }

    /// Whether `err` says that the node takes no ticket waits: [`Tickets::connect`] refused
    /// it, or the server does not know `LOCK.WAIT` (or cannot push to a RESP2 connection).
    pub(crate) fn unsupported(err: &RedisError) -> bool {
        let detail = err.detail().unwrap_or_default().to_ascii_lowercase();
        err.to_string().contains(BLOCKING_ONLY)
            || (err.code() == Some("ERR")
                && ((detail.starts_with("unknown command") && detail.contains("lock.wait"))
                    || detail.contains("needs resp3")))
    }

    /// Whether `err` says that the node wants `TO` (a Redis Cluster node): its waits are then
    /// pulled ([`Tickets::take_pull`]).
    pub(crate) fn needs_to(err: &RedisError) -> bool {
        let detail = err.detail().unwrap_or_default().to_ascii_lowercase();
        // `LOCK.WAIT ...`, or the ticket command of another kind (`SEM.WAIT ...`).
        let command = detail.split_whitespace().next().unwrap_or_default();
        err.code() == Some("ERR") && command.ends_with(".wait") && detail.contains("needs to")
    }

    /// From now on, waits on `node` are pulled (`pull.rs`).
    pub(crate) fn take_pull(&self, node: &Node) {
        tracing::debug!(node = %node.addr, "the node wants TO: its waits are pulled");
        let mut pulling = self.pulling.lock().unwrap_or_else(PoisonError::into_inner);
        pulling.insert(node.addr.clone());
    }

    fn pulls(&self, node: &Node) -> bool {
        let pulling = self.pulling.lock().unwrap_or_else(PoisonError::into_inner);
        pulling.contains(&node.addr)
    }

    /// The wait connection to `node`, opened now if it has none that works.
    async fn channel(&self, node: &Arc<Node>) -> RedisResult<Arc<Channel>> {
        let slot = self
            .channels
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(node.addr.clone())
            .or_default()
            .clone();
        let mut slot = slot.lock().await;
        let pulls = self.pulls(node);
        let usable = |c: &&Arc<Channel>| !c.closing() && c.receiver.is_some() == pulls;
        if let Some(channel) = slot.as_ref().filter(usable) {
            return Ok(channel.clone());
        }
        *slot = None;
        let opened = match pulls {
            true => pull::open(node).await,
            false => push::open(node).await,
        };
        let channel = match opened {
            Ok(channel) => channel,
            Err(err) if no_tickets(&err) => {
                tracing::debug!(node = %node.addr, %err, "no wait connection");
                self.take_blocking_only(node);
                return Err(RedisError::from((redis::ErrorKind::Client, BLOCKING_ONLY)));
            }
            Err(err) => {
                tracing::warn!(node = %node.addr, %err, "could not open a wait connection; the next wait tries again");
                return Err(err);
            }
        };
        *slot = Some(channel.clone());
        Ok(channel)
    }
}

impl Carrier for Tickets {
    type Conn = Carried;
    type Link = MultiplexedConnection;

    async fn connect(&self, node: &Arc<Node>) -> RedisResult<Carried> {
        if self.blocking_only(node) {
            return Err(RedisError::from((redis::ErrorKind::Client, BLOCKING_ONLY)));
        }
        let channel = self.channel(node).await?;
        let link = match channel.receiver {
            Some(_) => pull::sender(&channel).await?,
            None => channel.link().ok_or_else(broken)?,
        };
        Ok(Carried { link, channel })
    }

    fn link(conn: &mut Carried) -> &mut MultiplexedConnection {
        &mut conn.link
    }

    fn recycle(&self, _: Carried) {}

    /// `LOCK.WAIT ... TO <receiver>` on a pull connection: the receiver is per node.
    fn adapt(conn: &Carried, cmd: &Cmd) -> Option<Cmd> {
        let receiver = conn.channel.receiver?;
        let mut cmd = cmd.clone();
        cmd.arg("TO").arg(receiver);
        Some(cmd)
    }

    fn failed(&self, conn: &Carried, err: &RedisError) {
        // A command without an answer: the connection may be dead, and a ticket it queued
        // would be unknown; the server drops the tickets of a closed connection.
        if err.is_timeout() {
            conn.channel.lose(Loss::Unresponsive);
        } else if err.is_io_error() {
            conn.channel.lose(Loss::Broken);
        }
    }
}

/// Whether `err`, met while opening a wait connection, says that the node takes no ticket
/// waits for good: it speaks no RESP3 (`NOPROTO`, or no `HELLO` at all), or the client's
/// user lacks the rights the connection needs (`NOPERM`: `CLIENT ID`, or the channel of a
/// push connection). Anything else passes (a network error, `BUSY`, `LOADING`, a refused
/// sign-in): the next wait tries again.
pub(crate) fn no_tickets(err: &RedisError) -> bool {
    let detail = err.detail().unwrap_or_default().to_ascii_lowercase();
    let unknown = err.code() == Some("ERR") && detail.starts_with("unknown command");
    matches!(err.code(), Some("NOPROTO" | "NOPERM")) || unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_error(line: &str) -> RedisError {
        match redis::parse_redis_value(format!("-{line}\r\n").as_bytes()) {
            Ok(redis::Value::ServerError(err)) => err.into(),
            other => panic!("not an error: {other:?}"),
        }
    }

    #[test]
    fn the_refusals_that_mean_blocking_waits_only_are_told_from_others() {
        let unsupported = [
            "ERR unknown command 'LOCK.WAIT', with args beginning with: 'k' 'o' ",
            "ERR LOCK.WAIT without TO needs RESP3 (HELLO 3)",
            "ERR SEM.WAIT without TO needs RESP3 (HELLO 3)",
        ];
        for line in unsupported {
            assert!(Tickets::unsupported(&server_error(line)), "{line}");
        }
        let others = [
            "ERR unknown command 'LOCK.INFO', with args beginning with: 'k' ",
            "ERR TOKEN needs a value",
            "READONLY You can't write against a read only replica.",
            "ERR subscribe to __rlock__:7 first (LOCK.WAIT without TO pushes outcomes there)",
            "ERR LOCK.WAIT in a cluster needs TO <client id> (outcomes read with LOCK.GRANTS)",
        ];
        for line in others {
            assert!(!Tickets::unsupported(&server_error(line)), "{line}");
        }
        let cluster =
            "ERR LOCK.WAIT in a cluster needs TO <client id> (outcomes read with LOCK.GRANTS)";
        assert!(Tickets::needs_to(&server_error(cluster)));
        let other_kind =
            "ERR RWLOCK.WAIT in a cluster needs TO <client id> (outcomes read with LOCK.GRANTS)";
        assert!(Tickets::needs_to(&server_error(other_kind)));
        assert!(!Tickets::needs_to(&server_error("ERR TOKEN needs a value")));
        let subscribe =
            "ERR subscribe to __rlock__:7 first (SEM.WAIT without TO pushes outcomes there)";
        assert!(!Tickets::needs_to(&server_error(subscribe)));
        let refused = RedisError::from((redis::ErrorKind::Client, BLOCKING_ONLY));
        assert!(Tickets::unsupported(&refused));
        assert!(!Tickets::unsupported(&broken()));
    }

    #[test]
    fn only_lasting_refusals_at_open_leave_a_node_on_blocking_waits() {
        let lasting = [
            "NOPROTO unsupported protocol version",
            "ERR unknown command 'HELLO', with args beginning with: '3' ",
            "NOPERM User app has no permissions to run the 'client|id' command",
            "NOPERM this user has no permissions to access one of the channels used as arguments",
        ];
        for line in lasting {
            assert!(no_tickets(&server_error(line)), "{line}");
        }
        let passing = [
            "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
            "LOADING Redis is loading the dataset in memory",
            "WRONGPASS invalid username-password pair or user is disabled.",
            "ERR max number of clients reached",
            "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
        ];
        for line in passing {
            assert!(!no_tickets(&server_error(line)), "{line}");
        }
        assert!(!no_tickets(&broken()));
    }
}
