//! Opening wait connections: a client for a node's wait connections (`TCP_NODELAY`, TCP
//! keepalive), a RESP3 one with its pushes, and the connect timeout around an opening.

use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::io::tcp::socket2::TcpKeepalive;
use redis::{AsyncConnectionConfig, ProtocolVersion, PushInfo, RedisResult};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use crate::net::node::Node;
use crate::pure::error::{timed_out, unreachable};

/// Opens wait connections to `node` with `opening`, within the node's connect timeout; an
/// expiry names the node.
pub(crate) async fn opened_in_time<T>(
    node: &Node,
    opening: impl std::future::Future<Output = RedisResult<T>>,
) -> RedisResult<T> {
    let limit = node.options.connect_timeout_duration();
    tokio::time::timeout(limit, opening).await.map_err(|_| {
        unreachable(
            &node.addr,
            timed_out("no wait connection within the connect timeout"),
        )
    })?
}

/// A RESP3 wait connection to `node` (not bounded in time: see [`opened_in_time`]), and
/// the receiver of its pushes (pub/sub messages, its disconnection).
pub(crate) async fn push_link(
    node: &Node,
) -> RedisResult<(MultiplexedConnection, UnboundedReceiver<PushInfo>)> {
    let o = node.options;
    let (pushes, received) = unbounded_channel();
    let config = AsyncConnectionConfig::new()
        .set_response_timeout(Some(o.response_timeout_duration()))
        .set_connection_timeout(Some(o.connect_timeout_duration()))
        .set_push_sender(pushes);
    let redis = wait_client(node, ProtocolVersion::RESP3)?;
    let link = redis.get_multiplexed_async_connection_with_config(&config);
    let link = link.await.map_err(|err| unreachable(&node.addr, err))?;
    Ok((link, received))
}

/// A client for `node`'s wait connections: `protocol`, `TCP_NODELAY`, TCP keepalive.
pub(crate) fn wait_client(node: &Node, protocol: ProtocolVersion) -> RedisResult<redis::Client> {
    let info = node.redis.get_connection_info().clone();
    let settings = info.redis_settings().clone().set_protocol(protocol);
    // The kernel counts keepalive times in whole seconds, 1 at least.
    let every = node
        .options
        .keepalive_interval()
        .max(Duration::from_secs(1));
    let tcp = info.tcp_settings().clone().set_nodelay(true);
    let tcp = tcp.set_keepalive(TcpKeepalive::new().with_time(every).with_interval(every));
    redis::Client::open(info.set_redis_settings(settings).set_tcp_settings(tcp))
}
