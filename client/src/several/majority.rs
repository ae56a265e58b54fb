//! How a [`RedLock`](crate::RedLock) reaches a majority of its servers without polling and
//! without deadlock between contenders.
//!
//! A round has two steps, each an *attempt* with an owner id of its own (so that what a
//! given-up attempt leaves behind never mixes with a later one), with one task per server
//! (`keeper.rs`):
//!
//! 1. **At once**: one `LOCK.ACQUIRE` without `WAIT` on every server in parallel, each
//!    counted as failed after a short try limit (a fifth of the lease, at most the response
//!    timeout). The *gate* is the first server in the canonical order that answers (servers
//!    that failed their last try are skipped until they answer again). A majority that
//!    includes the gate wins at once, without waiting for the other servers; otherwise
//!    what was granted is released. This step never waits, so it takes part in no deadlock;
//!    and since a lock with waiters is never free, needing the gate means a newcomer never
//!    overtakes the contenders queued on it.
//! 2. **Gate, then quorum**: the contender queues (`WAIT`) on the gate; only a gate holder
//!    queues on the other servers, all in parallel, and wins once a majority (the gate
//!    included) granted with enough validity left.
//!
//! After the win the tasks go on: the servers not yet granted are queued on until they
//! grant, and a member that is lost is taken back, while a majority holds. And the servers
//! are raised to the holding's token (`LOCK.RAISE`): any later majority shares a server
//! with this one, so its token is larger.
//!
//! **No deadlock.** In step 2 only gate holders hold while waiting, and contenders that see
//! the same first live server share one gate, which one of them holds at a time. A gate
//! holder whose gate is the first server waits as long as its gate holds: it is the only
//! one. **No livelock**: the gate's queue is FIFO, so contenders get the gate in turn.
//!
//! **When the servers disagree** (a server some see down and others not), two contenders
//! can each hold a gate and split the rest. A contender whose gate is not the first server
//! gives its round up after one lease without a grant (only one contender at a time holds
//! the first server, so this ends every such cycle); and one whose gate is lost gives up.
//! Safety never depends on the gate: only a majority grants the lock, and two majorities
//! always share a server, which grants one holder at a time.

use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use crate::pure::quorum::{judge, pause_after, Answer, Verdict};
use crate::several::attempt::Attempt;
use crate::several::election::{Election, Outcome, Won};

/// How one round (or step) ended.
enum Round {
    Granted(Won),
    /// Step 1 did not win: queue on this gate.
    Queue(usize),
    /// No majority this time (a lost gate, the round's bound).
    Again,
    /// A majority granted, but with too little validity left.
    TooLate,
    TimedOut,
    Unreachable(usize),
}

impl Election<'_> {
    /// Rounds until a majority grants, the deadline passes, or too few servers answer for
    /// longer than allowed.
    pub(crate) async fn run(&self) -> Outcome {
        let (mut failures, mut unreachable_since) = (0, None);
        loop {
            let round = match self.at_once().await {
                Round::Queue(gate) => self.gated(gate).await,
                other => other,
            };
            let pause = match round {
                Round::Granted(won) => return Outcome::Granted(won),
                Round::TimedOut => return Outcome::TimedOut,
                Round::Unreachable(answered) => {
                    let since = *unreachable_since.get_or_insert_with(Instant::now);
                    if self.expired() || since.elapsed() >= self.no_quorum_after {
                        return Outcome::Unreachable(answered);
                    }
                    tracing::debug!(answered, "too few RedLock servers answered; again");
                    let left = self.no_quorum_after.saturating_sub(since.elapsed());
                    Some(pause_after(failures).min(left))
                }
                Round::TooLate => Some(pause_after(failures)),
                Round::Queue(_) | Round::Again => None,
            };
            if !matches!(round, Round::Unreachable(_)) {
                unreachable_since = None;
            }
            if self.expired() {
                return Outcome::TimedOut;
            }
            if let Some(pause) = pause {
                // Servers that refuse connections answer at once: pause, not spin.
                failures = failures.saturating_add(1);
                tokio::time::sleep(self.left().map_or(pause, |left| left.min(pause))).await;
            } else {
                failures = 0;
            }
        }
    }

    /// Step 1: every server at once, waiting nowhere.
    async fn at_once(&self) -> Round {
        let mut attempt = self.attempt();
        let mut changes = attempt.held.subscribe();
        for i in 0..attempt.locks.len() {
            attempt.spawn(i, Some(Duration::ZERO), Some(self.try_limit()));
        }
        loop {
            changes.borrow_and_update();
            let answers = attempt.held.answers();
            let suspect = self.note(&answers);
            let round = match judge(&answers, &suspect, self.quorum) {
                Verdict::Win => return self.won(attempt).await,
                Verdict::Queue { gate } => Round::Queue(gate),
                Verdict::Unreachable(answered) => Round::Unreachable(answered),
                Verdict::Pending => {
                    if changes.changed().await.is_ok() {
                        continue;
                    }
                    Round::Again
                }
            };
            attempt.give_up().await;
            return round;
        }
    }

    /// Step 2: the gate, then the others in parallel.
    async fn gated(&self, gate: usize) -> Round {
        let mut attempt = self.attempt();
        let mut changes = attempt.held.subscribe();
        attempt.spawn(gate, self.left(), None);
        // While it queues on the gate alone, it checks every keepalive that a majority is
        // still there to grant: otherwise a gate held for long would hide a lost quorum.
        let mut probe = tokio::time::interval(self.clients[0].options().keepalive_interval());
        probe.tick().await;
        let gate_lost = loop {
            changes.borrow_and_update();
            match attempt.held.answers()[gate] {
                Answer::Trying => {}
                Answer::Granted => break attempt.held.signal(gate),
                Answer::Busy => return ended(attempt, Round::TimedOut).await,
                Answer::Failed => {
                    self.note(&attempt.held.answers());
                    return ended(attempt, Round::Again).await;
                }
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() {
                    return ended(attempt, Round::Again).await;
                },
                _ = probe.tick() => {
                    let answered = 1 + self.answering_besides(gate).await;
                    if answered < self.quorum {
                        return ended(attempt, Round::Unreachable(answered)).await;
                    }
                }
            }
        };
        let Some(gate_lost) = gate_lost else {
            return ended(attempt, Round::Again).await;
        };
        for i in (0..attempt.locks.len()).filter(|i| *i != gate) {
            attempt.spawn(i, self.left(), None);
        }
        // Only a gate behind servers seen down can be one of several: it gives up after a
        // lease without a grant, which ends any cycle between such gates.
        let bounded = gate > 0;
        let mut last_grant = Instant::now();
        let mut granted = 1;
        loop {
            let answers = attempt.held.answers();
            self.note(&answers);
            let count = |a: Answer| answers.iter().filter(|x| **x == a).count();
            if count(Answer::Granted) >= self.quorum {
                return self.won(attempt).await;
            }
            if count(Answer::Granted) > granted {
                (granted, last_grant) = (count(Answer::Granted), Instant::now());
            }
            if answers.len() - count(Answer::Failed) < self.quorum {
                let answered = count(Answer::Granted) + count(Answer::Busy);
                return ended(attempt, Round::Unreachable(answered)).await;
            }
            if count(Answer::Trying) == 0 {
                let round = if self.expired() {
                    Round::TimedOut
                } else {
                    Round::Again
                };
                return ended(attempt, round).await;
            }
            let round_end = last_grant + self.options.lease_duration();
            tokio::select! {
                biased;
                _ = gate_lost.lost() => return ended(attempt, Round::Again).await,
                () = sleep_until_if(bounded, round_end) => return ended(attempt, Round::Again).await,
                changed = changes.changed() => if changed.is_err() {
                    return ended(attempt, Round::Again).await;
                },
            }
        }
    }

    /// Ends `attempt` as won if its majority is still valid for long enough (a tenth of the
    /// lease): raises every member's server to the holding's token first.
    async fn won(&self, attempt: Attempt) -> Round {
        let min_validity = self.options.lease_duration() / 10;
        let Some(token) = attempt.held.win(min_validity) else {
            tracing::debug!("a RedLock majority with too little validity left; again");
            return ended(attempt, Round::TooLate).await;
        };
        let mut raises = JoinSet::new();
        for (i, lock) in attempt.locks.iter().enumerate() {
            let (held, lock) = (attempt.held.clone(), lock.clone());
            raises.spawn(async move { held.raise(i, &lock).await });
        }
        while raises.join_next().await.is_some() {}
        Round::Granted(Won {
            owner: attempt.owner,
            token,
            held: attempt.held,
            tasks: attempt.tasks,
        })
    }
}

/// Gives `attempt` up; then `round`.
async fn ended(attempt: Attempt, round: Round) -> Round {
    attempt.give_up().await;
    round
}

/// Sleeps until `at` if `bounded`; otherwise never resolves.
async fn sleep_until_if(bounded: bool, at: Instant) {
    if bounded {
        tokio::time::sleep_until(at.into()).await;
    } else {
        std::future::pending::<()>().await;
    }
}
