//! What the model's state is made of: the key as Redis holds it (a hash field by field, so
//! that an owner named like a layout's own field lands on that field, as in the module's
//! store), its queue as a hashable snapshot of the registry, the clock, the token counter,
//! and what every client saw (its waits and their replies, and the holdings its replies
//! gave it).

use std::collections::BTreeMap;

use rlock_core::kind::{Family, Kind};

/// Clients of the model; each has one owner name (`Settings::owners`).
pub const CLIENTS: usize = 3;
/// The lease of every acquisition, and the shorter one of a renewal (ms).
pub const LEASE: i64 = 100;
pub const SHORT_LEASE: i64 = 10;
/// Where the clock starts (Unix ms): fencing tokens are at least the clock in µs.
pub const START_MS: i64 = 1_000;

/// A hash's fields and values.
pub type Fields = BTreeMap<Vec<u8>, Vec<u8>>;

/// What the key is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    Gone,
    /// A plain lock, a read-write lock or a semaphore: whatever its fields say.
    Hash(Fields),
    /// A latch's count when it reads as an integer, another type when it does not.
    Str(Vec<u8>),
}

/// The key and its time to live.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Store {
    pub key: Key,
    /// When Redis expires the key (Unix ms).
    pub expires_at: Option<i64>,
}

/// One queued wait, in the registry's order of arrival.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Queued {
    /// Its number in [`State::waits`]; also its registry entry.
    pub wait: usize,
    pub owner: Vec<u8>,
    pub kind: Kind,
}

/// What a wait's client was told when the wait ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Reply {
    /// An integer: a fencing token, or a latch's 1.
    Granted(i64),
    /// Nil: its `WAIT` ran out, or it was cancelled.
    Nil,
    /// An error (its command's own, such as a refused upgrade).
    Error(&'static str),
    /// Its client closed: nobody to tell.
    Closed,
}

/// One wait, from its queueing on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Wait {
    pub client: usize,
    pub kind: Kind,
    /// The token of the holding written for it, if one was.
    pub token: Option<i64>,
    pub reply: Option<Reply>,
    /// How many times it ended (1 at most, by the registry's rule).
    pub ends: u8,
}

/// A holding a client was told it has, until its lease ends or it releases it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Held {
    pub owner: Vec<u8>,
    pub family: Family,
    /// (count, 0) of a plain lock, (reads, writes) of a read-write lock, (permits, 0).
    pub counts: (i64, i64),
    pub token: i64,
    /// When its lease ends (Unix ms).
    pub until: i64,
}

/// What a history broke, found the moment it happened.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flaws {
    /// A latch wait was let go while the count was above zero (or not a latch's).
    pub latch_early: bool,
    /// A wait ended by an event of another family.
    pub foreign_end: bool,
    /// A wait ended twice.
    pub double_end: bool,
    /// A lock, read-write or semaphore wait was answered with an integer that is not the
    /// token of a holding written for it.
    pub not_its_token: bool,
    /// A client was told a fresh token not above every one told before.
    pub token_back: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// Each client's owner name.
    pub owners: [Vec<u8>; CLIENTS],
    pub store: Store,
    pub queue: Vec<Queued>,
    pub now: i64,
    /// The token counter's last token (`TokenClock::last`).
    pub tokens: i64,
    /// The largest fresh token a client was told.
    pub told: i64,
    pub waits: Vec<Wait>,
    /// Holdings the clients were told of, sorted.
    pub held: Vec<Held>,
    /// The total set by the last `SEM.PERMITS` on the semaphore now there.
    pub total: Option<i64>,
    pub flaws: Flaws,
}

impl State {
    pub fn new(owners: [&str; CLIENTS]) -> State {
        State {
            owners: owners.map(|o| o.as_bytes().to_vec()),
            store: Store {
                key: Key::Gone,
                expires_at: None,
            },
            queue: Vec::new(),
            now: START_MS,
            tokens: 0,
            told: 0,
            waits: Vec::new(),
            held: Vec::new(),
            total: None,
            flaws: Flaws::default(),
        }
    }

    /// The client's wait that has not ended, if any (a blocked client has one).
    pub fn pending(&self, client: usize) -> Option<usize> {
        (0..self.waits.len())
            .find(|&w| self.waits[w].client == client && self.waits[w].reply.is_none())
    }

    /// The holding of `owner` in `family` a client was told of.
    pub fn holding(&self, owner: &[u8], family: Family) -> Option<&Held> {
        self.held
            .iter()
            .find(|h| h.owner == owner && h.family == family)
    }

    /// Records what `owner` holds in `family` now (nothing, when both counts are 0).
    pub fn hold(
        &mut self,
        owner: &[u8],
        family: Family,
        counts: (i64, i64),
        token: i64,
        until: i64,
    ) {
        self.held
            .retain(|h| !(h.owner == owner && h.family == family));
        if counts != (0, 0) {
            let owner = owner.to_vec();
            self.held.push(Held {
                owner,
                family,
                counts,
                token,
                until,
            });
            self.held.sort();
        }
    }
}
