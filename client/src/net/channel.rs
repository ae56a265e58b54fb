//! One node's wait connection, whichever way its outcomes travel (push, `push.rs`; pull, in
//! a Redis Cluster, `pull.rs`): the link that sends `LOCK.WAIT`, the [`Mailbox`] of its
//! tickets, the id of the connection that receives their outcomes, and how it fails.
//!
//! **It fails as one.** Whatever ends it (a closed connection on either side, a command or
//! a liveness probe without an answer, a cancel that could not be sent), the same steps
//! run, once, in a task of their own ([`Channel::lose`]):
//!
//! 1. It is marked closing: the next wait opens a fresh one.
//! 2. The receiving connection is killed, `CLIENT KILL ID` on the node's shared connection
//!    (which reconnects by itself). Once that is answered, the server has dropped the
//!    connection's queued tickets and taken back the grants it had not delivered.
//! 3. The receiver reads what was delivered before the kill, up to the close (within the
//!    response timeout): those outcomes reach their waits as usual.
//! 4. Every wait still open ends with a [`Loss`]: [`Loss::Broken`] if the kill was answered
//!    (the acquisition then checks for a grant, on a server whose state is settled, and
//!    queues again on a fresh connection), [`Loss::Unresponsive`] if it was not (the
//!    acquisition fails; the receiver reads on for a while, and a grant the server had sent
//!    for such a wait before it stopped answering is released).
//!
//! `LOCK.CANCEL` of a pulled wait and the release of a grant that came for a cancelled wait
//! go on the node's shared connection, never on a sender that may have died while idle.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis::{RedisError, RedisResult};
use tokio::sync::Notify;

use crate::net::mailbox::{Loss, Mailbox, Orphan};
use crate::net::node::Node;
use crate::pure::commands;
use crate::pure::error::timed_out;
use crate::pure::kind::Kind;

/// One node's wait connection.
pub(crate) struct Channel {
    /// The connection that sends; `None` once the channel is closing.
    link: Mutex<Option<MultiplexedConnection>>,
    /// When a command last went out on the link.
    sent: Mutex<Instant>,
    mailbox: Mutex<Mailbox>,
    pub(crate) node: Arc<Node>,
    /// The connection that receives the outcomes: its `CLIENT ID`, and its address as the
    /// server sees it, when the server tells it (see [`whoami`]).
    id: i64,
    addr: Option<String>,
    /// For a pull connection, `Some(id)` (`LOCK.WAIT ... TO id`); `None` for push.
    pub(crate) receiver: Option<i64>,
    /// Why it is closing, once it is.
    closing: Mutex<Option<Loss>>,
    pub(crate) signals: Arc<Signals>,
}

/// Between a channel and the task that reads its outcomes.
#[derive(Default)]
pub(crate) struct Signals {
    /// The reader is to stop at once, dropping its connection.
    pub(crate) stop: Notify,
    /// The reader has stopped.
    pub(crate) drained: Notify,
    /// The waits have ended (step 4).
    closed: Notify,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Channel {
    /// A wait connection to `node` that sends on `link`, whose outcomes go to connection
    /// `receiver` (see [`whoami`]), pulled if `pull`.
    pub(crate) fn new(
        link: MultiplexedConnection,
        node: &Arc<Node>,
        (id, addr): (i64, Option<String>),
        pull: bool,
    ) -> Arc<Channel> {
        tracing::debug!(node = %node.addr, id, ?addr, pull, "wait connection opened");
        Arc::new(Channel {
            link: Mutex::new(Some(link)),
            sent: Mutex::new(Instant::now()),
            mailbox: Mutex::default(),
            node: node.clone(),
            id,
            addr,
            receiver: pull.then_some(id),
            closing: Mutex::new(None),
            signals: Arc::default(),
        })
    }

    /// A handle to send on, unless the connection is closing; counts as a use.
    pub(crate) fn link(&self) -> Option<MultiplexedConnection> {
        let link = locked(&self.link).clone();
        *locked(&self.sent) = Instant::now();
        link
    }

    /// How long since a command last went out on the link.
    pub(crate) fn idle(&self) -> Duration {
        locked(&self.sent).elapsed()
    }

    /// Sends from now on with `link` (a fresh sender), unless the channel is closing.
    pub(crate) fn replace_link(&self, link: MultiplexedConnection) {
        let mut current = locked(&self.link);
        if current.is_some() {
            *current = Some(link);
            *locked(&self.sent) = Instant::now();
        }
    }

    /// The connection's mailbox, locked.
    pub(crate) fn mailbox(&self) -> MutexGuard<'_, Mailbox> {
        locked(&self.mailbox)
    }

    /// Whether the connection is closing or closed: new waits go elsewhere.
    pub(crate) fn closing(&self) -> bool {
        locked(&self.closing).is_some()
    }

    /// Gives the connection up for `loss`, once: see the module docs.
    pub(crate) fn lose(self: &Arc<Self>, loss: Loss) {
        if locked(&self.closing).replace(loss).is_some() {
            return;
        }
        tracing::warn!(node = %self.node.addr, ?loss, "wait connection lost; closing it and failing its waits");
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn(self.clone().close(loss))),
            Err(_) => self.closed(loss, true),
        }
    }

    /// Steps 2 to 4 of the module docs.
    async fn close(self: Arc<Self>, loss: Loss) {
        let within = self.node.options.response_timeout_duration();
        let kill = match &self.addr {
            Some(addr) => commands::client_kill_id_at(self.id, addr),
            None => commands::client_kill_id(self.id),
        };
        let killed = tokio::time::timeout(within, self.node.query_fresh::<i64>(&kill)).await;
        match killed.unwrap_or_else(|_| Err(timed_out("no answer to CLIENT KILL"))) {
            Ok(_) => {
                drop(tokio::time::timeout(within, self.signals.drained.notified()).await);
                self.closed(Loss::Broken, true);
            }
            Err(err) => {
                tracing::warn!(node = %self.node.addr, %err, "could not kill a lost wait connection");
                let loss = if err.is_timeout() {
                    Loss::Unresponsive
                } else {
                    loss
                };
                self.closed(loss, false);
            }
        }
    }

    /// Drops the link and ends every wait with `loss`; stops the reader if `stop` (if not,
    /// it reads on for a while, `pull.rs`: a grant the server had sent comes for a wait
    /// given up, and is released).
    fn closed(&self, loss: Loss, stop: bool) {
        if stop {
            self.signals.stop.notify_one();
        }
        locked(&self.link).take();
        self.mailbox().fail(loss);
        self.signals.closed.notify_waiters();
    }

    /// Once the connection is closing: waits until its waits have ended (within the kill's
    /// and the read's bounds, twice the response timeout, and a response timeout more).
    pub(crate) async fn settled(&self) {
        let within = 3 * self.node.options.response_timeout_duration();
        let ended = async {
            loop {
                let notified = self.signals.closed.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.mailbox().is_lost() || !self.closing() {
                    return;
                }
                notified.await;
            }
        };
        drop(tokio::time::timeout(within, ended).await);
    }

    /// Releases a grant made for a wait that was cancelled, in the background.
    pub(crate) fn release_orphan(&self, orphan: Orphan) {
        if orphan.kind == Kind::Latch {
            return; // a latch's outcome holds nothing
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return tracing::warn!(key = %orphan.key, "a grant for a cancelled wait outside a runtime; it ends with its lease");
        };
        let node = self.node.clone();
        runtime.spawn(async move {
            let (key, owner, token) = (&orphan.key, &orphan.owner, orphan.token);
            let cmd = commands::release(orphan.kind, key, owner, token);
            match node.query_fresh::<u64>(&cmd).await {
                Ok(_) => {
                    tracing::debug!(key, owner, token, "released a grant for a cancelled wait")
                }
                Err(err) => {
                    tracing::warn!(key, owner, %err, "could not release a grant for a cancelled wait")
                }
            }
        });
    }

    /// `LOCK.CANCEL key id`: on the link for push (a grant pushed before the cancel then
    /// arrives before its reply), on the node's shared connection for pull (a wait id is
    /// the node's: a redirection is not followed, but read as nil).
    pub(crate) async fn cancel(&self, key: &str, id: u64) -> RedisResult<Option<u64>> {
        let cmd = commands::cancel(key, id);
        if self.receiver.is_some() {
            return match self.node.query_fresh(&cmd).await {
                // The slot moved: the node refused the ticket, and the refusal is on its way.
                Err(err) if err.redirect_node().is_some() => Ok(None),
                answer => answer,
            };
        }
        let mut link = self.link().ok_or_else(broken)?;
        cmd.query_async(&mut link).await
    }

    /// Sends `LOCK.CANCEL key id` for a wait given up without awaiting the answer (see
    /// `ticket.rs`): its answer settles the id, or hands over a grant to release. A cancel
    /// that fails closes the connection, which ends the wait on the server. `wait` is the
    /// wait's key, owner and kind; a grant's token is set from the answer.
    pub(crate) fn cancel_in_background(self: &Arc<Self>, id: u64, mut wait: Orphan) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let channel = self.clone();
        runtime.spawn(async move {
            let key = wait.key.clone();
            match channel.cancel(&key, id).await {
                Ok(Some(0)) => channel.mailbox().settled(id),
                Ok(Some(token)) => {
                    channel.mailbox().settled(id);
                    wait.token = token;
                    channel.release_orphan(wait);
                }
                // Nil: the outcome went out; the reader releases a grant.
                Ok(None) => {}
                Err(err) => {
                    tracing::warn!(key, %err, "LOCK.CANCEL failed; closing the wait connection");
                    channel.lose(Loss::Broken);
                }
            }
        });
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        // Nobody waits on it any more: its reader ends, and the server drops the connection.
        self.signals.stop.notify_one();
    }
}

/// The `CLIENT ID` of `conn`, and its address as the server sees it (`CLIENT INFO`, `None`
/// if the server does not tell it): the kill of a lost wait connection names both.
pub(crate) async fn whoami(conn: &mut MultiplexedConnection) -> RedisResult<(i64, Option<String>)> {
    let id: i64 = commands::client_id().query_async(conn).await?;
    let info = commands::client_info().query_async::<String>(conn).await;
    let addr = info.ok().and_then(|info| {
        let field = info
            .split_whitespace()
            .find_map(|f| f.strip_prefix("addr="));
        field.map(str::to_owned)
    });
    Ok((id, addr))
}

/// The error of a send on a wait connection that was given up.
pub(crate) fn broken() -> RedisError {
    RedisError::from(std::io::Error::new(
        std::io::ErrorKind::ConnectionReset,
        "the wait connection was given up",
    ))
}
