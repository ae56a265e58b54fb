//! Pull wait connections, for a Redis Cluster: there a push would be a cluster-wide
//! `PUBLISH`, so the module wants `LOCK.WAIT ... TO <id>` and mails the outcomes to connection
//! `id`, which reads them with `LOCK.GRANTS`.
//!
//! Per node, two connections (besides the shared one): one sends `LOCK.WAIT ... TO <id>` and
//! `LOCK.CANCEL` (the [`Channel`]'s link), the other, the receiver `<id>`, runs
//! `LOCK.GRANTS BLOCK <keepalive>` in a loop in a task of its own and routes each
//! `wait id, outcome` pair through the channel's mailbox, as the push dispatcher does. A
//! `LOCK.GRANTS` answered nil (nothing in the keepalive interval) is the liveness probe: one
//! without an answer by the keepalive interval plus the response timeout, or a closed
//! connection, fails every wait of the channel at once. A grant still in the mailbox when
//! its wait is cancelled comes back as `LOCK.CANCEL`'s token, and is released.

use std::sync::{Arc, Weak};

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ProtocolVersion, RedisResult, Value};

use crate::channel::{wait_client, Channel};
use crate::commands;
use crate::error::timed_out;
use crate::mailbox::{Loss, Outcome};
use crate::node::Node;

/// Opens the pull wait connections to `node` and starts their reader.
pub(crate) async fn open(node: &Arc<Node>) -> RedisResult<Arc<Channel>> {
    let o = node.options;
    let connect = Some(o.connect_timeout_duration());
    let sending = AsyncConnectionConfig::new()
        .set_response_timeout(Some(o.response_timeout_duration()))
        .set_connection_timeout(connect);
    // The reader's calls block: each is bounded in `read` instead.
    let reading = AsyncConnectionConfig::new()
        .set_response_timeout(None)
        .set_connection_timeout(connect);
    let redis = wait_client(node, ProtocolVersion::RESP2)?;
    let opening = async {
        let link = redis
            .get_multiplexed_async_connection_with_config(&sending)
            .await?;
        let mut reader = redis
            .get_multiplexed_async_connection_with_config(&reading)
            .await?;
        let id: i64 = commands::client_id().query_async(&mut reader).await?;
        RedisResult::Ok((link, reader, id))
    };
    let (link, reader, id) = tokio::time::timeout(o.connect_timeout_duration(), opening)
        .await
        .map_err(|_| timed_out("no wait connections within the connect timeout"))??;
    let channel = Channel::new(link, node, Some(id));
    tokio::spawn(read(Arc::downgrade(&channel), reader));
    Ok(channel)
}

/// The reader: `LOCK.GRANTS BLOCK <keepalive>` until the channel is lost or dropped.
async fn read(channel: Weak<Channel>, mut reader: MultiplexedConnection) {
    loop {
        let Some((every, within)) = channel.upgrade().and_then(|c| {
            let o = c.node.options;
            c.lost()
                .is_none()
                .then(|| (o.keepalive_interval(), o.response_timeout_duration()))
        }) else {
            return;
        };
        let ms = u64::try_from(every.as_millis()).unwrap_or(u64::MAX).max(1);
        let grants = commands::grants(ms);
        let answer = tokio::time::timeout(every + within, grants.query_async::<Value>(&mut reader));
        let answer = answer.await;
        let Some(channel) = channel.upgrade() else {
            return;
        };
        match answer {
            Ok(Ok(Value::Array(pairs))) => route(&channel, &pairs),
            Ok(Ok(_)) => {}
            Ok(Err(err)) => {
                tracing::warn!(node = %channel.node.addr, %err, "LOCK.GRANTS failed");
                return channel.lose(Loss::Broken);
            }
            Err(_) => return channel.lose(Loss::Unresponsive),
        }
    }
}

/// Routes the `wait id, outcome` pairs of one `LOCK.GRANTS` reply.
fn route(channel: &Channel, pairs: &[Value]) {
    for pair in pairs.chunks(2) {
        let (Some(Value::Int(id)), Some(outcome)) = (pair.first(), pair.get(1)) else {
            return tracing::warn!(?pair, "an unreadable LOCK.GRANTS pair");
        };
        let outcome = match outcome {
            Value::Int(0) => Outcome::TimedOut,
            Value::Int(token) => Outcome::Granted(u64::try_from(*token).unwrap_or_default()),
            Value::BulkString(line) => match String::from_utf8_lossy(line).strip_prefix('-') {
                Some(line) => Outcome::Refused(line.to_owned()),
                None => return tracing::warn!(?pair, "an unreadable LOCK.GRANTS outcome"),
            },
            _ => return tracing::warn!(?pair, "an unreadable LOCK.GRANTS outcome"),
        };
        let id = u64::try_from(*id).unwrap_or_default();
        let orphan = channel.mailbox().route(id, outcome);
        if let Some(orphan) = orphan {
            channel.release_orphan(orphan);
        }
    }
}
