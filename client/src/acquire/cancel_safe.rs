//! The cancellation-safe acquisition of a lock.
//!
//! Every acquisition runs in its caller's future and answers on a oneshot; if the caller
//! goes away before the end (its future dropped, a `tokio::time::timeout` elapsed), the
//! acquisition moves into a task of its own (`detach.rs`): there it still reads every reply
//! on its way, cancels a pending wait (`LOCK.CANCEL` for a ticket, `ticket.rs`; killing the
//! connection of a blocking wait, `wait.rs`), and releases a grant that crossed the
//! cancellation, so no hold leaks. A wait costs no task unless it is cancelled.
//!
//! A wait is a ticket on the node's one wait connection (`tickets.rs`) wherever the server
//! takes them; a blocking `LOCK.ACQUIRE ... WAIT` on a connection of its own otherwise (a
//! Redis Cluster, a module without `LOCK.WAIT`, a server without RESP3), and when replicas
//! must confirm the grant.
//!
//! An error does not end an acquisition at once: `recover.rs` says whether to adopt a grant
//! whose reply was lost, to try again on a fresh connection, or to queue again elsewhere.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::{sleep, Instant};
use tracing::Instrument;

use crate::acquire::detach::Detached;
use crate::acquire::guard::Guard;
use crate::acquire::recover::{Next, Setbacks};
use crate::acquire::ticket::Waited;
use crate::acquire::wait::Wait;
use crate::core::shared::Core;
use crate::net::pool::WaitConn;
use crate::pure::commands;
use crate::pure::error::{Error, Result};
use crate::pure::kind::Kind;
use crate::pure::options::LockOptions;
use crate::pure::turns::Turn;

/// The pause before an unlimited wait that ended without the lock is made again.
const REWAIT_PAUSE: Duration = Duration::from_millis(10);

/// Acquires a hold of `kind` on `key` as `owner`, waiting up to `limit` (`None`: without
/// limit), in this future, or in a task of its own once it is dropped: dropping it leaks no
/// hold.
pub(crate) async fn acquire(
    core: &Arc<Core>,
    (kind, key): (Kind, &str),
    owner: String,
    options: LockOptions,
    limit: Option<Duration>,
) -> Outcome {
    let span = tracing::info_span!(
        "acquire",
        key,
        owner = owner.as_str(),
        kind = ?kind,
        token = tracing::field::Empty,
        waited_ms = tracing::field::Empty,
    );
    let started = Instant::now();
    let (reply, outcome) = oneshot::channel();
    let task = Acquisition {
        core: core.clone(),
        kind,
        key: key.to_owned(),
        owner,
        options,
        reply,
    };
    let running = Detached::new(core, task.run(limit).instrument(span.clone()), outcome);
    let outcome = running
        .instrument(span.clone())
        .await
        .ok_or_else(|| Error::internal("the acquisition ended without an answer"))?;
    // The token granted, 0 for none (busy, or an error), and how long it took.
    let token = outcome
        .as_ref()
        .ok()
        .and_then(|got| got.as_ref().map(Guard::token));
    span.record("token", token.unwrap_or(0));
    let waited = started.elapsed().as_millis();
    span.record("waited_ms", u64::try_from(waited).unwrap_or(u64::MAX));
    outcome
}

type Outcome = Result<Option<Guard>>;

/// A grant: its token, a time no later than the server's, and the connection it came on
/// when that was one of the client's wait connections.
type Granted = (u64, Instant, Option<WaitConn>);

/// One acquisition, run in its caller's future (or in a task once that is dropped).
struct Acquisition {
    core: Arc<Core>,
    kind: Kind,
    key: String,
    owner: String,
    options: LockOptions,
    reply: oneshot::Sender<Outcome>,
}

impl Acquisition {
    async fn run(mut self, limit: Option<Duration>) {
        let deadline = limit.map(|limit| Instant::now() + limit);
        // The turn of this owner on this key (see `turns.rs`), kept until the grant is
        // either a guard the caller has or released.
        let turn = tokio::select! {
            biased;
            () = self.reply.closed() => return,
            turn = settled_turn(&self.core, &self.key, &self.owner, deadline) => turn,
        };
        let outcome = match &turn {
            Some(turn) => self.acquire(deadline, turn).await,
            None => Ok(None),
        };
        if let Err(Ok(Some(guard))) = self.reply.send(outcome) {
            tracing::debug!(key = %guard.key(), owner = %guard.owner(), "acquire cancelled after the grant; releasing");
            if let Err(err) = guard.release().await {
                tracing::warn!(%err, "could not release the hold of a cancelled acquire");
            }
        }
        drop(turn);
    }

    async fn acquire(&mut self, deadline: Option<Instant>, turn: &Turn) -> Outcome {
        if self.core.is_closed() {
            return Err(Error::Closed);
        }
        let Some((token, at, conn)) = self.attempt(deadline, turn).await? else {
            return Ok(None);
        };
        let held = (self.kind, self.key.as_str(), self.owner.as_str());
        let guard = Guard::new(&self.core, held, token, self.options, at);
        if self.core.is_closed() {
            // `close` ran while this grant was on its way: it is not kept.
            drop(guard.release().await);
            return Err(Error::Closed);
        }
        tracing::debug!(key = %self.key, owner = %self.owner, token, "lock acquired");
        match (self.options.required_replicas(), conn) {
            (Some((wanted, timeout)), Some(conn)) => {
                crate::acquire::replicas::confirm(&self.core, guard, conn, wanted, timeout)
                    .await
                    .map(Some)
            }
            (_, conn) => {
                if let Some(conn) = conn {
                    self.core.give_back(conn);
                }
                Ok(Some(guard))
            }
        }
    }

    /// Acquires until `deadline`, recovering from errors (see `recover.rs`).
    async fn attempt(&mut self, deadline: Option<Instant>, turn: &Turn) -> Result<Option<Granted>> {
        let mut setbacks = Setbacks::default();
        loop {
            let err = match self.attempt_once(deadline, turn, &mut setbacks).await {
                Ok(granted) => return Ok(granted),
                Err(err) => err,
            };
            let held = (self.kind, self.key.as_str(), self.owner.as_str());
            let attempt = wait_of(&self.core, held, &self.options, deadline);
            match attempt.after_error(&err, &mut setbacks).await {
                Next::Adopt(token, at) => return Ok(Some((token, at, None))),
                Next::Retry(pause) if !self.reply.is_closed() => sleep(pause).await,
                Next::Retry(_) => return Ok(None),
                Next::Fail => return Err(err),
            }
        }
    }

    /// One try, then waiting until `deadline` (`None`: without limit).
    async fn attempt_once(
        &mut self,
        deadline: Option<Instant>,
        turn: &Turn,
        setbacks: &mut Setbacks,
    ) -> Result<Option<Granted>> {
        if let Some(granted) = self.try_once().await? {
            return Ok(Some(granted));
        }
        setbacks.answered();
        if deadline.is_some_and(|d| d <= Instant::now()) || self.reply.is_closed() {
            return Ok(None);
        }
        tracing::debug!(key = %self.key, owner = %self.owner, "lock busy; waiting");
        let held = (self.kind, self.key.as_str(), self.owner.as_str());
        let waiting = wait_of(&self.core, held, &self.options, deadline);
        loop {
            turn.set_queued(true);
            let waited = wait_once(&waiting, &self.options, &mut self.reply).await;
            turn.set_queued(false);
            if matches!(waited, Err(Error::Unresponsive { .. })) {
                setbacks.wait_abandoned();
            }
            match waited? {
                Some((token, conn)) => match waiting.renew(token).await? {
                    Some(at) => return Ok(Some((token, at, conn))),
                    None => {
                        tracing::debug!(key = %self.key, "a handed-over lock was gone at once; waiting again");
                        if let Some(conn) = conn {
                            self.core.give_back(conn);
                        }
                    }
                },
                // The server ends an unlimited wait only by a handoff; should one end
                // anyway (an older module, a `CLIENT UNBLOCK` it honoured), wait again.
                None if deadline.is_none() && !self.reply.is_closed() => {
                    tracing::debug!(key = %self.key, "wait ended without the lock; waiting again");
                    sleep(REWAIT_PAUSE).await;
                }
                None => return Ok(None),
            }
        }
    }

    /// One `LOCK.ACQUIRE` without `WAIT`: an uncontended lock costs no waiting. Waiters
    /// cannot be overtaken: a lock with waiters is never free.
    ///
    /// It goes on the shared connection, unless replicas must confirm the grant: `WAIT`
    /// blocks the connection it runs on, and must run on the one that wrote.
    async fn try_once(&mut self) -> Result<Option<Granted>> {
        let sent = Instant::now();
        let cmd = commands::acquire(self.kind, &self.key, &self.owner, self.options.lease_ms());
        let (reply, own) = match self.options.required_replicas() {
            Some(_) => {
                let (reply, own) = self.core.query_own(&self.key, &cmd).await?;
                (reply, Some(own))
            }
            None => (self.core.query(&self.key, &cmd).await, None),
        };
        match reply {
            Ok(Some(token)) => Ok(Some((token, sent, own))),
            Ok(None) => {
                if let Some(conn) = own {
                    self.core.give_back(conn);
                }
                Ok(None)
            }
            // A timeout or a broken connection: `recover.rs` checks for a grant.
            Err(err) => Err(Error::from_command(err, &self.key, &self.owner)),
        }
    }
}

/// The turn of `owner` on `key`, once no release of the owner's is on its way for a
/// holding of the key that no guard holds: until it is delivered the server still counts
/// that hold, and an acquisition would reenter it (taking back a hold that is no longer the
/// owner's, or refused as an upgrade of a read hold nobody holds). The delivery takes the
/// turn to check the server's count, so this waits without it. `None` once `deadline` passed.
async fn settled_turn(
    core: &Core,
    key: &str,
    owner: &str,
    deadline: Option<Instant>,
) -> Option<Turn> {
    loop {
        if !core.settle(key, owner, deadline).await {
            return None;
        }
        let turn = core.take_turn(key, owner, deadline).await?;
        if !core.leaving(key, owner) {
            return Some(turn);
        }
    }
}

/// The wait (and error recovery) of an acquisition until `deadline` (`None`: no limit). A
/// function of the fields it needs, so that the acquisition's reply channel stays free.
fn wait_of<'a>(
    core: &'a Arc<Core>,
    (kind, key, owner): (Kind, &'a str, &'a str),
    options: &LockOptions,
    deadline: Option<Instant>,
) -> Wait<'a> {
    Wait {
        core,
        kind,
        key,
        owner,
        lease_ms: options.lease_ms(),
        deadline,
    }
}

/// One wait: a ticket (`ticket.rs`), or a blocking `LOCK.ACQUIRE ... WAIT` on a connection
/// of its own (`wait.rs`) where the node takes no tickets, or when replicas must confirm the
/// grant (`WAIT` must run on the connection that wrote it).
async fn wait_once(
    waiting: &Wait<'_>,
    options: &LockOptions,
    reply: &mut oneshot::Sender<Outcome>,
) -> Result<Option<(u64, Option<WaitConn>)>> {
    if options.required_replicas().is_none() {
        match waiting.ticket(reply).await? {
            Waited::Granted(token) => return Ok(Some((token, None))),
            Waited::Ended => return Ok(None),
            Waited::Unsupported | Waited::Pulled => {}
        }
    }
    let waited = waiting.run(reply).await?;
    Ok(waited.map(|(token, conn)| (token, Some(conn))))
}
