//! A wait as a ticket: `LOCK.WAIT` (`RWLOCK.WAIT` for a read or a write hold, whose outcome
//! comes the same way) on the node's wait connection (`tickets.rs`), then the
//! outcome the server pushes for its wait id, read from a oneshot. No connection and no
//! task of its own: the acquisition awaits the oneshot.
//!
//! How each race ends (see also `mailbox.rs`):
//!
//! - **The caller goes away while `LOCK.WAIT` is on its way.** The acquisition runs in a
//!   task of its own (`cancel_safe.rs`), which reads the reply whatever the caller does: a
//!   `held` reply becomes a guard that is released, a `queued` one is cancelled.
//! - **Cancel** (the caller went away, or no outcome by the wait grace past the deadline):
//!   `LOCK.CANCEL key id`, the wait still claimed: on the push connection itself, or on the
//!   node's shared connection for a pulled wait (`channel.rs`). `0`: it was still queued,
//!   nothing will come. A token: the grant is ours, released. Nil: the outcome went out
//!   before the cancel, so it is in the dispatcher's hands already (push: one socket, in
//!   order) or about to be (pull): it is read from the oneshot, and a grant released. A
//!   cancel without an answer gives the wait connection up, which ends the ticket on the
//!   server; the outcome then comes as the loss, or as a grant read before it, released.
//!   The acquisition keeps its turn (`turns.rs`) meanwhile, so no other acquisition of the
//!   owner counts that hold.
//! - **A ticket dropped without that** (its task aborted, no answer to the cancel): its
//!   `Drop` forsakes the wait id in the mailbox under its lock. If no outcome had reached
//!   it, the id is remembered as cancelled, a `LOCK.CANCEL` goes in the background, and a
//!   grant message that comes for it is released by the dispatcher; if one had, it is read
//!   from the oneshot and a grant released.
//! - **Timeouts**: the server sends `<id> 0` at the `WAIT` limit; should it stay silent,
//!   the client's wait grace ends the wait as before ([`Error::Unresponsive`]).
//! - **A lost connection** (`channel.rs`: killed on the server and read to its end first)
//!   fails the wait: closed, it is a connection error (the acquisition checks for a grant
//!   and queues again, `recover.rs`); unresponsive, it is [`Error::Unresponsive`]. A pull
//!   connection whose receiver is gone (`ERR no client`) is given up the same way.

use std::sync::Arc;
use std::time::Duration;

use redis::{RedisError, Value};
use tokio::sync::oneshot;
use tokio::time::{sleep_until, timeout};

use crate::acquire::wait::Wait;
use crate::net::channel::Channel;
use crate::net::mailbox::{
    no_receiver, read_reply, server_error, unsubscribed, Claim, Loss, Orphan, Outcome,
};
use crate::net::router::Sent;
use crate::net::tickets::Tickets;
use crate::pure::commands;
use crate::pure::error::{timed_out, Error, Result};

/// How a ticket wait ended.
pub(crate) enum Waited {
    /// The lock, with this token.
    Granted(u64),
    /// Without the lock: its limit ran out, or the caller went away.
    Ended,
    /// The node takes blocking waits only: wait with `LOCK.ACQUIRE ... WAIT`.
    Unsupported,
    /// The node wants its waits pulled: ask again.
    Pulled,
}

/// A claimed wait id on a wait connection; see the module docs for its `Drop`.
struct Ticket {
    channel: Arc<Channel>,
    id: u64,
    /// The wait's key, owner and kind: a grant to release (its token set then).
    wait: Orphan,
    receiver: oneshot::Receiver<Outcome>,
    settled: bool,
}

// A ticket's wait is the acquisition's `Wait`: the same key, owner, lease and deadline.
impl Wait<'_> {
    /// Waits for the lock with a ticket; see the module docs. A node that turns out to
    /// want `TO` (a cluster node) is asked again with its waits pulled (`pull.rs`).
    pub(crate) async fn ticket<T>(&self, caller: &mut oneshot::Sender<T>) -> Result<Waited> {
        match self.ticket_once(caller).await? {
            Waited::Pulled => self.ticket_once(caller).await,
            waited => Ok(waited),
        }
    }

    async fn ticket_once<T>(&self, caller: &mut oneshot::Sender<T>) -> Result<Waited> {
        let never = std::future::pending::<std::convert::Infallible>();
        let make = || {
            let wait_ms = self.wait_ms();
            commands::wait_ticket(self.kind, self.key, self.owner, self.lease_ms, wait_ms)
        };
        let (reply, carried) = match self.core.send_ticket(self.key, make, never).await {
            Err(err) if Tickets::unsupported(&err) => return Ok(Waited::Unsupported),
            Err(err) => return Err(Error::from_command(err, self.key, self.owner)),
            Ok(Sent::Answered(reply, carried)) => (reply, carried),
            Ok(Sent::Interrupted(never, _)) => match never {},
        };
        let reply: Value = match reply {
            Err(err) if Tickets::unsupported(&err) => {
                self.core
                    .tickets()
                    .take_blocking_only(&carried.channel.node);
                return Ok(Waited::Unsupported);
            }
            Err(err) if Tickets::needs_to(&err) && carried.channel.receiver.is_none() => {
                self.core.tickets().take_pull(&carried.channel.node);
                return Ok(Waited::Pulled);
            }
            Err(err) if unsubscribed(&err) || no_receiver(&err) => {
                // Something left the channel (`RESET`, `UNSUBSCRIBE`), or the receiver of a
                // pull connection is gone: a fresh connection.
                carried.channel.lose(Loss::Broken);
                return self.ended(Outcome::Lost(Loss::Broken));
            }
            Err(err) if err.is_timeout() || err.is_io_error() => {
                // The ticket may be queued: its connection is given up (`Tickets::failed`),
                // and the error stands once the server has dropped the connection's tickets,
                // so that the check that follows (`recover.rs`) sees the lock as it stays.
                carried.channel.settled().await;
                return Err(Error::from_command(err, self.key, self.owner));
            }
            Err(err) => return Err(Error::from_command(err, self.key, self.owner)),
            Ok(reply) => reply,
        };
        match read_reply(&reply) {
            // `done 1`: a latch already open.
            Some(("held" | "done", token)) => Ok(Waited::Granted(token)),
            Some(("queued", id)) => self.await_ticket(carried.channel, id, caller).await,
            _ => Err(Error::internal(&format!(
                "unexpected LOCK.WAIT reply {reply:?}"
            ))),
        }
    }

    /// Awaits the outcome of wait `id`, or cancels it.
    async fn await_ticket<T>(
        &self,
        channel: Arc<Channel>,
        id: u64,
        caller: &mut oneshot::Sender<T>,
    ) -> Result<Waited> {
        let receiver = match channel.mailbox().claim(id, self.key, self.owner, self.kind) {
            Claim::Ended(outcome) => return self.ended(outcome),
            Claim::Waiting(receiver) => receiver,
        };
        let (key, owner, kind) = (self.key.to_owned(), self.owner.to_owned(), self.kind);
        let wait = Orphan {
            key,
            owner,
            kind,
            token: 0,
        };
        let mut ticket = Ticket {
            channel,
            id,
            wait,
            receiver,
            settled: false,
        };
        let grace = self.core.options().wait_grace_duration();
        let overdue = self.deadline.map(|d| d + grace);
        let late = async {
            match overdue {
                Some(at) => sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            outcome = &mut ticket.receiver => {
                ticket.settled = true;
                let outcome = outcome.map_err(|_| Error::internal("a wait's mailbox went away"))?;
                self.ended(outcome)
            }
            () = caller.closed() => {
                tracing::debug!(key = %self.key, owner = %self.owner, "acquire cancelled while waiting");
                self.cancel(ticket).await;
                Ok(Waited::Ended)
            }
            () = late => {
                tracing::warn!(key = %self.key, owner = %self.owner, "no outcome for a LOCK.WAIT in time; cancelling it");
                self.cancel(ticket).await;
                Err(timed_out("no outcome for LOCK.WAIT by its deadline").into())
            }
        }
    }

    /// The wait's result for `outcome`.
    fn ended(&self, outcome: Outcome) -> Result<Waited> {
        match outcome {
            Outcome::Granted(token) => Ok(Waited::Granted(token)),
            Outcome::TimedOut => Ok(Waited::Ended),
            Outcome::Refused(line) => {
                let err = server_error(&line);
                // The key's slot moved while it waited: queue again where it is now.
                let err = match err.redirect_node() {
                    Some(_) => server_error("TRYAGAIN the key's slot moved while it waited"),
                    None => err,
                };
                Err(Error::from_command(err, self.key, self.owner))
            }
            Outcome::Lost(Loss::Broken) => {
                Err(Error::Redis(RedisError::from(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "wait connection closed",
                ))))
            }
            Outcome::Lost(Loss::Unresponsive) => {
                Err(timed_out("the wait connection stopped answering").into())
            }
        }
    }

    /// Cancels `ticket` and releases a grant that crossed the cancel; see the module docs.
    async fn cancel(&self, mut ticket: Ticket) {
        let within = self.core.options().response_timeout_duration();
        let token = match ticket.channel.cancel(self.key, ticket.id).await {
            Ok(Some(0)) => None,
            Ok(Some(token)) => Some(token),
            Ok(None) => match timeout(within, &mut ticket.receiver).await {
                Ok(Ok(Outcome::Granted(token))) => Some(token),
                Ok(_) => None,
                // Left to the ticket's `Drop` and the dispatcher.
                Err(_) => return,
            },
            Err(err) => {
                tracing::warn!(key = %self.key, %err, "LOCK.CANCEL failed; closing the wait connection");
                // Closing it ends the ticket on the server; the outcome comes as the
                // connection's loss, or as a grant it had delivered before.
                ticket.channel.lose(Loss::Broken);
                match timeout(3 * within, &mut ticket.receiver).await {
                    Ok(Ok(Outcome::Granted(token))) => Some(token),
                    Ok(_) => None,
                    Err(_) => return,
                }
            }
        };
        ticket.finish();
        if let Some(token) = token {
            let held = (self.kind, self.key, self.owner);
            let lease = Duration::from_millis(self.lease_ms);
            // Sent again in the background if its connection fails (`deliver.rs`).
            match self.core.give_back_grant(held, token, lease).await {
                Ok(_) => {
                    tracing::debug!(key = %self.key, token, "released a grant that crossed a cancel")
                }
                Err(err) => {
                    tracing::warn!(key = %self.key, %err, "could not release a grant that crossed a cancel")
                }
            }
        }
    }

    /// What is left until the deadline, in whole ms, 1 at least (0: no limit).
    fn wait_ms(&self) -> u64 {
        let now = tokio::time::Instant::now();
        self.deadline.map_or(0, |d| {
            crate::pure::options::ceil_ms(d.saturating_duration_since(now)).max(1)
        })
    }
}

impl Ticket {
    /// The cancel was answered: the wait id leaves the mailbox, and nothing comes for it.
    fn finish(mut self) {
        let mut mailbox = self.channel.mailbox();
        if mailbox.forsake(self.id, &self.wait.key, &self.wait.owner) {
            mailbox.settled(self.id);
        }
        self.settled = true;
    }

    /// This ticket's grant with `token`, to release.
    fn orphan(&self, token: u64) -> Orphan {
        let wait = self.wait.clone();
        Orphan { token, ..wait }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let forsaken = self
            .channel
            .mailbox()
            .forsake(self.id, &self.wait.key, &self.wait.owner);
        if !forsaken {
            // Its outcome reached the oneshot before the forsake.
            self.receiver.close();
            if let Ok(Outcome::Granted(token)) = self.receiver.try_recv() {
                self.channel.release_orphan(self.orphan(token));
            }
            return;
        }
        self.channel.cancel_in_background(self.id, self.orphan(0));
    }
}
