//! One server the client talks to (a Redis Cluster node, or the one server): its address and
//! its shared connection, and the [`Carrier`] seam through which a command reaches it on the
//! shared connection or on one of its own.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::{ConnectionAddr, ConnectionInfo, RedisResult};
use tokio::sync::OnceCell;

use crate::config::ClientOptions;

/// One server: its address and its shared multiplexed connection, opened at first use.
pub(crate) struct Node {
    /// `host:port` (the form redirections use), or the seed's socket path.
    pub(crate) addr: Arc<str>,
    pub(crate) redis: redis::Client,
    /// The client's timeouts and retries, for every connection to this node.
    pub(crate) options: ClientOptions,
    shared: OnceCell<ConnectionManager>,
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
            shared: OnceCell::new(),
        })
    }

    /// The node's shared connection (cheap to clone; it reconnects by itself).
    pub(crate) async fn shared(&self) -> RedisResult<ConnectionManager> {
        // Few, short reconnect retries: a dead server should fail fast, and the watchdog
        // retries every renewal period anyway. Every reply is bounded: a server that stops
        // answering fails each command after the response timeout.
        let o = &self.options;
        let config = ConnectionManagerConfig::new()
            .set_number_of_retries(o.retry_count())
            .set_max_delay(Duration::from_millis(500))
            .set_connection_timeout(Some(o.connect_timeout_duration()))
            .set_response_timeout(Some(o.response_timeout_duration()));
        let open = || ConnectionManager::new_with_config(self.redis.clone(), config);
        self.shared.get_or_try_init(open).await.cloned()
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
}

/// Each node's shared multiplexed connection.
pub(crate) struct Shared;

impl Carrier for Shared {
    type Conn = ConnectionManager;
    type Link = ConnectionManager;

    async fn connect(&self, node: &Arc<Node>) -> RedisResult<ConnectionManager> {
        node.shared().await
    }

    fn link(conn: &mut ConnectionManager) -> &mut ConnectionManager {
        conn
    }

    fn recycle(&self, _: ConnectionManager) {}
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
