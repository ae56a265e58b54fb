//! One node's wait connection: a RESP3 connection that carries every ticket wait
//! (`LOCK.WAIT`) of the client on that node, and receives their outcomes as pub/sub messages
//! on its own channel `__rlock__:<its CLIENT ID>`.
//!
//! - **Opening**: `HELLO 3` (the `redis` crate's handshake), `CLIENT ID`,
//!   `SUBSCRIBE __rlock__:<id>`.
//! - **One dispatcher** per connection (a task reading its push channel) routes each
//!   message `<wait id> <outcome>` through the connection's [`Mailbox`], and releases a
//!   grant that comes for a cancelled wait (`LOCK.RELEASE key owner TOKEN t`, on this
//!   connection: the grant was made on this node).
//! - **Liveness**: one `PING` per keepalive interval, only while the connection carries
//!   waits. A closed connection, or a `PING` without an answer in the response timeout,
//!   fails every wait it carries at once ([`Loss`]), and the connection is dropped (the
//!   server drops its tickets); the next wait opens a new one.
//!
//! Commands on it (`LOCK.WAIT`, `LOCK.CANCEL`, `PING`) are answered at once, so it has the
//! response timeout of the shared connections. Replies and messages come on one socket in
//! the server's order, and the `redis` crate hands a message to the dispatcher before it
//! answers a later command: a grant the server made before a `LOCK.CANCEL` is in the
//! dispatcher's channel by the time the cancel's reply is read.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::io::tcp::socket2::TcpKeepalive;
use redis::{AsyncConnectionConfig, ProtocolVersion, PushInfo, PushKind, RedisResult};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use crate::commands;
use crate::error::timed_out;
use crate::mailbox::{self, Loss, Mailbox, Orphan};
use crate::node::Node;

/// One node's wait connection.
pub(crate) struct Channel {
    /// `None` once given up: dropping the last handle closes the socket.
    link: Mutex<Option<MultiplexedConnection>>,
    mailbox: Mutex<Mailbox>,
    pub(crate) node: Arc<Node>,
    /// For a pull connection (`pull.rs`), the id of the connection whose mailbox receives
    /// the outcomes (`LOCK.WAIT ... TO id`); `None` for a push connection.
    pub(crate) receiver: Option<i64>,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Channel {
    /// A handle to send on, unless the connection was given up.
    pub(crate) fn link(&self) -> Option<MultiplexedConnection> {
        locked(&self.link).clone()
    }

    /// The connection's mailbox, locked.
    pub(crate) fn mailbox(&self) -> MutexGuard<'_, Mailbox> {
        locked(&self.mailbox)
    }

    /// Whether the connection was given up.
    pub(crate) fn lost(&self) -> Option<Loss> {
        self.mailbox().lost()
    }

    /// Gives the connection up: every wait on it ends with `loss`, and it is closed.
    pub(crate) fn lose(&self, loss: Loss) {
        if self.lost().is_none() {
            tracing::warn!(node = %self.node.addr, ?loss, "wait connection lost; failing its waits");
        }
        self.mailbox().fail(loss);
        locked(&self.link).take();
    }

    /// Releases a grant made for a wait that was cancelled, in the background.
    pub(crate) fn release_orphan(&self, orphan: Orphan) {
        let Some(mut link) = self.link() else {
            return tracing::warn!(key = %orphan.key, "a grant for a cancelled wait on a lost connection; it ends with its lease");
        };
        tokio::spawn(async move {
            let Orphan { key, owner, token } = orphan;
            let cmd = commands::release(&key, &owner, token);
            match cmd.query_async::<u64>(&mut link).await {
                Ok(_) => {
                    tracing::debug!(key, owner, token, "released a grant for a cancelled wait")
                }
                Err(err) => {
                    tracing::warn!(key, owner, %err, "could not release a grant for a cancelled wait")
                }
            }
        });
    }
}

impl Channel {
    /// Sends `LOCK.CANCEL key id` for a wait given up without awaiting the answer (see
    /// `ticket.rs`): its answer settles the id, or hands over a grant to release.
    pub(crate) fn cancel_in_background(self: &Arc<Self>, id: u64, key: &str, owner: &str) {
        let (Some(mut link), Ok(runtime)) = (self.link(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let (channel, key, owner) = (self.clone(), key.to_owned(), owner.to_owned());
        runtime.spawn(async move {
            let cmd = commands::cancel(&key, id);
            match cmd.query_async::<Option<u64>>(&mut link).await {
                Ok(Some(0)) => channel.mailbox().settled(id),
                Ok(Some(token)) => {
                    channel.mailbox().settled(id);
                    channel.release_orphan(Orphan { key, owner, token });
                }
                // Nil: the outcome went out; the dispatcher releases a grant.
                Ok(None) => {}
                Err(err) => tracing::warn!(key, %err, "LOCK.CANCEL failed"),
            }
        });
    }
}

/// Opens the wait connection to `node` and starts its dispatcher.
pub(crate) async fn open(node: &Arc<Node>) -> RedisResult<Arc<Channel>> {
    let o = node.options;
    let (pushes, received) = unbounded_channel();
    let config = AsyncConnectionConfig::new()
        .set_response_timeout(Some(o.response_timeout_duration()))
        .set_connection_timeout(Some(o.connect_timeout_duration()))
        .set_push_sender(pushes);
    let redis = wait_client(node, ProtocolVersion::RESP3)?;
    let opening = async {
        let mut link = redis
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        let id: i64 = commands::client_id().query_async(&mut link).await?;
        link.subscribe(format!("__rlock__:{id}")).await?;
        RedisResult::Ok(link)
    };
    let link = tokio::time::timeout(o.connect_timeout_duration(), opening)
        .await
        .map_err(|_| timed_out("no wait connection within the connect timeout"))??;
    let channel = Channel::new(link, node, None);
    tokio::spawn(dispatch(Arc::downgrade(&channel), received));
    Ok(channel)
}

/// A client for `node`'s wait connections: its settings with `protocol`, `TCP_NODELAY` and
/// TCP keepalive.
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

impl Channel {
    /// A wait connection to `node` that sends on `link`.
    pub(crate) fn new(
        link: MultiplexedConnection,
        node: &Arc<Node>,
        receiver: Option<i64>,
    ) -> Arc<Channel> {
        Arc::new(Channel {
            link: Mutex::new(Some(link)),
            mailbox: Mutex::default(),
            node: node.clone(),
            receiver,
        })
    }
}

/// The dispatcher of one wait connection: routes its messages, and probes it while it
/// carries waits. Ends when the connection is lost or the client dropped it.
async fn dispatch(channel: Weak<Channel>, mut received: UnboundedReceiver<PushInfo>) {
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
                    return channel.lose(Loss::Unresponsive);
                }
            }
            _ = tick.tick(), if probe.is_none() => {
                let Some(channel) = channel.upgrade() else { return };
                if channel.lost().is_some() {
                    return;
                }
                probe = channel.ping();
            }
        }
    }
}

type Probe = std::pin::Pin<Box<dyn std::future::Future<Output = RedisResult<()>> + Send>>;

impl Channel {
    /// A `PING` to send, if the connection carries waits.
    fn ping(&self) -> Option<Probe> {
        if !self.mailbox().carries_waits() {
            return None;
        }
        let mut link = self.link()?;
        let within = self.node.options.response_timeout_duration();
        Some(Box::pin(async move {
            let ping = commands::ping();
            let reply = ping.query_async::<String>(&mut link);
            match tokio::time::timeout(within, reply).await {
                Ok(answer) => answer.map(drop),
                Err(_) => Err(timed_out("no reply to PING on a wait connection")),
            }
        }))
    }
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
