//! Server-side waiting (SPEC.md §3): per-lock FIFO queues of blocked clients, direct
//! handoff, and the timers that notice the end of a lease.
//!
//! Everything here runs on Redis's main thread, so the registry is a thread-local.
//! No borrow of it is ever held across a call into Redis.
//!
//! A queue exists only while a lock has waiters; `expiry.rs` watches those locks.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use redis_module::raw;

use crate::blocked::{self, Outcome};
use crate::error::LockError;
use crate::info;
use crate::store::{api, Apply, LockKey, Name, OwnedString};
use crate::{token, TOKENS};

pub type Bc = *mut raw::RedisModuleBlockedClient;

/// A client blocked in `LOCK.ACQUIRE ... WAIT`.
pub struct Waiter {
    /// Unique for the module's lifetime (a handle's address may be reused).
    pub id: u64,
    pub bc: Bc,
    pub owner: Vec<u8>,
    pub lease_ms: i64,
    /// The timer that ends its `WAIT`, if it has a limit.
    pub deadline_timer: Option<raw::RedisModuleTimerID>,
}

/// A lock handed to a waiter whose reply has not gone out yet.
pub struct Grant {
    pub db: c_int,
    pub key: Vec<u8>,
    pub owner: Vec<u8>,
    pub token: i64,
}

#[derive(Default)]
struct Queue {
    waiters: VecDeque<Waiter>,
    /// When the earliest pending timer for this lock fires (Unix ms).
    armed_at: Option<i64>,
}

#[derive(Default)]
struct Registry {
    dbs: HashMap<c_int, HashMap<Vec<u8>, Queue>>,
    /// Where each blocked client is queued.
    index: HashMap<usize, (c_int, Vec<u8>)>,
    /// Clients handed a lock whose reply has not gone out yet.
    handed: HashMap<usize, Grant>,
}

thread_local! {
    static REGISTRY: RefCell<Registry> = RefCell::new(Registry::default());
}

/// Flags read on every keyspace event of the server, kept outside the registry so that
/// reading them costs one load.
static SELF_NOTIFYING: AtomicBool = AtomicBool::new(false);
/// How many clients are queued (the registry's index length).
static QUEUED: AtomicUsize = AtomicUsize::new(0);

fn with<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    REGISTRY.with(|r| f(&mut r.borrow_mut()))
}

/// Runs `f` (which emits keyspace events for the module's own writes) so that those
/// events do not schedule checks.
pub fn while_self_notifying(f: impl FnOnce()) {
    let before = SELF_NOTIFYING.swap(true, Ordering::Relaxed);
    f();
    SELF_NOTIFYING.store(before, Ordering::Relaxed);
}

/// (queued clients, locks with a queue).
pub fn gauges() -> (usize, usize) {
    with(|r| (r.index.len(), r.dbs.values().map(HashMap::len).sum()))
}

/// Number of clients queued on a lock.
pub fn queue_len(db: c_int, key: &[u8]) -> usize {
    with(|r| r.queue(db, key).map_or(0, |q| q.waiters.len()))
}

impl Registry {
    fn queue(&self, db: c_int, key: &[u8]) -> Option<&Queue> {
        self.dbs.get(&db)?.get(key)
    }

    fn queue_mut(&mut self, db: c_int, key: &[u8]) -> Option<&mut Queue> {
        self.dbs.get_mut(&db)?.get_mut(key)
    }

    fn pop(&mut self, db: c_int, key: &[u8]) -> Option<Waiter> {
        let waiter = self.queue_mut(db, key)?.waiters.pop_front()?;
        self.index.remove(&(waiter.bc as usize));
        self.drop_if_empty(db, key);
        Some(waiter)
    }

    fn drop_if_empty(&mut self, db: c_int, key: &[u8]) {
        if let Some(queues) = self.dbs.get_mut(&db) {
            if queues.get(key).is_some_and(|q| q.waiters.is_empty()) {
                queues.remove(key);
            }
            if queues.is_empty() {
                self.dbs.remove(&db);
            }
        }
        QUEUED.store(self.index.len(), Ordering::Relaxed);
        // Give the memory of a burst of waiters back to Redis once they are all gone.
        if self.index.is_empty() {
            self.index = HashMap::new();
        }
        if self.handed.is_empty() {
            self.handed = HashMap::new();
        }
        if self.dbs.is_empty() {
            self.dbs = HashMap::new();
        }
    }
}

/// Queues a blocked client at the end of the queue of `key`.
pub fn enqueue(db: c_int, key: &[u8], waiter: Waiter) {
    with(|r| {
        r.index.insert(waiter.bc as usize, (db, key.to_vec()));
        QUEUED.store(r.index.len(), Ordering::Relaxed);
        let queue = r
            .dbs
            .entry(db)
            .or_default()
            .entry(key.to_vec())
            .or_default();
        queue.waiters.push_back(waiter);
    });
}

/// Takes a queued client out of its queue (only the waiter `id`, when given).
pub fn take_waiter(bc: Bc, id: Option<u64>) -> Option<Waiter> {
    with(|r| {
        let (db, key) = r.index.get(&(bc as usize))?.clone();
        let queue = r.queue_mut(db, &key)?;
        let at = queue
            .waiters
            .iter()
            .position(|w| w.bc == bc && id.is_none_or(|id| w.id == id))?;
        let waiter = queue.waiters.remove(at)?;
        r.index.remove(&(bc as usize));
        r.drop_if_empty(db, &key);
        Some(waiter)
    })
}

/// Takes the grant of a client whose reply has not gone out, if any.
pub fn take_grant(bc: Bc) -> Option<Grant> {
    with(|r| {
        let grant = r.handed.remove(&(bc as usize));
        if r.handed.is_empty() {
            r.handed = HashMap::new();
        }
        grant
    })
}

/// Hands the lock to the first waiter, if any: writes its holding (count 1, its lease,
/// a fresh token), replicates it, and unblocks it with the token. `occupied`: the key still
/// holds the holding being given up (replaced); otherwise it is free. Returns the new token.
pub fn hand_off(db: c_int, key: &LockKey, occupied: bool) -> Result<Option<i64>, LockError> {
    let unblock = api!(RedisModule_UnblockClient);
    if !any() {
        return Ok(None);
    }
    let Some(waiter) = with(|r| r.pop(db, key.name())) else {
        return Ok(None);
    };
    blocked::stop_deadline(key.ctx(), waiter.deadline_timer);
    let token = TOKENS.issue(token::now_us());
    let owner = OwnedString::new(key.ctx(), &waiter.owner)?;
    let holding = Apply {
        owner: Name::of(&owner),
        holds: 1,
        token,
        deadline_ms: now_ms().saturating_add(waiter.lease_ms),
    };
    key.apply(&holding, occupied, false)?;
    let grant = Grant {
        db,
        key: key.name().to_vec(),
        owner: waiter.owner,
        token,
    };
    with(|r| r.handed.insert(waiter.bc as usize, grant));
    let outcome = Box::new(Outcome::Granted(token));
    unsafe { unblock(waiter.bc, Box::into_raw(outcome).cast::<c_void>()) };
    info::HANDOFFS.bump();
    Ok(Some(token))
}

/// Whether any client waits anywhere (the fast path of every event).
pub fn any() -> bool {
    QUEUED.load(Ordering::Relaxed) > 0
}

/// Whether the module is emitting events for its own writes.
pub fn self_notifying() -> bool {
    SELF_NOTIFYING.load(Ordering::Relaxed)
}

/// Records that a check of `key` will fire at `fire_at` (Unix ms); false when an earlier
/// one is already pending or nobody waits, and no new timer is needed.
pub fn claim_timer(db: c_int, key: &[u8], fire_at: i64) -> bool {
    with(|r| match r.queue_mut(db, key) {
        Some(q) if q.armed_at.is_some_and(|t| t <= fire_at) => false,
        Some(q) => {
            q.armed_at = Some(fire_at);
            true
        }
        None => false,
    })
}

/// A timer of `key` fired: forget a pending time that has passed.
pub fn timer_fired(db: c_int, key: &[u8], now: i64) {
    with(|r| {
        if let Some(q) = r.queue_mut(db, key) {
            if q.armed_at.is_some_and(|t| t <= now) {
                q.armed_at = None;
            }
        }
    });
}

/// The locks with waiters in `db` (every db when `db` < 0).
pub fn queued_keys(db: c_int) -> Vec<(c_int, Vec<u8>)> {
    with(|r| {
        r.dbs
            .iter()
            .filter(|(d, _)| db < 0 || **d == db)
            .flat_map(|(d, qs)| qs.keys().map(move |k| (*d, k.clone())))
            .collect()
    })
}

pub fn selected_db(ctx: *mut raw::RedisModuleCtx) -> c_int {
    unsafe { raw::RedisModule_GetSelectedDb.map_or(0, |f| f(ctx)) }
}

pub fn now_ms() -> i64 {
    unsafe { raw::RedisModule_Milliseconds.map_or(0, |f| f()) }
}
