//! A read-write worker's connection: raw commands on one node, following a cluster's
//! redirections (`MOVED`: to the slot's node from then on; `ASK`: to the importing node,
//! after `ASKING`). Elsewhere no redirection comes and it is a plain connection.

use std::time::Duration;

use redis::{ErrorKind, RedisError, RedisResult, ServerErrorKind, Value};

use super::LEASE;
use crate::history::{Mode, Wait};

/// The semaphore workers' keys.
pub const SEM_KEYS: &[&str] = &["sem:{a}", "sem:{b}"];

/// The read-write workers' keys; the hash tag puts each key's fenced data in its slot.
pub const RW_KEYS: &[&str] = &["rw:{a}", "rw:{b}"];

/// How many redirections one command follows (a migration may bounce it a few times).
const REDIRECTS: usize = 5;
/// How long a reply may take (past any fault) before it counts as lost.
pub const REPLY_SLACK: Duration = Duration::from_secs(30);

/// The mode argument of `RWLOCK.*` commands.
pub fn mode_arg(mode: Mode) -> &'static str {
    if mode == Mode::Write {
        "WRITE"
    } else {
        "READ"
    }
}

/// The `LEASE` argument every read-write worker asks for.
pub fn lease_ms() -> u64 {
    LEASE.as_millis() as u64
}

pub struct Node {
    conn: redis::Connection,
    /// The node's port (after the last redirection).
    pub port: u16,
    /// A command timed out or the connection broke: a late reply could still come and
    /// pass for the next command's, so no command is sent on it again.
    pub dead: bool,
}

fn connect(port: u16) -> Option<redis::Connection> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).ok()?;
    client
        .get_connection_with_timeout(Duration::from_secs(1))
        .ok()
}

/// The port of a redirection's node (`host:port`).
fn redirected(e: &RedisError) -> Option<(u16, bool)> {
    let (addr, _slot) = e.redirect_node()?;
    let port = addr.rsplit_once(':')?.1.parse().ok()?;
    let ask = e.kind() == ErrorKind::Server(ServerErrorKind::Ask);
    Some((port, ask))
}

/// Whether an error means the connection broke (any reply may be lost with it).
pub fn broken(e: &RedisError) -> bool {
    e.is_io_error() || e.is_connection_dropped()
}

impl Node {
    pub fn open(port: u16) -> Option<Node> {
        Some(Node {
            conn: connect(port)?,
            port,
            dead: false,
        })
    }

    /// Runs `cmd`, its reply awaited for `limit`, following redirections.
    pub fn call(&mut self, cmd: &redis::Cmd, limit: Duration) -> RedisResult<Value> {
        if self.dead {
            let gone = std::io::Error::new(std::io::ErrorKind::NotConnected, "given up");
            return Err(gone.into());
        }
        let reply = self.follow(cmd, limit);
        if let Err(e) = &reply {
            self.dead = broken(e) || e.is_timeout();
        }
        reply
    }

    /// Runs `cmd`, following redirections.
    fn follow(&mut self, cmd: &redis::Cmd, limit: Duration) -> RedisResult<Value> {
        let _ = self.conn.set_read_timeout(Some(limit));
        let mut reply = cmd.query::<Value>(&mut self.conn);
        for _ in 0..REDIRECTS {
            let Some((port, ask)) = reply.as_ref().err().and_then(redirected) else {
                break;
            };
            let Some(conn) = connect(port) else {
                break;
            };
            (self.conn, self.port) = (conn, port);
            let _ = self.conn.set_read_timeout(Some(limit));
            if ask {
                let _ = redis::cmd("ASKING").exec(&mut self.conn);
            }
            reply = cmd.query::<Value>(&mut self.conn);
        }
        reply
    }

    /// Runs a blocking `cmd` (a `WAIT` of `wait`) and counts its replies in `event`: the
    /// reply, then a `PING` that must be answered `PONG`, not by a second reply. `None`:
    /// no reply (lost, or the connection broke); an error reply is a reply (TRYAGAIN,
    /// LOADING, READONLY, an upgrade refused, ...).
    pub fn wait(
        &mut self,
        cmd: &redis::Cmd,
        wait: Duration,
        event: &mut Wait,
    ) -> Option<RedisResult<Value>> {
        let reply = self.call(cmd, wait + REPLY_SLACK);
        match &reply {
            // No reply in time: lost (counted by the checker).
            Err(e) if e.is_timeout() => return None,
            Err(e) if broken(e) => {
                event.conn_error = true;
                return None;
            }
            _ => {}
        }
        event.replies = 1;
        let _ = self.conn.set_read_timeout(Some(Duration::from_secs(10)));
        match redis::cmd("PING").query::<Value>(&mut self.conn) {
            Ok(Value::SimpleString(s)) if s == "PONG" => {}
            Ok(second) => {
                eprintln!("{}: {cmd:?} got a second reply: {second:?}", event.worker);
                event.replies = 2;
            }
            Err(e) if broken(&e) || e.is_timeout() => {
                event.conn_error = true;
                self.dead = true;
            }
            // The server refused the PING itself (LOADING after a restart, ...).
            Err(e) => eprintln!("{}: PING after a wait: {e}", event.worker),
        }
        Some(reply)
    }
}
