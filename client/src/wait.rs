//! `LOCK.ACQUIRE ... WAIT` on a connection of its own, and how a wait is abandoned.
//!
//! The server answers a wait with the token when it hands the lock over, or nil at the `WAIT`
//! deadline (the two may cross: either answer is the truth). Nothing else ends a wait, not
//! even `CLIENT UNBLOCK`: the only way to stop one early is to close its connection.
//!
//! So when the caller goes away, the wait's connection is killed (`CLIENT KILL ID` from the
//! shared connection to the same server: once it answers, the server has dropped the
//! waiter) and never reused.
//! A grant the server made before the kill but had not yet replied is taken back by the
//! server itself; one whose reply was already on its way is ours, and released after a
//! `LOCK.INFO` check. A wait whose reply is [`REPLY_GRACE`] past its deadline (a dead server
//! or connection) is abandoned the same way, and fails.
//!
//! In a Redis Cluster, the wait goes to the node that serves the key; one redirected there
//! (`MOVED`, `ASK`: the server answers at once, without queueing it) is made again on a
//! connection to the target.

use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::{sleep_until, Instant};

use crate::commands;
use crate::core::Core;
use crate::error::{Error, Result};
use crate::pool::WaitConn;
use crate::router::Sent;

/// How late a due reply may be before the wait is given up as dead.
const REPLY_GRACE: Duration = Duration::from_secs(2);

/// Why a wait was given up before its reply.
enum Stop {
    /// The caller went away.
    Cancelled,
    /// No reply [`REPLY_GRACE`] after the deadline.
    Overdue,
}

/// One wait for `key` as `owner`.
pub(crate) struct Wait<'a> {
    pub(crate) core: &'a Core,
    pub(crate) key: &'a str,
    pub(crate) owner: &'a str,
    pub(crate) lease_ms: u64,
    /// `None`: no limit (`WAIT 0`).
    pub(crate) deadline: Option<Instant>,
}

impl Wait<'_> {
    /// Waits for the lock; `Ok(None)` if the wait ended without it (or the caller went away).
    ///
    /// On a grant, returns the connection that carried it (it is the one whose write the
    /// grant is) for the caller to give back to the pool.
    pub(crate) async fn run<T>(
        &self,
        caller: &mut oneshot::Sender<T>,
    ) -> Result<Option<(u64, WaitConn)>> {
        let overdue = self.deadline.map(|d| d + REPLY_GRACE);
        let interrupt = interruption(caller, overdue);
        let sent = self.core.send_own(self.key, || self.command(), interrupt);
        match sent.await? {
            Sent::Answered(Ok(Some(token)), waiter) => Ok(Some((token, waiter))),
            Sent::Answered(Ok(None), waiter) => {
                self.core.give_back(waiter);
                Ok(None)
            }
            Sent::Answered(Err(err), _) => Err(Error::from_command(err, self.key, self.owner)),
            Sent::Interrupted(Stop::Cancelled, waiter) => {
                tracing::debug!(key = %self.key, owner = %self.owner, "acquire cancelled while waiting");
                self.abandon(waiter).await;
                Ok(None)
            }
            Sent::Interrupted(Stop::Overdue, waiter) => {
                tracing::warn!(key = %self.key, owner = %self.owner, "no reply to a WAIT in time; abandoning it");
                self.abandon(waiter).await;
                Err(Error::Redis(redis::RedisError::from(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "no reply to LOCK.ACQUIRE ... WAIT by its deadline",
                ))))
            }
        }
    }

    /// `LOCK.ACQUIRE key owner LEASE ms WAIT ms`, waiting for what is left until the deadline.
    fn command(&self) -> redis::Cmd {
        let wait_ms = match self.deadline {
            None => 0,
            Some(d) => crate::options::ceil_ms(d.saturating_duration_since(Instant::now())).max(1),
        };
        commands::acquire_waiting(self.key, self.owner, self.lease_ms, wait_ms)
    }

    /// Ends the wait by killing its connection, then releases a grant that crossed the kill.
    async fn abandon(&self, waiter: WaitConn) {
        // On the waiter's own node: client ids are per server.
        if let Err(err) = waiter.kill().await {
            // Without the right to kill (ACL), closing our end is all we can do; the server
            // drops the waiter when it notices.
            tracing::warn!(key = %self.key, %err, "CLIENT KILL failed; closing the wait connection");
        }
        drop(waiter);
        release_unreported(self.core, self.key, self.owner).await;
    }
}

/// What ends a wait before its reply: the caller going away, or no reply by `overdue`.
async fn interruption<T>(caller: &mut oneshot::Sender<T>, overdue: Option<Instant>) -> Stop {
    let late = async {
        match overdue {
            Some(at) => sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        () = caller.closed() => Stop::Cancelled,
        () = late => Stop::Overdue,
    }
}

/// A `LOCK.ACQUIRE` by `owner` on `key` may have been granted without its reply reaching us:
/// release the one hold the server counts beyond the guards this client knows of. Sound for
/// the fresh owner of one acquisition; for a shared owner handle, an acquisition of the same
/// owner still in flight may be counted as unknown.
pub(crate) async fn release_unreported(core: &Core, key: &str, owner: &str) {
    let info = match core.info(key).await {
        Ok(Some(info)) if info.owner == owner => info,
        Ok(_) => return,
        Err(err) => return tracing::warn!(key, %err, "could not check the lock after a lost reply"),
    };
    let known = core.local_holds(key, owner, info.token) as u64;
    if info.holds <= known {
        return;
    }
    match core.release(key, owner).await {
        Ok(_) => tracing::debug!(key, owner, "released a hold granted without a reply"),
        Err(err) => {
            tracing::warn!(key, owner, %err, "could not release a hold granted without a reply")
        }
    }
}
