//! One acquisition of a [`RedLock`](crate::RedLock) (an [`Election`]): its servers, its limits,
//! and what it learns of them as it goes: a fresh attempt on every server, which servers
//! failed their last try (the suspects) and which answer a `PING`, how long a try may take
//! and how much time is left. How it reaches a majority is in `majority.rs`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use crate::client::{Client, Owner};
use crate::pure::options::LockOptions;
use crate::pure::quorum::Answer;
use crate::several::attempt::Attempt;
use crate::several::keeper::Held;

/// One acquisition of a RedLock over `clients` (one per server, in the canonical order).
pub(crate) struct Election<'a> {
    pub(crate) clients: &'a [Client],
    pub(crate) key: &'a str,
    pub(crate) options: LockOptions,
    pub(crate) quorum: usize,
    /// `None`: no limit.
    pub(crate) deadline: Option<Instant>,
    /// How long rounds go on while too few servers answer.
    pub(crate) no_quorum_after: Duration,
    /// Per server: whether it failed its last try (shared by the RedLock's acquisitions).
    pub(crate) suspects: &'a Mutex<Vec<bool>>,
}

/// A won attempt: the owner id on every server, the holding's token, its members and the
/// tasks that keep them.
pub(crate) struct Won {
    pub(crate) owner: Arc<str>,
    pub(crate) token: u64,
    pub(crate) held: Arc<Held>,
    pub(crate) tasks: JoinSet<()>,
}

/// How an acquisition ended.
pub(crate) enum Outcome {
    Granted(Won),
    /// The wait limit passed while the lock was busy.
    TimedOut,
    /// Fewer than a majority of servers answered for longer than allowed.
    Unreachable(usize),
}

impl Election<'_> {
    /// A fresh attempt: a new owner id on every server.
    pub(super) fn attempt(&self) -> Attempt {
        let owner: Arc<str> = self.clients[0].next_owner_id().into();
        let locks = self
            .clients
            .iter()
            .map(|c| Owner::with_id(c, owner.clone()).lock(self.key.to_owned()))
            .map(|lock| lock.options(self.options))
            .collect::<Vec<_>>();
        let held = Arc::new(Held::new(self.key, locks.len(), self.quorum));
        Attempt {
            owner,
            locks,
            held,
            tasks: JoinSet::new(),
        }
    }

    /// Records which servers answered and which failed; the suspects now.
    pub(super) fn note(&self, answers: &[Answer]) -> Vec<bool> {
        let mut suspects = self.suspects.lock().unwrap_or_else(|p| p.into_inner());
        for (suspect, answer) in suspects.iter_mut().zip(answers) {
            match answer {
                Answer::Granted | Answer::Busy => *suspect = false,
                Answer::Failed => *suspect = true,
                Answer::Trying => {}
            }
        }
        suspects.clone()
    }

    /// How many servers other than `gate` answer a `PING` (in parallel, each within its
    /// response timeout).
    pub(super) async fn answering_besides(&self, gate: usize) -> usize {
        let mut probes = JoinSet::new();
        for (_, client) in self.clients.iter().enumerate().filter(|(i, _)| *i != gate) {
            let (client, key) = (client.clone(), self.key.to_owned());
            probes.spawn(async move { client.answers(&key).await });
        }
        let mut answering = 0;
        while let Some(answered) = probes.join_next().await {
            answering += usize::from(matches!(answered, Ok(true)));
        }
        answering
    }

    /// How long a try without `WAIT` may take before its server counts as failed.
    pub(super) fn try_limit(&self) -> Duration {
        let response = self.clients[0].options().response_timeout_duration();
        (self.options.lease_duration() / 5)
            .max(Duration::from_millis(100))
            .min(response)
    }

    /// The time left before the deadline; `None` without one.
    pub(super) fn left(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// Whether the deadline has passed.
    pub(super) fn expired(&self) -> bool {
        self.deadline.is_some_and(|d| d <= Instant::now())
    }
}
