//! What an acquisition does after an error, so that it never hangs, never leaks a grant it
//! could have known about, and never gives up on a waiter that only has to queue again:
//!
//! - **No reply in time** ([`Error::Unresponsive`]): the command may have run. The lock is
//!   checked (`LOCK.INFO`): a grant the server counts beyond the client's guards is adopted;
//!   otherwise the error stands. (A wait abandoned for want of an answer made its own check,
//!   see `wait.rs`: its error stands at once.)
//! - **A broken connection** (a stale pooled connection, a restarted server): the same
//!   check, then, up to [`ClientOptions::retries`](crate::ClientOptions::retries) times, the
//!   acquisition is made again on a fresh connection.
//! - **`READONLY`** (the node became a replica while the client waited: a failover; the
//!   module's answer), **`UNBLOCKED`** (the same, answered by Redis itself, which unblocks
//!   waiters when a master becomes a replica) and **`TRYAGAIN`** (a slot in migration): the
//!   route is refreshed and the acquisition queues again, within its wait limit, at most
//!   [`MAX_REQUEUES`] times in a row; then the error stands. (`MOVED` and `ASK` are
//!   followed by the router itself.)
//!
//! An adopted grant is renewed at once (`LOCK.RENEW ... TOKEN`): the renewal's send time
//! starts its safe deadline, since the grant's own time is unknown.

use std::time::Duration;

use tokio::time::Instant;

use crate::acquire::wait::{unreported_grant, Wait};
use crate::pure::commands;
use crate::pure::error::{Error, Result};
use crate::pure::quorum::pause_after;

/// How many times in a row an acquisition queues again after `READONLY` or `TRYAGAIN`.
pub(crate) const MAX_REQUEUES: u32 = 10;

/// How long an acquisition waits out connection errors in a row while a failover may be
/// under way (Sentinel or Redis Cluster only).
pub(crate) const MAX_OUTAGE: Duration = Duration::from_secs(30);

/// What to do after an error.
pub(crate) enum Next {
    /// Try again after the pause.
    Retry(Duration),
    /// The server had granted the lock: its token, and when its safe deadline starts.
    Adopt(u64, Instant),
    /// Give up with the error.
    Fail,
}

/// One acquisition's failures so far.
#[derive(Default)]
pub(crate) struct Setbacks {
    retries: usize,
    requeues: u32,
    /// The last error came from a wait that was abandoned, which checked for a grant then.
    abandoned: bool,
    /// Since when connection errors follow one another (see [`Wait::through_outage`]).
    outage: Option<Instant>,
    outages: u32,
}

impl Setbacks {
    /// The error about to be handled came from an abandoned wait (see `wait.rs`).
    pub(crate) fn wait_abandoned(&mut self) {
        self.abandoned = true;
    }

    /// The server answered: an outage (see [`Wait::through_outage`]) is over.
    pub(crate) fn answered(&mut self) {
        (self.outage, self.outages) = (None, 0);
    }
}

// The acquisition's own description is its `Wait`: the same key, owner, lease and deadline.
impl Wait<'_> {
    /// What to do after `err`; see the module docs.
    pub(crate) async fn after_error(&self, err: &Error, setbacks: &mut Setbacks) -> Next {
        match err {
            // An abandoned wait checked for a grant already (or its server does not answer).
            Error::Unresponsive { .. } if std::mem::take(&mut setbacks.abandoned) => Next::Fail,
            Error::Unresponsive { .. } => self.adopt_or(Next::Fail, setbacks).await,
            Error::Redis(e) if e.is_io_error() => {
                let next = self.after_error_granting_nothing(err, setbacks).await;
                self.adopt_or(next, setbacks).await
            }
            _ => self.after_error_granting_nothing(err, setbacks).await,
        }
    }

    /// What to do after `err` when there is no grant to adopt (a latch's wait opens
    /// nothing that is held): retry on a fresh connection, queue again, or give up.
    pub(crate) async fn after_error_granting_nothing(
        &self,
        err: &Error,
        setbacks: &mut Setbacks,
    ) -> Next {
        match err {
            Error::Redis(e) if e.is_io_error() => {
                if setbacks.retries >= self.core.options().retry_count() {
                    return self.through_outage(err, setbacks).await;
                }
                setbacks.retries += 1;
                tracing::debug!(key = %self.key, %err, "connection broke; waiting on a fresh one");
                Next::Retry(Duration::ZERO)
            }
            Error::ReadOnly { .. } | Error::HeldBack { .. } => self.requeue(err, setbacks).await,
            Error::Redis(e) if matches!(e.code(), Some("TRYAGAIN" | "UNBLOCKED")) => {
                self.requeue(err, setbacks).await
            }
            _ => Next::Fail,
        }
    }

    /// Refreshes the route and queues again, if the limits allow.
    async fn requeue(&self, err: &Error, setbacks: &mut Setbacks) -> Next {
        let pause = pause_after(setbacks.requeues);
        let late = self.deadline.is_some_and(|d| Instant::now() + pause >= d);
        if setbacks.requeues >= MAX_REQUEUES || late {
            return Next::Fail;
        }
        setbacks.requeues += 1;
        tracing::info!(key = %self.key, %err, "the node cannot serve the lock now; queueing again");
        self.core.refresh_route().await;
        Next::Retry(pause)
    }

    /// Waits out the failover of a master (Sentinel) or of a cluster node: after a
    /// connection error that retries did not cure, the route is refreshed and the
    /// acquisition queues again, within its wait limit and for at most [`MAX_OUTAGE`] of
    /// errors in a row. A lone server cannot be replaced: the error stands.
    async fn through_outage(&self, err: &Error, setbacks: &mut Setbacks) -> Next {
        if !self.core.follows_failovers() {
            return Next::Fail;
        }
        let since = *setbacks.outage.get_or_insert_with(Instant::now);
        let pause = pause_after(setbacks.outages);
        let late = self.deadline.is_some_and(|d| Instant::now() + pause >= d);
        if late || since.elapsed() + pause > MAX_OUTAGE {
            return Next::Fail;
        }
        setbacks.outages += 1;
        tracing::info!(key = %self.key, %err, "the server is unreachable; queueing again after a failover");
        self.core.refresh_route().await;
        Next::Retry(pause)
    }

    /// Adopts a grant the server made without our knowing, or else `otherwise`. When the
    /// check cannot be made for a connection error, `otherwise` stands if it waits out a
    /// failover (the failed master's grant is lost with it, or found on the new one by
    /// the next check).
    async fn adopt_or(&self, otherwise: Next, setbacks: &mut Setbacks) -> Next {
        let token = match unreported_grant(self.core, self.kind, self.key, self.owner).await {
            Ok(Some(token)) => token,
            Ok(None) => return otherwise,
            Err(err) => {
                tracing::warn!(key = %self.key, %err, "could not check for a grant after an error");
                let io = matches!(&err, Error::Redis(e) if e.is_io_error());
                return match otherwise {
                    Next::Retry(_) if io && setbacks.outage.is_some() => otherwise,
                    Next::Retry(_) if io => self.through_outage(&err, setbacks).await,
                    _ => Next::Fail,
                };
            }
        };
        match self.renew(token).await {
            Ok(Some(at)) => {
                tracing::info!(key = %self.key, token, "adopted a grant whose reply was lost");
                Next::Adopt(token, at)
            }
            Ok(None) => otherwise,
            Err(err) => {
                tracing::warn!(key = %self.key, %err, "could not renew a grant whose reply was lost");
                Next::Fail
            }
        }
    }

    /// `LOCK.RENEW ... TOKEN token` (`RWLOCK.RENEW`): `Some(send time)` if the holding is
    /// still ours.
    pub(crate) async fn renew(&self, token: u64) -> Result<Option<Instant>> {
        let sent = Instant::now();
        let cmd = commands::renew(self.kind, self.key, self.owner, self.lease_ms, token);
        let renewed = self.core.query_again(self.key, &cmd).await;
        let renewed: i64 = renewed.map_err(Error::from)?;
        Ok((renewed == 1).then_some(sent))
    }
}
