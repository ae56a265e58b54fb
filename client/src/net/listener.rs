//! The listening connections of a client: per node, one RESP3 connection registered with
//! `LOCK.LISTEN <prefix>` for each owner prefix the client holds with, and subscribed to
//! the channel each names, on which the server announces every holding of those owners
//! that it ended without being asked (`pure/ended.rs`). Announcements of all the client's
//! holdings on the node come on the one connection.
//!
//! - **Opening** ([`Listeners::ensure`]): before the first acquisition on a node, and before
//!   each renewal round sent to it while it has none, bounded by the connect timeout. The
//!   server tracks a holding only if it was made or renewed after the registration.
//! - **A server without it** (an older module without `LOCK.LISTEN`, no RESP3, an ACL that
//!   refuses it): logged once, not listened to, tried again after [`RETRY_LATER`]. Any
//!   other failure to open (the node is down) is tried again at the next acquisition or
//!   renewal round (a second later at the earliest if it timed out). The watchdog finds what was not announced, as without listening.
//! - **One dispatcher** per connection hands each announcement on ([`Heard::Ended`]), and
//!   sends a `PING` every keepalive interval. A closed connection, or a `PING` without an
//!   answer in the response timeout, is reported ([`Heard::Broken`]): the holdings are then
//!   renewed at once (which finds a holding that a new master lacks), and the next
//!   [`Listeners::ensure`] opens a new connection and registers again ([`Heard::Renew`]).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{PushInfo, PushKind, RedisError, RedisResult};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::net::connect::{opened_in_time, push_link};
use crate::net::node::Node;
use crate::pure::commands;
use crate::pure::ended::Ended;
use crate::pure::error::timed_out;

/// How long a node that cannot listen (see the module docs) is not asked again.
pub(crate) const RETRY_LATER: Duration = Duration::from_secs(30);

/// What the listening connections tell the holdings.
pub(crate) enum Heard {
    /// The server ended a holding.
    Ended(Ended),
    /// A connection was registered again, or for another prefix, on a node where holdings
    /// may be: renew them now, so that the server tracks them.
    Renew,
    /// The listening connection to the node broke.
    Broken(Arc<Node>),
}

/// One node's listening connection.
struct Listening {
    link: MultiplexedConnection,
    /// The prefixes registered on it.
    prefixes: Mutex<HashSet<String>>,
    broken: Arc<AtomicBool>,
    stop: Arc<Notify>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.stop.notify_one();
    }
}

/// One node's listening state.
#[derive(Default)]
struct State {
    link: Option<Arc<Listening>>,
    /// Whether a connection was open before (a new one registers again).
    opened_before: bool,
    /// Until when the node is not asked again (it cannot listen).
    refused_until: Option<Instant>,
}

type Slot = Arc<tokio::sync::Mutex<State>>;

/// The listening connections of one client, one per node.
pub(crate) struct Listeners {
    prefixes: Mutex<Vec<String>>,
    nodes: Mutex<HashMap<Arc<str>, Slot>>,
    heard: UnboundedSender<Heard>,
    /// Whether a node that cannot listen was logged at warn level already.
    warned: AtomicBool,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Listeners {
    /// Listeners for the owners of `prefix`; what they hear comes on the receiver.
    pub(crate) fn new(prefix: &str) -> (Arc<Listeners>, UnboundedReceiver<Heard>) {
        let (heard, receiver) = unbounded_channel();
        let listeners = Listeners {
            prefixes: Mutex::new(vec![prefix.to_owned()]),
            nodes: Mutex::default(),
            heard,
            warned: AtomicBool::new(false),
        };
        (Arc::new(listeners), receiver)
    }

    /// Listens for owners of `prefix` too, from the next [`Listeners::ensure`] on; true if
    /// it is new.
    pub(crate) fn add_prefix(&self, prefix: &str) -> bool {
        let mut prefixes = locked(&self.prefixes);
        let new = !prefixes.iter().any(|p| p == prefix);
        if new {
            prefixes.push(prefix.to_owned());
        }
        new
    }

    /// Makes sure `node` has a listening connection registered for every prefix, opening or
    /// registering now if needed (within the connect timeout). Never fails: a node that
    /// cannot listen is logged (see the module docs).
    pub(crate) async fn ensure(&self, node: &Arc<Node>) {
        if !node.options.listens_for_losses() {
            return;
        }
        let slot = locked(&self.nodes)
            .entry(node.addr.clone())
            .or_default()
            .clone();
        let mut state = slot.lock().await;
        if state
            .refused_until
            .is_some_and(|until| Instant::now() < until)
        {
            return;
        }
        state.refused_until = None;
        let open = state
            .link
            .as_ref()
            .filter(|l| !l.broken.load(Ordering::Acquire));
        // The common case: open, and registered for every prefix (a subset of them).
        let wanted = locked(&self.prefixes).len();
        if open.is_some_and(|l| locked(&l.prefixes).len() >= wanted) {
            return;
        }
        let prefixes = locked(&self.prefixes).clone();
        if let Some(listening) = open.cloned() {
            let missing: Vec<String> = {
                let known = locked(&listening.prefixes);
                let new = prefixes.into_iter().filter(|p| !known.contains(p));
                new.collect()
            };
            if missing.is_empty() {
                return;
            }
            let mut link = listening.link.clone();
            match opened_in_time(node, register(&mut link, &missing)).await {
                Ok(()) => {
                    locked(&listening.prefixes).extend(missing);
                    drop(self.heard.send(Heard::Renew));
                }
                Err(err) => self.failed(node, &mut state, &err),
            }
            return;
        }
        state.link = None;
        match self.open(node, &prefixes).await {
            Ok(listening) => {
                tracing::debug!(node = %node.addr, "listening for ended holdings");
                state.link = Some(listening);
                if std::mem::replace(&mut state.opened_before, true) {
                    drop(self.heard.send(Heard::Renew));
                }
            }
            Err(err) => self.failed(node, &mut state, &err),
        }
    }

    /// Has every holding renewed now (after a registration made elsewhere).
    pub(crate) fn renew(&self) {
        drop(self.heard.send(Heard::Renew));
    }

    /// After `err` while opening or registering on `node`.
    fn failed(&self, node: &Node, state: &mut State, err: &RedisError) {
        if !cannot_listen(err) {
            // A node that does not answer is not waited for again before a second passes.
            if err.is_timeout() {
                state.refused_until = Some(Instant::now() + Duration::from_secs(1));
            }
            return tracing::debug!(node = %node.addr, %err, "no listening connection; trying again later");
        }
        state.refused_until = Some(Instant::now() + RETRY_LATER);
        if self.warned.swap(true, Ordering::Relaxed) {
            tracing::debug!(node = %node.addr, %err, "the server cannot announce ended holdings");
        } else {
            tracing::warn!(node = %node.addr, %err, "the server cannot announce ended holdings (an older rlock module?); losses are found by renewals");
        }
    }

    /// A new listening connection to `node`, registered for `prefixes`, and its dispatcher.
    async fn open(&self, node: &Arc<Node>, prefixes: &[String]) -> RedisResult<Arc<Listening>> {
        let opening = async {
            let (mut link, received) = push_link(node).await?;
            register(&mut link, prefixes).await?;
            RedisResult::Ok((link, received))
        };
        let (link, received) = opened_in_time(node, opening).await?;
        let listening = Arc::new(Listening {
            link,
            prefixes: Mutex::new(prefixes.iter().cloned().collect()),
            broken: Arc::default(),
            stop: Arc::default(),
        });
        let watch = (listening.broken.clone(), listening.stop.clone());
        let (weak, heard) = (Arc::downgrade(&listening), self.heard.clone());
        tokio::spawn(dispatch(weak, watch, received, heard, node.clone()));
        Ok(listening)
    }
}

/// `LOCK.LISTEN` each of `prefixes` on `link`, and `SUBSCRIBE` the channel each names.
async fn register(link: &mut MultiplexedConnection, prefixes: &[String]) -> RedisResult<()> {
    for prefix in prefixes {
        let channel: String = commands::listen(prefix).query_async(link).await?;
        link.subscribe(channel).await?;
    }
    Ok(())
}

/// Whether `err` says that the node cannot listen for a while: it does not know
/// `LOCK.LISTEN` (or `HELLO`), speaks no RESP3, or the client's user may not listen.
fn cannot_listen(err: &RedisError) -> bool {
    let detail = err.detail().unwrap_or_default().to_ascii_lowercase();
    let unknown = err.code() == Some("ERR") && detail.starts_with("unknown command");
    matches!(err.code(), Some("NOPROTO" | "NOPERM")) || unknown
}

/// The dispatcher of one listening connection (see the module docs). Ends when the
/// connection closes, or when its [`Listening`] is dropped.
async fn dispatch(
    listening: Weak<Listening>,
    (broken, stop): (Arc<AtomicBool>, Arc<Notify>),
    mut received: UnboundedReceiver<PushInfo>,
    heard: UnboundedSender<Heard>,
    node: Arc<Node>,
) {
    let every = node.options.keepalive_interval();
    let mut tick = tokio::time::interval_at(Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let why = loop {
        tokio::select! {
            push = received.recv() => match push {
                Some(push) if push.kind == PushKind::Message => hand_on(&push, &heard),
                Some(push) if push.kind != PushKind::Disconnection => {}
                _ => break "the connection closed".to_owned(),
            },
            () = stop.notified() => return,
            _ = tick.tick() => {
                let Some(link) = listening.upgrade().map(|l| l.link.clone()) else { return };
                if let Err(err) = ping(link, node.options.response_timeout_duration()).await {
                    break err.to_string();
                }
            }
        }
    };
    broken.store(true, Ordering::Release);
    if listening.upgrade().is_none() {
        return; // given up by the client: nothing to report
    }
    tracing::warn!(node = %node.addr, why, "the listening connection broke; renewing the holdings at once");
    drop(heard.send(Heard::Broken(node)));
}

/// A `PING` on `link`, answered within `within`.
async fn ping(mut link: MultiplexedConnection, within: Duration) -> RedisResult<()> {
    let ping = commands::ping();
    let reply = ping.query_async::<String>(&mut link);
    match tokio::time::timeout(within, reply).await {
        Ok(answer) => answer.map(drop),
        Err(_) => Err(timed_out("no reply to PING on a listening connection")),
    }
}

/// Hands on one pub/sub message, if it is an announcement.
fn hand_on(push: &PushInfo, heard: &UnboundedSender<Heard>) {
    let payload = match push.data.get(1) {
        Some(redis::Value::BulkString(bytes)) => bytes.as_slice(),
        Some(redis::Value::SimpleString(text)) => text.as_bytes(),
        _ => return,
    };
    match Ended::parse(payload) {
        Some(ended) => drop(heard.send(Heard::Ended(ended))),
        None => {
            tracing::debug!(payload = %String::from_utf8_lossy(payload), "an unreadable announcement")
        }
    }
}
