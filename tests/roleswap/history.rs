//! What every client saw: one record per command, with the client-side times (µs since the
//! run began) at which it was sent and its reply arrived.

use std::sync::{Arc, Mutex};
use std::time::Instant;

/// How a command ended, as its client saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Int(i64),
    Nil,
    Error(String),
    /// The connection broke (the node was killed or closed it): no reply can come.
    Lost,
    /// The node is up, but no reply came within the command's limit.
    NoReply,
    /// A reply came where none was due (a second reply to one command).
    Extra(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `LOCK.ACQUIRE key owner LEASE lease [WAIT wait]`, or `RWLOCK.ACQUIRE key owner
    /// READ|WRITE ...` (`shared`: a read hold, which other read holds may overlap).
    Acquire {
        lease: i64,
        wait: Option<i64>,
        shared: bool,
    },
    /// `LOCK.RENEW key owner LEASE lease TOKEN t` (or `RWLOCK.RENEW`).
    Renew { lease: i64 },
    /// `LOCK.RELEASE key owner TOKEN t`.
    Release,
    /// `LOCK.FORCERELEASE key`.
    Force,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub op: Op,
    pub key: String,
    /// Empty for a force release.
    pub owner: String,
    pub sent: u64,
    pub received: u64,
    pub outcome: Outcome,
}

/// The history of one run, shared by its clients.
#[derive(Clone)]
pub struct History {
    start: Instant,
    events: Arc<Mutex<Vec<Event>>>,
}

impl History {
    pub fn new() -> History {
        History {
            start: Instant::now(),
            events: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// µs since the run began.
    pub fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    pub fn record(&self, event: Event) {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event);
    }

    pub fn events(&self) -> Vec<Event> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
