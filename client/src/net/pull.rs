//! Pull wait connections, for a Redis Cluster: there a push would be a cluster-wide
//! `PUBLISH`, so the module wants `LOCK.WAIT ... TO <id>` and mails the outcomes to connection
//! `id`, which reads them with `LOCK.GRANTS`.
//!
//! Per node, two connections (besides the shared one): the sender sends `LOCK.WAIT ... TO
//! <id>` (the [`Channel`]'s link), and the receiver `<id>` runs `LOCK.GRANTS BLOCK
//! <keepalive>` in a loop in a task of its own, routing each `wait id, outcome` pair through
//! the channel's mailbox as the push dispatcher does.
//!
//! - **The receiver owns the tickets.** Its `LOCK.GRANTS` answered nil (nothing in the
//!   keepalive interval) is the liveness probe. One without an answer by the keepalive
//!   interval plus the response timeout, or a closed connection, gives the pair up, and it
//!   fails as one (`channel.rs`): the receiver is killed, what it was sent before is read,
//!   then its waits fail and queue again. A call that timed out is still read to its end, so
//!   a grant on its way is not lost.
//! - **The sender carries nothing between waits**, and a server's idle `timeout` closes it:
//!   a sender idle for a while is checked with a `PING` before it sends, and replaced by a
//!   fresh one if that fails ([`sender`]). The tickets are the receiver's, so nothing is
//!   lost. A `LOCK.WAIT` that fails once sent may have queued a ticket: that gives the pair up.
//! - `LOCK.CANCEL` goes on the node's shared connection (`channel.rs`).

use std::pin::pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ProtocolVersion, RedisResult, Value};

use crate::net::channel::{broken, whoami, Channel, Signals};
use crate::net::connect::{opened_in_time, wait_client};
use crate::net::mailbox::{Loss, Outcome};
use crate::net::node::{Node, IDLE_CHECK};
use crate::pure::commands;
use crate::pure::error::{timed_out, unreachable};

/// Opens the pull wait connections to `node` and starts their reader.
pub(crate) async fn open(node: &Arc<Node>) -> RedisResult<Arc<Channel>> {
    let o = node.options;
    // The reader's calls block: each is bounded in `read` instead.
    let reading = AsyncConnectionConfig::new()
        .set_response_timeout(None)
        .set_connection_timeout(Some(o.connect_timeout_duration()));
    let redis = wait_client(node, ProtocolVersion::RESP2)?;
    let opening = async {
        let link = open_sender(node).await?;
        let mut reader = redis
            .get_multiplexed_async_connection_with_config(&reading)
            .await
            .map_err(|err| unreachable(&node.addr, err))?;
        let receiver = whoami(&mut reader).await?;
        RedisResult::Ok((link, reader, receiver))
    };
    let (link, reader, receiver) = opened_in_time(node, opening).await?;
    let channel = Channel::new(link, node, receiver, true);
    let (signals, weak) = (channel.signals.clone(), Arc::downgrade(&channel));
    tokio::spawn(async move {
        read(weak, reader, &signals).await;
        signals.drained.notify_one();
    });
    Ok(channel)
}

/// A sending connection to `node`.
async fn open_sender(node: &Node) -> RedisResult<MultiplexedConnection> {
    let o = node.options;
    let sending = AsyncConnectionConfig::new()
        .set_response_timeout(Some(o.response_timeout_duration()))
        .set_connection_timeout(Some(o.connect_timeout_duration()));
    let redis = wait_client(node, ProtocolVersion::RESP2)?;
    redis
        .get_multiplexed_async_connection_with_config(&sending)
        .await
        .map_err(|err| unreachable(&node.addr, err))
}

/// The link to send the next `LOCK.WAIT` on: checked with a `PING` first after
/// [`IDLE_CHECK`] without sends, and replaced by a fresh one if that fails.
pub(crate) async fn sender(channel: &Channel) -> RedisResult<MultiplexedConnection> {
    let idle = channel.idle() >= IDLE_CHECK;
    let mut link = channel.link().ok_or_else(broken)?;
    if !idle {
        return Ok(link);
    }
    let within = channel.node.options.response_timeout_duration();
    let ping = commands::ping();
    let answer = tokio::time::timeout(within, ping.query_async::<String>(&mut link)).await;
    if let Ok(Ok(_)) = answer {
        return Ok(link);
    }
    tracing::debug!(node = %channel.node.addr, "an idle wait sender was closed; opening a fresh one");
    let fresh = tokio::time::timeout(within, open_sender(&channel.node))
        .await
        .map_err(|_| timed_out("no wait sender within the response timeout"))??;
    channel.replace_link(fresh.clone());
    Ok(fresh)
}

/// The reader: `LOCK.GRANTS BLOCK <keepalive>` until its connection closes, or until it is
/// told to stop (the channel was given up, or dropped).
async fn read(channel: Weak<Channel>, mut reader: MultiplexedConnection, signals: &Signals) {
    loop {
        let Some((every, within)) = channel.upgrade().and_then(|c| {
            let o = c.node.options;
            let lost = c.mailbox().is_lost();
            (!lost).then(|| (o.keepalive_interval(), o.response_timeout_duration()))
        }) else {
            return;
        };
        let ms = u64::try_from(every.as_millis()).unwrap_or(u64::MAX).max(1);
        let grants = commands::grants(ms);
        let call = grants.query_async::<Value>(&mut reader);
        let answer = tokio::select! {
            answer = bounded(call, every + within, &channel) => answer,
            () = signals.stop.notified() => return,
        };
        let Some(channel) = channel.upgrade() else {
            return;
        };
        match answer {
            Ok(Value::Array(pairs)) => route(&channel, &pairs),
            Ok(_) => {}
            Err(err) if channel.closing() => {
                tracing::debug!(node = %channel.node.addr, %err, "a closed receiver read to its end");
                return;
            }
            Err(err) => {
                tracing::warn!(node = %channel.node.addr, %err, "LOCK.GRANTS failed");
                return channel.lose(Loss::Broken);
            }
        }
    }
}

/// `call`'s answer; past `late`, the pair is given up (which kills the receiver), and the
/// call is still read, for twice `late` more: a reply on its way may carry grants, which a
/// server that stalled for about as long sends when it resumes.
async fn bounded(
    call: impl std::future::Future<Output = RedisResult<Value>>,
    late: Duration,
    channel: &Weak<Channel>,
) -> RedisResult<Value> {
    let mut call = pin!(call);
    if let Ok(answer) = tokio::time::timeout(late, &mut call).await {
        return answer;
    }
    let lingering = channel.upgrade();
    if let Some(channel) = &lingering {
        tracing::warn!(node = %channel.node.addr, "LOCK.GRANTS got no answer in time");
        channel.lose(Loss::Unresponsive);
    }
    let answer = tokio::time::timeout(2 * late, call).await;
    answer.unwrap_or_else(|_| Err(timed_out("LOCK.GRANTS got no answer")))
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
