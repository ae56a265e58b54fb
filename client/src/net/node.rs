//! One server the client talks to (a Redis Cluster node, or the one server): its address and
//! its shared connection, and the [`Carrier`] seam through which a command reaches it on the
//! shared connection or on one of its own.
//!
//! The shared connection reconnects by itself after a dropped connection (its manager does),
//! but not after a response timeout: a peer host that vanished silently would keep every
//! command timing out on a dead socket. So after a response timeout a fresh one is opened
//! in the background, and takes its place once open. A server's idle `timeout` closes a connection nobody used
//! for a while: the next command on it fails as dropped, so idempotent commands (renewals,
//! `PING`, `LOCK.INFO`, `CLIENT KILL`) are sent once more ([`dropped`]), on the new one.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::{
    Cmd, ConnectionAddr, ConnectionInfo, FromRedisValue, Pipeline, RedisError, RedisResult,
};
use tokio::sync::Mutex;

use crate::pure::config::ClientOptions;

/// How long a connection may stay unused before a command that must not run twice checks
/// it first: half the shortest idle `timeout` a server can have (1 s).
pub(crate) const IDLE_CHECK: Duration = Duration::from_millis(500);

/// One server: its address and its shared multiplexed connection, opened at first use.
pub(crate) struct Node {
    /// `host:port` (the form redirections use), or the seed's socket path.
    pub(crate) addr: Arc<str>,
    pub(crate) redis: redis::Client,
    /// The client's timeouts and retries, for every connection to this node.
    pub(crate) options: ClientOptions,
    /// The shared connection, once opened, and its generation.
    shared: Mutex<Option<(u64, ConnectionManager)>>,
    generations: AtomicU64,
    /// Whether a fresh shared connection is being opened to replace one that timed out.
    reopening: AtomicBool,
    /// When a command last took the shared connection.
    last_used: std::sync::Mutex<Instant>,
}

/// A node's shared connection, as opened once (its generation tells it from later ones).
pub(crate) struct SharedConn {
    pub(crate) conn: ConnectionManager,
    generation: u64,
    node: Arc<Node>,
}

/// Whether `err` says that the connection was dropped before an answer (a server's idle
/// `timeout` closed it, a restart): an idempotent command may be sent once more.
pub(crate) fn dropped(err: &RedisError) -> bool {
    err.is_unrecoverable_error() && !err.is_timeout()
}

impl Node {
    /// The node the client is opened on, reached as `redis` says.
    pub(crate) fn seed(redis: redis::Client, options: ClientOptions) -> Arc<Node> {
        let addr = addr_text(redis.get_connection_info().addr());
        Node::new(&addr, redis, options)
    }

    /// Another node at `host:port`, reached with `template`'s settings (credentials, TLS).
    pub(crate) fn at(
        template: &ConnectionInfo,
        host: &str,
        port: u16,
        options: ClientOptions,
    ) -> RedisResult<Arc<Node>> {
        let info = template.clone().set_addr(node_addr(template, host, port));
        let redis = redis::Client::open(info)?;
        Ok(Node::new(&format!("{host}:{port}"), redis, options))
    }

    fn new(addr: &str, redis: redis::Client, options: ClientOptions) -> Arc<Node> {
        Arc::new(Node {
            addr: addr.into(),
            redis,
            options,
            shared: Mutex::new(None),
            generations: AtomicU64::new(0),
            reopening: AtomicBool::new(false),
            last_used: std::sync::Mutex::new(Instant::now()),
        })
    }

    /// The node's shared connection (cheap to clone; it reconnects by itself).
    pub(crate) async fn shared(self: &Arc<Self>) -> RedisResult<ConnectionManager> {
        Ok(self.shared_conn().await?.conn)
    }

    /// The node's shared connection, opened now if it is not open.
    pub(crate) async fn shared_conn(self: &Arc<Self>) -> RedisResult<SharedConn> {
        *self
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
        let mut slot = self.shared.lock().await;
        let (generation, conn) = match &*slot {
            Some((generation, conn)) => (*generation, conn.clone()),
            None => {
                let conn = self.open().await?;
                let generation = self.generations.fetch_add(1, Ordering::Relaxed);
                *slot = Some((generation, conn.clone()));
                (generation, conn)
            }
        };
        let node = self.clone();
        Ok(SharedConn {
            conn,
            generation,
            node,
        })
    }

    /// A new shared connection.
    async fn open(&self) -> RedisResult<ConnectionManager> {
        // Few, short reconnect retries: a dead server should fail fast, and the watchdog
        // retries every renewal period anyway. Every reply is bounded: a server that stops
        // answering fails each command after the response timeout.
        let o = &self.options;
        let config = ConnectionManagerConfig::new()
            .set_number_of_retries(o.retry_count())
            .set_max_delay(Duration::from_millis(500))
            .set_connection_timeout(Some(o.connect_timeout_duration()))
            .set_response_timeout(Some(o.response_timeout_duration()));
        // The manager retries a failed first connection too: the whole stays within the
        // connect timeout, so that opening a client on a stopped server fails in time.
        let open = ConnectionManager::new_with_config(self.redis.clone(), config);
        let opened = match tokio::time::timeout(o.connect_timeout_duration(), open).await {
            Ok(opened) => opened,
            Err(_) => Err(crate::pure::error::timed_out(
                "no connection within the connect timeout",
            )),
        };
        opened.map_err(|err| crate::pure::error::unreachable(&self.addr, err))
    }

    /// Opens a fresh shared connection in the background, and puts it in the place of the
    /// `generation` one if that is still in place: a stopped server keeps its connection
    /// (a new one would not answer either), a silently lost one is replaced.
    fn replace(self: &Arc<Self>, generation: u64) {
        if self.reopening.swap(true, Ordering::AcqRel) {
            return;
        }
        let node = self.clone();
        tokio::spawn(async move {
            let fresh = node.open().await;
            let mut slot = node.shared.lock().await;
            if let (Ok(conn), Some((current, _))) = (fresh, &*slot) {
                if *current == generation {
                    tracing::debug!(node = %node.addr, "a shared connection timed out; replaced by a fresh one");
                    *slot = Some((node.generations.fetch_add(1, Ordering::Relaxed), conn));
                }
            }
            node.reopening.store(false, Ordering::Release);
        });
    }

    /// How long since a command last took the shared connection: a server's idle `timeout`
    /// may have closed it.
    pub(crate) fn idle(&self) -> Duration {
        let last = *self
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        last.elapsed()
    }

    /// `pipe` on the shared connection, sent once more if the connection was dropped: for
    /// pipelines that may run twice (renewals).
    pub(crate) async fn pipeline<T: FromRedisValue>(
        self: &Arc<Self>,
        pipe: &Pipeline,
    ) -> RedisResult<T> {
        let mut shared = self.shared_conn().await?;
        let answer = match pipe.query_async(&mut shared.conn).await {
            Err(err) if dropped(&err) => {
                tracing::debug!(node = %self.addr, %err, "the shared connection was dropped; sending again");
                pipe.query_async(&mut self.shared_conn().await?.conn).await
            }
            answer => answer,
        };
        if let Err(err) = &answer {
            shared.failed(err);
        }
        answer
    }
}

impl Node {
    /// `cmd` on this node's shared connection, for a command that must not run twice and
    /// must reach this very node (`LOCK.CANCEL` of a wait id, which is per server): after
    /// [`IDLE_CHECK`] without commands the connection is checked with a `PING` first (sent
    /// again if the server had closed it while idle). Redirections are not followed.
    pub(crate) async fn query_fresh<T: FromRedisValue>(
        self: &Arc<Self>,
        cmd: &Cmd,
    ) -> RedisResult<T> {
        if self.idle() >= IDLE_CHECK {
            let ping = redis::pipe()
                .add_command(crate::pure::commands::ping())
                .clone();
            self.pipeline::<(String,)>(&ping).await?;
        }
        let mut shared = self.shared_conn().await?;
        let answer = cmd.query_async(&mut shared.conn).await;
        if let Err(err) = &answer {
            shared.failed(err);
        }
        answer
    }
}

impl SharedConn {
    /// After `err` on this connection: a response timeout has it replaced (see the module
    /// docs).
    pub(crate) fn failed(&self, err: &RedisError) {
        if err.is_timeout() {
            self.node.replace(self.generation);
        }
    }
}

/// How a command reaches a node: the connection it is sent on, and what becomes of that
/// connection when the node redirects the command instead of running it.
pub(crate) trait Carrier {
    /// A connection as the carrier hands it out.
    type Conn: Send;
    /// What the command is written on.
    type Link: ConnectionLike + Send;

    /// A connection to `node`.
    fn connect(&self, node: &Arc<Node>) -> impl Future<Output = RedisResult<Self::Conn>> + Send;

    /// The connection's link, to send on.
    fn link(conn: &mut Self::Conn) -> &mut Self::Link;

    /// Takes back a connection whose command was redirected (so not run): it is as good as
    /// before.
    fn recycle(&self, conn: Self::Conn);

    /// Forgets what it keeps for `node`, which failed: idle connections to a dead server
    /// would only fail again.
    fn forget(&self, _node: &Node) {}

    /// Tells the carrier that `conn` answered `err`.
    fn failed(&self, _conn: &Self::Conn, _err: &RedisError) {}

    /// The command to send on `conn` instead of `cmd`, if the connection changes it.
    fn adapt(_conn: &Self::Conn, _cmd: &Cmd) -> Option<Cmd> {
        None
    }
}

/// Each node's shared multiplexed connection.
pub(crate) struct Shared;

impl Carrier for Shared {
    type Conn = SharedConn;
    type Link = ConnectionManager;

    async fn connect(&self, node: &Arc<Node>) -> RedisResult<SharedConn> {
        node.shared_conn().await
    }

    fn link(conn: &mut SharedConn) -> &mut ConnectionManager {
        &mut conn.conn
    }

    fn recycle(&self, _: SharedConn) {}

    fn failed(&self, conn: &SharedConn, err: &RedisError) {
        conn.failed(err);
    }
}

/// An address in the `host:port` form redirections use.
pub(crate) fn addr_text(addr: &ConnectionAddr) -> String {
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
