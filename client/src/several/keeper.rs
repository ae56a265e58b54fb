//! The members of one attempt at a [`RedLock`](crate::RedLock) and, once it won, of its
//! holding: one slot per server, filled by a task per server (see `election.rs`).
//!
//! Before the win the slots say how each server answered (granted, busy, failed, slow);
//! the election reads them. After the win the same tasks keep a member on every server they
//! can reach: a server that was busy, slow or down, or whose member was lost, is queued on
//! again, so the holding survives the loss of any minority of servers while it holds. A
//! member is added only while a majority of live members holds: once fewer did (another
//! contender could have won meanwhile) the holding is lost for good.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::acquire::guard::Guard;
use crate::lock::Lock;
use crate::pure::commands;
use crate::pure::error::{Error, LossReason};
use crate::pure::holding::LostSignal;
use crate::pure::quorum::{quorum_deadline, Answer};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Open,
    Won,
    Closed,
}

/// The slots of one attempt, shared by its tasks, the election and the guard.
pub(crate) struct Held {
    key: String,
    quorum: usize,
    state: Mutex<State>,
    changes: watch::Sender<u64>,
}

struct State {
    answers: Vec<Answer>,
    members: Vec<Option<Guard>>,
    phase: Phase,
    /// The holding's token, which every member's server is raised to (set at the win).
    floor: u64,
}

impl Held {
    pub(crate) fn new(key: &str, servers: usize, quorum: usize) -> Held {
        Held {
            key: key.to_owned(),
            quorum,
            state: Mutex::new(State {
                answers: vec![Answer::Trying; servers],
                members: (0..servers).map(|_| None).collect(),
                phase: Phase::Open,
                floor: 0,
            }),
            changes: watch::Sender::new(0),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A receiver that sees every later change of the slots.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Records server `i`'s answer, while the attempt is open.
    pub(crate) fn answer(&self, i: usize, answer: Answer) {
        let mut state = self.state();
        if state.phase == Phase::Open && state.answers[i] != Answer::Granted {
            state.answers[i] = answer;
            drop(state);
            self.changed();
        }
    }

    /// The answers so far, in the canonical order.
    pub(crate) fn answers(&self) -> Vec<Answer> {
        self.state().answers.clone()
    }

    /// Makes `guard` the member of server `i`, unless the attempt was given up or the
    /// holding is lost; then the guard comes back, for the caller to release. A lost member
    /// it replaces is released in the background.
    pub(crate) fn add(&self, i: usize, guard: Guard) -> Result<LostSignal, Guard> {
        let mut state = self.state();
        let lost = state.phase == Phase::Won && live(&state) < self.quorum;
        if state.phase == Phase::Closed || lost {
            return Err(guard);
        }
        let signal = guard.lost_signal();
        state.answers[i] = Answer::Granted;
        let replaced = state.members[i].replace(guard);
        drop(state);
        drop(replaced);
        self.changed();
        Ok(signal)
    }

    /// Ends the attempt as won if `quorum` members are live and surely hold for at least
    /// `min_validity`; the holding's token (the largest member token) then.
    pub(crate) fn win(&self, min_validity: Duration) -> Option<u64> {
        let mut state = self.state();
        let until = valid_until(&state, self.quorum)?;
        if state.phase != Phase::Open || until < Instant::now() + min_validity {
            return None;
        }
        state.phase = Phase::Won;
        state.floor = state.members.iter().flatten().map(Guard::token).max()?;
        let floor = state.floor;
        drop(state);
        self.changed();
        Some(floor)
    }

    /// The loss signal of server `i`'s member, if it has one.
    pub(crate) fn signal(&self, i: usize) -> Option<LostSignal> {
        self.state().members[i].as_ref().map(Guard::lost_signal)
    }

    /// Whether the attempt was won (and the holding not given up): its tasks keep members.
    pub(crate) fn is_won(&self) -> bool {
        self.state().phase == Phase::Won
    }

    /// Resolves once the attempt was won or given up; true if won.
    pub(crate) async fn decided(&self) -> bool {
        self.reached(|phase| phase != Phase::Open).await == Phase::Won
    }

    /// Resolves once the attempt (or the holding) was given up.
    pub(crate) async fn closed(&self) {
        self.reached(|phase| phase == Phase::Closed).await;
    }

    /// The first phase that is `done` (`Closed` if the slots can no longer change).
    async fn reached(&self, done: impl Fn(Phase) -> bool) -> Phase {
        let mut changes = self.subscribe();
        loop {
            let phase = self.state().phase;
            if done(phase) {
                return phase;
            }
            if changes.changed().await.is_err() {
                return Phase::Closed;
            }
        }
    }

    /// Gives the attempt (or the holding) up: its members, to release.
    pub(crate) fn close(&self) -> Vec<Guard> {
        let mut state = self.state();
        state.phase = Phase::Closed;
        let members = state.members.iter_mut().filter_map(Option::take).collect();
        drop(state);
        self.changed();
        members
    }

    /// How many members live now (a clock check, as [`Guard::is_lost`]).
    pub(crate) fn live(&self) -> usize {
        live(&self.state())
    }

    /// The fencing tokens of the live members, in the canonical order.
    pub(crate) fn tokens(&self) -> Vec<u64> {
        let state = self.state();
        let live = state.members.iter().flatten().filter(|g| !g.is_lost());
        live.map(Guard::token).collect()
    }

    /// True once fewer than a majority of members surely hold.
    pub(crate) fn is_lost(&self) -> bool {
        self.live() < self.quorum
    }

    /// The reason of a lost member, if one is.
    pub(crate) fn a_loss(&self) -> Option<LossReason> {
        let state = self.state();
        state.members.iter().flatten().find_map(Guard::loss_reason)
    }

    /// Until when a majority of members surely hold (now, once they do not).
    pub(crate) fn valid_until(&self) -> Instant {
        valid_until(&self.state(), self.quorum).unwrap_or_else(Instant::now)
    }

    /// Resolves once fewer than a majority of members hold, with the reason of a lost one;
    /// by their deadlines at the latest (each member's signal has a timer of its own).
    pub(crate) async fn lost(&self) -> LossReason {
        let mut changes = self.subscribe();
        loop {
            let signals: Vec<LostSignal> = {
                let state = self.state();
                changes.borrow_and_update();
                let live = state.members.iter().flatten().filter(|g| !g.is_lost());
                live.map(Guard::lost_signal).collect()
            };
            if signals.len() < self.quorum {
                return self.a_loss().unwrap_or(LossReason::Expired);
            }
            let enough = signals.len() + 1 - self.quorum;
            tokio::select! {
                _ = losses(signals, enough) => {}
                _ = changes.changed() => {}
            }
        }
    }

    /// Raises the server of member `i` to the holding's token (`LOCK.RAISE`), so that any
    /// later majority, which shares a server with this one, gets a larger token.
    pub(crate) async fn raise(&self, i: usize, lock: &Lock) {
        let (owner, token, floor) = {
            let state = self.state();
            match &state.members[i] {
                Some(g) if state.floor > g.token() => {
                    (g.owner().to_owned(), g.token(), state.floor)
                }
                _ => return,
            }
        };
        let cmd = commands::raise(&self.key, &owner, token, floor);
        match lock.query::<Option<u64>>(&cmd).await {
            Ok(Some(counter)) if counter >= floor => {}
            Ok(Some(counter)) => tracing::warn!(server = lock.server(), counter, floor, "a server did not learn the RedLock's token (past its bound): later tokens may be lower"),
            Ok(None) => tracing::debug!(server = lock.server(), "the member was lost before its server was raised"),
            Err(err) => tracing::warn!(server = lock.server(), %err, "could not raise a server's tokens: later tokens may be lower"),
        }
    }

    /// Releases every member at once; whether the holding was lost before, a loss reason,
    /// and the members' errors.
    pub(crate) async fn release(&self) -> (bool, Option<LossReason>, Vec<Error>) {
        let (lost, reason) = (self.is_lost(), self.a_loss());
        let mut members = self.close();
        let pending: Vec<_> = members.iter_mut().map(Guard::start_release).collect();
        let mut errors = Vec::new();
        for release in pending {
            if let Err(err) = release.await {
                errors.push(err);
            }
        }
        (lost, reason, errors)
    }
}

fn live(state: &State) -> usize {
    state
        .members
        .iter()
        .flatten()
        .filter(|g| !g.is_lost())
        .count()
}

fn valid_until(state: &State, quorum: usize) -> Option<Instant> {
    let live = state.members.iter().flatten().filter(|g| !g.is_lost());
    let deadlines: Vec<Instant> = live.map(Guard::valid_until).collect();
    quorum_deadline(&deadlines, quorum)
}

/// Resolves once `enough` of `signals` fired.
pub(crate) async fn losses(signals: Vec<LostSignal>, enough: usize) {
    let mut fired = tokio::task::JoinSet::new();
    for signal in signals {
        fired.spawn(async move { signal.lost().await });
    }
    let mut seen = 0;
    while seen < enough && fired.join_next().await.is_some() {
        seen += 1;
    }
}
