//! How a [`RedLock`](crate::RedLock) reaches a majority of its servers without polling and
//! without deadlock between contenders.
//!
//! A round has two steps:
//!
//! 1. **At once**: one `LOCK.ACQUIRE` without `WAIT` on every server in parallel. A majority
//!    granted within its validity wins; otherwise what was granted is released at once. This
//!    step never waits, so it holds nothing while waiting for anything: it cannot take part
//!    in a deadlock, and it cannot overtake queued waiters (a lock with waiters is never
//!    free on the server).
//! 2. **Gate, then quorum**: the contender queues (`WAIT`) on the *gate*, the first server
//!    in the canonical order (by address) that answers; only a gate holder queues on the
//!    other servers, all in parallel, and wins once a majority (the gate included) granted
//!    within its validity. Other waits are then cancelled (a grant that crossed is released).
//!
//! **No deadlock.** A deadlock needs two contenders each holding what the other waits for.
//! Step 1 holds nothing while it waits. In step 2 only gate holders hold while waiting, and
//! contenders that see the same first live server share one gate, which one of them holds
//! at a time: among them nobody else queues on the other servers, so there is no split
//! vote. A holder that got its majority in step 1 waits for nothing and releases in time.
//! **No livelock**: the gate's queue is FIFO, so the contenders get the gate in turn, and
//! each gate holder gets the other servers as soon as their former holder releases them or
//! its lease ends; nobody gives up a hold to someone who would give it up again.
//!
//! **When the servers disagree** (a gate that dies, or a partition that shows different
//! contenders different first servers), two contenders can each hold a gate and split the
//! rest. Two bounds end that: a contender whose gate is lost (its server died: the hold
//! ends by its safe deadline) gives up its round; and a round lasts at most one lease after
//! the gate was granted, then the contender releases everything and queues again. Safety
//! never depends on the gate: only a majority grants the lock, and two majorities always
//! share a server, which grants one holder at a time.

use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use crate::error::{Error, Result};
use crate::guard::Guard;
use crate::lock::Lock;
use crate::members::Members;
use crate::quorum::pause_after;

/// One acquisition of a RedLock over `locks` (one per server, in the canonical order).
pub(crate) struct Election<'a> {
    pub(crate) locks: &'a [Lock],
    pub(crate) quorum: usize,
    pub(crate) lease: Duration,
    /// `None`: no limit.
    pub(crate) deadline: Option<Instant>,
}

/// How an acquisition ended.
pub(crate) enum Outcome {
    /// A majority granted: the members (every server that granted).
    Granted(Members),
    /// The wait limit passed while the lock was busy.
    TimedOut,
    /// The wait limit passed while fewer than a majority of servers answered.
    Unreachable(usize),
}

/// How one round ended.
enum Round {
    Granted(Members),
    /// No majority this time (busy servers, a lost gate, the round's bound).
    Again,
    TimedOut,
    /// Fewer than a majority of servers answered.
    Unreachable(usize),
}

impl Election<'_> {
    /// Rounds until a majority grants or the deadline passes.
    pub(crate) async fn run(&self) -> Outcome {
        let mut failures = 0;
        loop {
            let round = match self.at_once().await {
                Round::Again => self.gated().await,
                other => other,
            };
            match round {
                Round::Granted(members) => return Outcome::Granted(members),
                Round::TimedOut => return Outcome::TimedOut,
                Round::Again if self.expired() => return Outcome::TimedOut,
                Round::Again => failures = 0,
                Round::Unreachable(answered) if self.expired() => {
                    return Outcome::Unreachable(answered)
                }
                Round::Unreachable(answered) => {
                    // Servers that refuse connections answer at once: pause, not spin.
                    let pause = pause_after(failures);
                    tracing::debug!(answered, ?pause, "too few servers answered; again");
                    tokio::time::sleep(self.left().map_or(pause, |left| left.min(pause))).await;
                    failures = failures.saturating_add(1);
                }
            }
        }
    }

    /// Step 1: every server at once, waiting nowhere.
    async fn at_once(&self) -> Round {
        let mut tries = JoinSet::new();
        for lock in self.locks {
            let lock = lock.clone();
            tries.spawn(async move { lock.run(Some(Duration::ZERO)).await });
        }
        let mut held = Members { guards: Vec::new() };
        let mut answered = 0;
        while let Some(done) = tries.join_next().await {
            held.guards.extend(answer(done, &mut answered));
        }
        if let Some(won) = self.won(held).await {
            return Round::Granted(won);
        }
        if answered < self.quorum {
            return Round::Unreachable(answered);
        }
        Round::Again
    }

    /// Step 2: the gate, then the others in parallel, within one lease of the gate's grant.
    async fn gated(&self) -> Round {
        let Some((at, gate)) = (match self.gate().await {
            Ok(gate) => gate,
            Err(round) => return round,
        }) else {
            return Round::TimedOut;
        };
        let round_end = Instant::now() + self.lease;
        let until = self.deadline.map_or(round_end, |d| d.min(round_end));
        let mut waits = JoinSet::new();
        for (i, lock) in self.locks.iter().enumerate().filter(|(i, _)| *i != at) {
            let (lock, left) = (
                lock.clone(),
                until.saturating_duration_since(Instant::now()),
            );
            tracing::trace!(server = i, "gate held; queueing");
            waits.spawn(async move { lock.run(Some(left)).await });
        }
        let mut held = Members { guards: vec![gate] };
        let mut answered = 1;
        loop {
            let done = tokio::select! {
                biased;
                _ = held.guards[0].lost() => break,
                done = waits.join_next() => done,
            };
            let Some(done) = done else { break };
            held.guards.extend(answer(done, &mut answered));
            if held.guards.len() >= self.quorum {
                // Cancels the other waits; a grant that crossed is released.
                drop(waits);
                return self.won(held).await.map_or(Round::Again, Round::Granted);
            }
        }
        held.release_quietly().await;
        if answered < self.quorum {
            Round::Unreachable(answered)
        } else if self.expired() {
            Round::TimedOut
        } else {
            Round::Again
        }
    }

    /// Queues on the first server of the canonical order that answers, and returns its
    /// place and guard; `Ok(None)` if the wait limit passed.
    async fn gate(&self) -> std::result::Result<Option<(usize, Guard)>, Round> {
        for (i, lock) in self.locks.iter().enumerate() {
            match lock.run(self.left()).await {
                Ok(Some(guard)) => return Ok(Some((i, guard))),
                Ok(None) => return Ok(None),
                Err(err) => {
                    tracing::debug!(server = lock.server(), %err, "gate unreachable; the next");
                    let answered = self.locks.len() - (i + 1);
                    if answered < self.quorum {
                        return Err(Round::Unreachable(answered));
                    }
                }
            }
        }
        Err(Round::Unreachable(0))
    }

    /// The members if they make a majority within its validity; otherwise released.
    async fn won(&self, held: Members) -> Option<Members> {
        let valid = held.valid_until(self.quorum) > Instant::now();
        if held.guards.len() >= self.quorum && valid {
            return Some(held);
        }
        held.release_quietly().await;
        None
    }

    fn left(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    fn expired(&self) -> bool {
        self.deadline.is_some_and(|d| d <= Instant::now())
    }
}

/// A member acquisition's result: its guard if granted; counts the servers that answered.
fn answer(
    done: std::result::Result<Result<Option<Guard>>, tokio::task::JoinError>,
    answered: &mut usize,
) -> Option<Guard> {
    match done {
        Ok(Ok(granted)) => {
            *answered += 1;
            granted
        }
        Ok(Err(err)) => {
            log_member_error(&err);
            None
        }
        Err(err) => {
            tracing::warn!(%err, "a RedLock member's acquisition ended abnormally");
            None
        }
    }
}

fn log_member_error(err: &Error) {
    tracing::debug!(%err, "a RedLock server did not answer");
}
