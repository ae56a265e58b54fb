//! The waiter registry: per-lock FIFO queues of blocked clients, the grants whose reply
//! has not gone out, and the pending lease checks. Pure bookkeeping with no Redis types, so
//! that its rules are unit-tested alone:
//!
//! - a lock's waiters of one family (`kind.rs`) are served in the order they came, and a
//!   family's waits are taken out by its own paths alone (`take_lane`);
//! - a waiter leaves the registry exactly once, whoever takes it (a handoff, its `WAIT`
//!   running out, its disconnection), so it gets exactly one reply;
//! - a grant is taken exactly once: by its reply, or by a revocation when its client left;
//! - a lock has at most one pending check per time, the earliest, and one live lease timer:
//!   a timer replaced by an earlier one, or left by a queue that emptied, is handed back to
//!   be stopped;
//! - taking any waiter out costs O(log n), whatever its place: a queue is ordered by a
//!   number given at enqueueing, and the index says where each waiter is.
//!
//! `C` identifies a queued wait: a blocked client's handle's address, or a ticket's number
//! (server-made ids, hashed cheaply: `idhash.rs`).

use std::collections::HashMap;
use std::hash::Hash;
use std::rc::Rc;

use crate::idhash::{IdMap, IdSet};
use crate::kind::{Family, Kind};
use lanes::Queue;

/// A database number.
pub type Db = i32;

/// The most waits one pass serves, releases or takes out: a queue longer than that is
/// served on in later passes (a timer at once), so that no command, event or timer keeps
/// the event loop for long whatever was queued. About a millisecond of work.
pub const SLICE: usize = 256;

/// A client blocked in `LOCK.ACQUIRE ... WAIT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiter<C> {
    /// Unique for the module's lifetime (a handle's address may be reused).
    pub id: u64,
    pub client: C,
    /// A boxed slice, not a `Vec`: 8 bytes less in every queue slot.
    pub owner: Box<[u8]>,
    pub lease_ms: i64,
    /// The timer that ends its `WAIT`, if it has a limit.
    pub deadline_timer: Option<u64>,
    /// When its `WAIT` runs out (Unix ms, server time), if it has a limit: past it, the
    /// waiter is never granted the lock, even before its timer has fired.
    pub wait_until: Option<i64>,
    /// What it waits for: a plain lock, or a read or write hold of a read-write lock.
    pub kind: Kind,
}

/// A lock handed to a waiter whose reply has not gone out yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub db: Db,
    pub key: Vec<u8>,
    pub owner: Vec<u8>,
    pub token: i64,
    /// What was granted: a plain lock, or a read or write hold.
    pub kind: Kind,
}

/// Every queue, grant and pending check of one node. A lock's name is stored once, shared
/// by its queue and the index entries of its waiters.
#[derive(Debug)]
pub struct Registry<C> {
    dbs: IdMap<Db, HashMap<Rc<[u8]>, Queue<C>>>,
    /// Where each queued client waits: its lock and its number in the lock's queue.
    index: IdMap<C, (Db, Rc<[u8]>, u64)>,
    /// The number of the next waiter to come.
    next: u64,
    /// Lease timers of queues that emptied, not fired yet: to be stopped.
    stale_timers: IdSet<u64>,
    /// Clients handed a lock whose reply has not gone out yet.
    handed: IdMap<C, Grant>,
    /// An estimate of the bytes the queued waiters take.
    bytes: usize,
    /// The script clients' turns of locks handed on (`registry/turns.rs`).
    turns: HashMap<Db, HashMap<Vec<u8>, Turns>>,
}

impl<C> Default for Registry<C> {
    fn default() -> Self {
        Registry {
            dbs: IdMap::default(),
            index: IdMap::default(),
            next: 0,
            stale_timers: IdSet::default(),
            handed: IdMap::default(),
            bytes: 0,
            turns: HashMap::new(),
        }
    }
}

/// What one queued waiter costs, roughly: its slot in a queue, its owner id, and its
/// entry in the index. Slots cost more than their size: a B-tree's nodes hold 5 to 11
/// entries (×1.5 on average, with the node's header), a hash map's table is between 7/16
/// and 7/8 full, with a control byte per bucket (×1.65). The allocator rounds the owner up
/// to a multiple of 8 bytes (16 past 8).
fn cost<C>(waiter: &Waiter<C>) -> usize {
    let slot = std::mem::size_of::<(u64, Waiter<C>)>() * 3 / 2;
    let index = (std::mem::size_of::<(C, (Db, Rc<[u8]>, u64))>() + 1) * 33 / 20;
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
        let number = self.next;
        self.next += 1;
        self.index
            .insert(waiter.client, (db, Rc::clone(&name), number));
        queues.entry(name).or_default().insert(number, waiter);
    }

    /// Takes the first waiter of `family` out of the queue of `key`.
    pub fn pop_first(&mut self, db: Db, key: &[u8], family: Family) -> Option<Waiter<C>> {
        let waiter = self.queue_mut(db, key)?.pop_first(family)?;
        self.bytes = self.bytes.saturating_sub(cost(&waiter));
        self.index.remove(&waiter.client);
        self.drop_if_empty(db, key);
        Some(waiter)
    }

    /// The first waiter of `family` in the queue of `key`, left there.
    pub fn first(&self, db: Db, key: &[u8], family: Family) -> Option<&Waiter<C>> {
        self.dbs.get(&db)?.get(key)?.first(family)
    }

    /// The families with waits on `key`, the one whose first wait came first first.
    pub fn heads(&self, db: Db, key: &[u8]) -> Vec<Family> {
        self.dbs
            .get(&db)
            .and_then(|q| q.get(key))
            .map_or_else(Vec::new, Queue::heads)
    }

    /// Takes a queued client out of its queue: only the waiter `id`, when given. O(log n)
    /// in the waiters of its lock.
    pub fn take(&mut self, client: C, id: Option<u64>) -> Option<Waiter<C>> {
        let (db, key, number) = self.index.get(&client)?.clone();
        let queue = self.queue_mut(db, &key)?;
        let found = queue.get(number)?;
        if found.client != client || id.is_some_and(|id| found.id != id) {
            return None;
        }
        let waiter = queue.remove(number)?;
        self.bytes = self.bytes.saturating_sub(cost(&waiter));
        self.index.remove(&client);
        self.drop_if_empty(db, &key);
        Some(waiter)
    }

    /// The first `n` waiters of `key`, in their order of arrival: their owners and what
    /// they wait for.
    pub fn peek(&self, db: Db, key: &[u8], n: usize) -> Vec<(Vec<u8>, Kind)> {
        self.dbs
            .get(&db)
            .and_then(|q| q.get(key))
            .map_or_else(Vec::new, |q| {
                q.first_n(n)
                    .into_iter()
                    .map(|w| (w.owner.to_vec(), w.kind))
                    .collect()
            })
    }

    /// Where a queued client waits: its lock's database and name.
    pub fn location(&self, client: C) -> Option<(Db, &[u8])> {
        self.index.get(&client).map(|(db, key, _)| (*db, &key[..]))
    }

    /// Takes every queued client, queue by queue in FIFO order.
    pub fn take_all(&mut self) -> Vec<Waiter<C>> {
        let all = self
            .dbs
            .drain()
            .flat_map(|(_, queues)| queues.into_values())
            .flat_map(|q| {
                self.stale_timers.extend(q.check_timer);
                q.into_waiters()
            })
            .collect();
        self.index.clear();
        self.bytes = 0;
        all
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
            .map_or(0, Queue::len)
    }

    /// Number of waits of `family` queued on `key`.
    pub fn lane_len(&self, db: Db, key: &[u8], family: Family) -> usize {
        self.dbs
            .get(&db)
            .and_then(|queues| queues.get(key))
            .map_or(0, |q| q.lane_len(family))
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

    /// Records that the lock `key` was handed to `owner` from its queue (kept while the queue
    /// lasts, as a hint for reading the lock).
    pub fn handed_to(&mut self, db: Db, key: &[u8], owner: Box<[u8]>) {
        if let Some(queue) = self.queue_mut(db, key) {
            queue.handed_to = Some(owner);
        }
    }

    /// Whom the lock `key` was last handed to from its queue, while the queue lasts.
    pub fn last_handed(&self, db: Db, key: &[u8]) -> Option<&[u8]> {
        self.dbs.get(&db)?.get(key)?.handed_to.as_deref()
    }

    fn queue_mut(&mut self, db: Db, key: &[u8]) -> Option<&mut Queue<C>> {
        self.dbs.get_mut(&db)?.get_mut(key)
    }

    fn drop_if_empty(&mut self, db: Db, key: &[u8]) {
        if let Some(queues) = self.dbs.get_mut(&db) {
            if queues.get(key).is_some_and(Queue::is_empty) {
                if let Some(timer) = queues.remove(key).and_then(|q| q.check_timer) {
                    self.stale_timers.insert(timer);
                }
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

mod bulk;
mod checks;
mod lanes;
mod taking;
mod turns;

pub use bulk::Taken;
pub use turns::{scripts_due, Turns};

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
