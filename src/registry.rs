//! The waiter registry: per-lock FIFO queues of blocked clients, the grants whose reply
//! has not gone out, and the pending lease checks. Pure bookkeeping with no Redis types, so
//! that its rules are unit-tested alone:
//!
//! - a lock's waiters are served in the order they came;
//! - a waiter leaves the registry exactly once, whoever takes it (a handoff, its `WAIT`
//!   running out, its disconnection), so it gets exactly one reply;
//! - a grant is taken exactly once: by its reply, or by a revocation when its client left;
//! - a lock has at most one pending check per time, the earliest, and one live lease timer:
//!   a timer replaced by an earlier one is handed back to be stopped.
//!
//! `C` identifies a queued wait: a blocked client's handle's address, or a ticket's number
//! (server-made ids, hashed cheaply: `idhash.rs`).

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::rc::Rc;

use crate::idhash::IdMap;

/// A database number.
pub type Db = i32;

/// A client blocked in `LOCK.ACQUIRE ... WAIT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiter<C> {
    /// Unique for the module's lifetime (a handle's address may be reused).
    pub id: u64,
    pub client: C,
    pub owner: Vec<u8>,
    pub lease_ms: i64,
    /// The timer that ends its `WAIT`, if it has a limit.
    pub deadline_timer: Option<u64>,
    /// When its `WAIT` runs out (Unix ms, server time), if it has a limit: past it, the
    /// waiter is never granted the lock, even before its timer has fired.
    pub wait_until: Option<i64>,
}

/// A lock handed to a waiter whose reply has not gone out yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub db: Db,
    pub key: Vec<u8>,
    pub owner: Vec<u8>,
    pub token: i64,
}

#[derive(Debug)]
struct Queue<C> {
    waiters: VecDeque<Waiter<C>>,
    /// When the earliest pending check of this lock fires (Unix ms).
    check_at: Option<i64>,
    /// The timer of that check, until it fires or is replaced.
    check_timer: Option<u64>,
}

impl<C> Default for Queue<C> {
    fn default() -> Self {
        Queue {
            waiters: VecDeque::new(),
            check_at: None,
            check_timer: None,
        }
    }
}

/// Every queue, grant and pending check of one node. A lock's name is stored once, shared
/// by its queue and the index entries of its waiters.
#[derive(Debug)]
pub struct Registry<C> {
    dbs: IdMap<Db, HashMap<Rc<[u8]>, Queue<C>>>,
    /// Where each queued client waits.
    index: IdMap<C, (Db, Rc<[u8]>)>,
    /// Clients handed a lock whose reply has not gone out yet.
    handed: IdMap<C, Grant>,
    /// An estimate of the bytes the queued waiters take.
    bytes: usize,
}

impl<C> Default for Registry<C> {
    fn default() -> Self {
        Registry {
            dbs: IdMap::default(),
            index: IdMap::default(),
            handed: IdMap::default(),
            bytes: 0,
        }
    }
}

/// What one queued waiter costs, roughly: its slot in a queue, its owner id, and its
/// entry in the index. Queues and maps grow by doubling, so a slot costs more than its size:
/// a `VecDeque` is between half and wholly full (×1.5 on average), a hash map's table between
/// 7/16 and 7/8 full, with a control byte per bucket (×1.65). The allocator rounds the owner
/// up to a multiple of 8 bytes (16 past 8).
fn cost<C>(waiter: &Waiter<C>) -> usize {
    let slot = std::mem::size_of::<Waiter<C>>() * 3 / 2;
    let index = (std::mem::size_of::<(C, (Db, Rc<[u8]>))>() + 1) * 33 / 20;
    let owner = match waiter.owner.len() {
        0 => 0,
        n @ 1..=8 => n.next_multiple_of(8),
        n => n.next_multiple_of(16),
    };
    slot + owner + index
}

/// What one queue costs besides its waiters: its entry, with the lock's name.
fn queue_cost<C>(key: &[u8]) -> usize {
    std::mem::size_of::<(Rc<[u8]>, Queue<C>)>() + 2 * std::mem::size_of::<usize>() + key.len()
}

impl<C: Copy + Eq + Hash> Registry<C> {
    /// Queues a client at the end of the queue of `key`.
    pub fn enqueue(&mut self, db: Db, key: &[u8], waiter: Waiter<C>) {
        self.bytes += cost(&waiter);
        let queues = self.dbs.entry(db).or_default();
        let name = match queues.get_key_value(key) {
            Some((name, _)) => Rc::clone(name),
            None => {
                self.bytes += queue_cost::<C>(key);
                Rc::from(key)
            }
        };
        self.index.insert(waiter.client, (db, Rc::clone(&name)));
        queues.entry(name).or_default().waiters.push_back(waiter);
    }

    /// Takes the first waiter of `key` out of its queue.
    pub fn pop_first(&mut self, db: Db, key: &[u8]) -> Option<Waiter<C>> {
        let waiter = self.queue_mut(db, key)?.waiters.pop_front()?;
        self.bytes = self.bytes.saturating_sub(cost(&waiter));
        self.index.remove(&waiter.client);
        self.drop_if_empty(db, key);
        Some(waiter)
    }

    /// The first waiter of `key`, left in its queue.
    pub fn first(&self, db: Db, key: &[u8]) -> Option<&Waiter<C>> {
        self.dbs.get(&db)?.get(key)?.waiters.front()
    }

    /// Takes a queued client out of its queue: only the waiter `id`, when given.
    pub fn take(&mut self, client: C, id: Option<u64>) -> Option<Waiter<C>> {
        let (db, key) = self.index.get(&client)?.clone();
        let queue = self.queue_mut(db, &key)?;
        let at = queue
            .waiters
            .iter()
            .position(|w| w.client == client && id.is_none_or(|id| w.id == id))?;
        let waiter = queue.waiters.remove(at)?;
        self.bytes = self.bytes.saturating_sub(cost(&waiter));
        self.index.remove(&client);
        self.drop_if_empty(db, &key);
        Some(waiter)
    }

    /// Where a queued client waits: its lock's database and name.
    pub fn location(&self, client: C) -> Option<(Db, &[u8])> {
        self.index.get(&client).map(|(db, key)| (*db, &key[..]))
    }

    /// Takes every queued client, queue by queue in FIFO order.
    pub fn take_all(&mut self) -> Vec<Waiter<C>> {
        let all = self
            .dbs
            .drain()
            .flat_map(|(_, queues)| queues.into_values().flat_map(|q| q.waiters))
            .collect();
        self.index.clear();
        self.bytes = 0;
        all
    }

    /// Takes the waiters of `key`, in FIFO order.
    pub fn take_queue(&mut self, db: Db, key: &[u8]) -> Vec<Waiter<C>> {
        let mut taken = Vec::new();
        while let Some(waiter) = self.pop_first(db, key) {
            taken.push(waiter);
        }
        taken
    }

    /// Records that `client` was handed a lock whose reply has not gone out.
    pub fn record_grant(&mut self, client: C, grant: Grant) {
        self.handed.insert(client, grant);
    }

    /// Takes the grant of a client whose reply has not gone out, if any.
    pub fn take_grant(&mut self, client: C) -> Option<Grant> {
        let grant = self.handed.remove(&client);
        if self.handed.is_empty() {
            self.handed = IdMap::default();
        }
        grant
    }

    /// Number of clients queued on `key`.
    pub fn queue_len(&self, db: Db, key: &[u8]) -> usize {
        self.dbs
            .get(&db)
            .and_then(|queues| queues.get(key))
            .map_or(0, |q| q.waiters.len())
    }

    /// Clients queued anywhere.
    pub fn waiting(&self) -> usize {
        self.index.len()
    }

    /// An estimate of the bytes the queued waiters take.
    pub fn memory(&self) -> usize {
        self.bytes
    }

    /// Locks that have a queue.
    pub fn queues(&self) -> usize {
        self.dbs.values().map(HashMap::len).sum()
    }

    /// The locks with waiters, in `db` or in every db.
    pub fn queued_keys(&self, db: Option<Db>) -> Vec<(Db, Vec<u8>)> {
        self.dbs
            .iter()
            .filter(|(d, _)| db.is_none_or(|db| **d == db))
            .flat_map(|(d, queues)| queues.keys().map(move |k| (*d, k.to_vec())))
            .collect()
    }

    /// Records that a check of `key` fires at `at` (Unix ms); false when an earlier one is
    /// pending, or nobody waits, and no new check is needed.
    pub fn claim_check(&mut self, db: Db, key: &[u8], at: i64) -> bool {
        match self.queue_mut(db, key) {
            Some(q) if q.check_at.is_some_and(|t| t <= at) => false,
            Some(q) => {
                q.check_at = Some(at);
                true
            }
            None => false,
        }
    }

    /// Records `timer` as the timer of the check just claimed for `key`; returns the timer
    /// it replaces, which has not fired and is to be stopped.
    pub fn replace_check_timer(&mut self, db: Db, key: &[u8], timer: u64) -> Option<u64> {
        self.queue_mut(db, key)?.check_timer.replace(timer)
    }

    /// The check of `timer` ran at `now`: forget a pending time that has passed, and the
    /// timer, which has fired.
    pub fn check_ran(&mut self, db: Db, key: &[u8], now: i64, timer: u64) {
        if let Some(q) = self.queue_mut(db, key) {
            if q.check_at.is_some_and(|t| t <= now) {
                q.check_at = None;
            }
            if q.check_timer == Some(timer) {
                q.check_timer = None;
            }
        }
    }

    fn queue_mut(&mut self, db: Db, key: &[u8]) -> Option<&mut Queue<C>> {
        self.dbs.get_mut(&db)?.get_mut(key)
    }

    fn drop_if_empty(&mut self, db: Db, key: &[u8]) {
        if let Some(queues) = self.dbs.get_mut(&db) {
            if queues.get(key).is_some_and(|q| q.waiters.is_empty()) {
                queues.remove(key);
                self.bytes = self.bytes.saturating_sub(queue_cost::<C>(key));
            }
            if queues.is_empty() {
                self.dbs.remove(&db);
            }
        }
        // Give the memory of a burst of waiters back once they are all gone.
        if self.index.is_empty() {
            self.index = IdMap::default();
        }
        if self.dbs.is_empty() {
            self.dbs = IdMap::default();
        }
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
