//! Push wait connections: one RESP3 connection per node carries every ticket wait
//! (`LOCK.WAIT`) of the client on that node, and receives their outcomes as pub/sub messages
//! on its own channel `__rlock__:<its CLIENT ID>`.
//!
//! - **Opening**: `HELLO 3` (the `redis` crate's handshake), `CLIENT ID`,
//!   `SUBSCRIBE __rlock__:<id>`.
//! - **One dispatcher** per connection (a task reading its push channel) routes each
//!   message `<wait id> <outcome>` through the connection's mailbox, and releases a grant
//!   that comes for a cancelled wait.
//! - **Liveness**: one `PING` per keepalive interval, only while the connection carries
//!   waits. A closed connection, or a `PING` without an answer in the response timeout,
//!   gives the connection up (`channel.rs`: it fails as one); the next wait opens a new one.
//!
//! Commands on it (`LOCK.WAIT`, `LOCK.CANCEL`, `PING`) are answered at once, so it has the
//! response timeout of the shared connections. Replies and messages come on one socket in
//! the server's order, and the `redis` crate hands a message to the dispatcher before it
//! answers a later command: a grant the server made before a `LOCK.CANCEL` is in the
//! dispatcher's channel by the time the cancel's reply is read.

use std::sync::{Arc, Weak};

use redis::{PushInfo, PushKind, RedisResult};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::net::channel::{whoami, Channel, Signals};
use crate::net::connect::{opened_in_time, push_link};
use crate::net::mailbox::{self, Loss};
use crate::net::node::Node;
use crate::pure::commands;
use crate::pure::error::timed_out;

/// Opens the wait connection to `node` and starts its dispatcher.
pub(crate) async fn open(node: &Arc<Node>) -> RedisResult<Arc<Channel>> {
    let opening = async {
        let (mut link, received) = push_link(node).await?;
        let me = whoami(&mut link).await?;
        link.subscribe(format!("__rlock__:{}", me.0)).await?;
        RedisResult::Ok((link, me, received))
    };
    let (link, me, received) = opened_in_time(node, opening).await?;
    let channel = Channel::new(link, node, me, false);
    let (signals, weak) = (channel.signals.clone(), Arc::downgrade(&channel));
    tokio::spawn(async move {
        dispatch(weak, received, &signals).await;
        signals.drained.notify_one();
    });
    Ok(channel)
}

/// The dispatcher of one wait connection: routes its messages, and probes it while it
/// carries waits. Ends when the connection closes, or when told to stop.
async fn dispatch(
    channel: Weak<Channel>,
    mut received: UnboundedReceiver<PushInfo>,
    signals: &Signals,
) {
    let Some(every) = channel
        .upgrade()
        .map(|c| c.node.options.keepalive_interval())
    else {
        return;
    };
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut probe = None;
    loop {
        tokio::select! {
            push = received.recv() => {
                let Some(channel) = channel.upgrade() else { return };
                match push {
                    Some(push) if push.kind != PushKind::Disconnection => route(&channel, push),
                    _ => return channel.lose(Loss::Broken),
                }
            }
            () = signals.stop.notified() => return,
            answered = async {
                match probe.as_mut() {
                    Some(probe) => probe.await,
                    None => std::future::pending().await,
                }
            }, if probe.is_some() => {
                probe = None;
                let Some(channel) = channel.upgrade() else { return };
                if let Err(err) = answered {
                    tracing::warn!(node = %channel.node.addr, %err, "a wait connection did not answer its PING");
                    channel.lose(Loss::Unresponsive);
                }
            }
            _ = tick.tick(), if probe.is_none() => {
                let Some(channel) = channel.upgrade() else { return };
                if !channel.closing() {
                    probe = ping(&channel);
                }
            }
        }
    }
}

type Probe = std::pin::Pin<Box<dyn std::future::Future<Output = RedisResult<()>> + Send>>;

/// A `PING` to send, if the connection carries waits.
fn ping(channel: &Channel) -> Option<Probe> {
    if !channel.mailbox().carries_waits() {
        return None;
    }
    let mut link = channel.link()?;
    let within = channel.node.options.response_timeout_duration();
    Some(Box::pin(async move {
        let ping = commands::ping();
        let reply = ping.query_async::<String>(&mut link);
        match tokio::time::timeout(within, reply).await {
            Ok(answer) => answer.map(drop),
            Err(_) => Err(timed_out("no reply to PING on a wait connection")),
        }
    }))
}

/// Routes one push: a grant message to its wait, or to release.
fn route(channel: &Channel, push: PushInfo) {
    if push.kind != PushKind::Message {
        return;
    }
    let payload = match push.data.get(1) {
        Some(redis::Value::BulkString(bytes)) => bytes.as_slice(),
        Some(redis::Value::SimpleString(text)) => text.as_bytes(),
        _ => return,
    };
    let Some((id, outcome)) = mailbox::parse(payload) else {
        return tracing::warn!(payload = %String::from_utf8_lossy(payload), "an unreadable grant message");
    };
    let orphan = channel.mailbox().route(id, outcome);
    if let Some(orphan) = orphan {
        channel.release_orphan(orphan);
    }
}
