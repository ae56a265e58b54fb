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
//! `LOCK.INFO` check. A wait whose reply is the wait grace past its deadline, or whose server
//! stops answering the `PING` sent every keepalive interval on its shared connection (a
//! stopped server or a dead host: the wait's own connection says nothing), is abandoned the
//! same way, and fails with [`Error::Unresponsive`].
//!
//! In a Redis Cluster, the wait goes to the node that serves the key; one redirected there
//! (`MOVED`, `ASK`: the server answers at once, without queueing it) is made again on a
//! connection to the target.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::{sleep, sleep_until, Instant};

use crate::core::shared::Core;
use crate::net::pool::WaitConn;
use crate::net::router::Sent;
use crate::pure::commands;
use crate::pure::error::{timed_out, Error, Result};
use crate::pure::kind::Kind;

/// Why a wait was given up before its reply.
enum Stop {
    /// The caller went away.
    Cancelled,
    /// No reply by the wait grace after the deadline.
    Overdue,
    /// The server did not answer a liveness probe.
    Unresponsive(redis::RedisError),
}

/// One wait for `key` as `owner`.
pub(crate) struct Wait<'a> {
    pub(crate) core: &'a Arc<Core>,
    /// What it waits for: a plain lock, a read or a write hold.
    pub(crate) kind: Kind,
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
        let grace = self.core.options().wait_grace_duration();
        let overdue = self.deadline.map(|d| d + grace);
        let interrupt = interruption(self, caller, overdue);
        let sent = self.core.send_own(self.key, || self.command(), interrupt);
        let (why, waiter) = match sent.await? {
            Sent::Answered(Ok(Some(token)), waiter) => return Ok(Some((token, waiter))),
            Sent::Answered(Ok(None), waiter) => {
                self.core.give_back(waiter);
                return Ok(None);
            }
            Sent::Answered(Err(err), waiter) => {
                // A broken connection is dropped (the router has forgotten its node's idle
                // ones already); after an error reply the pool's PING decides.
                if !err.is_io_error() {
                    self.core.give_back(waiter);
                }
                return Err(Error::from_command(err, self.key, self.owner));
            }
            Sent::Interrupted(why, waiter) => (why, waiter),
        };
        self.stopped(why, waiter).await
    }

    /// Abandons a wait that `why` interrupted; `Ok(None)` if the caller went away.
    async fn stopped(&self, why: Stop, waiter: WaitConn) -> Result<Option<(u64, WaitConn)>> {
        let (key, owner) = (self.key, self.owner);
        let failure = match why {
            Stop::Cancelled => {
                tracing::debug!(key, owner, "acquire cancelled while waiting");
                None
            }
            Stop::Overdue => {
                tracing::warn!(key, owner, "no reply to a WAIT in time; abandoning it");
                Some(timed_out(
                    "no reply to LOCK.ACQUIRE ... WAIT by its deadline",
                ))
            }
            Stop::Unresponsive(err) => {
                tracing::warn!(key, owner, %err, "the server stopped answering a waiter; abandoning the wait");
                Some(err)
            }
        };
        self.abandon(waiter).await;
        failure.map_or(Ok(None), |err| {
            Err(Error::from(timed_out(&err.to_string())))
        })
    }

    /// `LOCK.ACQUIRE key owner LEASE ms WAIT ms`, waiting for what is left until the deadline.
    fn command(&self) -> redis::Cmd {
        let wait_ms = match self.deadline {
            None => 0,
            Some(d) => {
                crate::pure::options::ceil_ms(d.saturating_duration_since(Instant::now())).max(1)
            }
        };
        commands::acquire_waiting(self.kind, self.key, self.owner, self.lease_ms, wait_ms)
    }

    /// Ends the wait by killing its connection, then releases a grant that crossed the kill.
    async fn abandon(&self, waiter: WaitConn) {
        // On the waiter's own node: client ids are per server.
        let killed = waiter.kill().await;
        drop(waiter);
        match killed {
            Ok(()) => {}
            Err(err) if err.is_timeout() => {
                // The server does not answer: a check would time out too. A grant it makes
                // when it resumes ends with its lease.
                return tracing::warn!(key = %self.key, %err, "CLIENT KILL got no answer; not checking for a grant");
            }
            // Without the right to kill (ACL), closing our end is all we can do; the server
            // drops the waiter when it notices.
            Err(err) => {
                tracing::warn!(key = %self.key, %err, "CLIENT KILL failed; closing the wait connection")
            }
        }
        let lease = Duration::from_millis(self.lease_ms);
        release_unreported(self.core, (self.kind, self.key, self.owner), lease).await;
    }
}

/// What ends a wait before its reply: the caller going away, no reply by `overdue`, or a
/// server that stops answering.
async fn interruption<T>(
    wait: &Wait<'_>,
    caller: &mut oneshot::Sender<T>,
    overdue: Option<Instant>,
) -> Stop {
    let late = async {
        match overdue {
            Some(at) => sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    let every = wait.core.options().keepalive_interval();
    let dead = async {
        loop {
            sleep(every).await;
            if let Err(err) = wait.core.probe(wait.key).await {
                return err;
            }
        }
    };
    tokio::select! {
        biased;
        () = caller.closed() => Stop::Cancelled,
        () = late => Stop::Overdue,
        err = dead => Stop::Unresponsive(err),
    }
}

/// A `LOCK.ACQUIRE` by `owner` on `key` may have been granted without its reply reaching us:
/// release the one hold the server counts beyond those this client knows of. Called only
/// by an acquisition that has the turn of `(key, owner)` (see `turns.rs`), so no other
/// acquisition's grant can be counted as unknown: the hold is of that acquisition's `kind`.
pub(crate) async fn release_unreported(
    core: &Arc<Core>,
    (kind, key, owner): (Kind, &str, &str),
    lease: Duration,
) {
    let token = match unreported_grant(core, kind, key, owner).await {
        Ok(Some(token)) => token,
        Ok(None) => return,
        Err(err) => return tracing::warn!(key, %err, "could not check the lock after a lost reply"),
    };
    // Sent again in the background if its connection fails (`deliver.rs`).
    match core.give_back_grant((kind, key, owner), token, lease).await {
        Ok(_) => tracing::debug!(key, owner, "released a hold granted without a reply"),
        Err(err) => {
            tracing::warn!(key, owner, %err, "could not release a hold granted without a reply")
        }
    }
}

/// The token of a hold the server counts for `owner` on `key` beyond those this client
/// knows of (a grant whose reply was lost), if there is one; same condition as
/// [`release_unreported`]. What is compared is what an acquisition of `kind` adds: a
/// lock's holds, a semaphore's permits, a read-write lock's read holds or its write holds.
///
/// The known holds are read before `LOCK.INFO`: a release that lands in between lowers the
/// server's count, so a hold is never taken for a lost grant; only the acquisition holding
/// the turn can add one.
pub(crate) async fn unreported_grant(
    core: &Core,
    kind: Kind,
    key: &str,
    owner: &str,
) -> Result<Option<u64>> {
    let known = core.known(key, owner);
    let Some((token, counted)) = core.counted(kind, key, owner).await? else {
        return Ok(None);
    };
    let column = kind.column();
    let same = known.iter().filter(|(known, _)| *known == token);
    let known: u64 = same.map(|(_, units)| units[column]).sum();
    Ok((counted[column] > known).then_some(token))
}
