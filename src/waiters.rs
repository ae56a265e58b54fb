//! Server-side waiting (SPEC.md §3): per-lock FIFO queues of blocked clients, direct
//! handoff, and the timers that notice the end of a lease.
//!
//! Everything here runs on Redis's main thread, so the registry is a thread-local.
//! No borrow of it is ever held across a call into Redis.
//!
//! A queue exists only while a lock has waiters; `expiry.rs` watches those locks.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::ffi::{c_int, c_void};
use std::ptr;

use redis_module::raw;

use crate::error::LockError;
use crate::info;
use crate::store::{api, LockKey};
use crate::{token, TOKENS};

type Bc = *mut raw::RedisModuleBlockedClient;

struct Waiter {
    bc: Bc,
    owner: Vec<u8>,
    lease_ms: i64,
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
    /// Clients handed a lock whose reply has not gone out yet, with their token.
    handed: HashMap<usize, i64>,
}

thread_local! {
    static REGISTRY: RefCell<Registry> = RefCell::new(Registry::default());
    static SELF_NOTIFYING: Cell<bool> = const { Cell::new(false) };
}

fn with<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    REGISTRY.with(|r| f(&mut r.borrow_mut()))
}

/// Runs `f` (which emits keyspace events for the module's own writes) so that those
/// events do not schedule checks.
pub fn while_self_notifying(f: impl FnOnce()) {
    let before = SELF_NOTIFYING.with(|s| s.replace(true));
    f();
    SELF_NOTIFYING.with(|s| s.set(before));
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

    fn remove(&mut self, bc: Bc) -> bool {
        let Some((db, key)) = self.index.remove(&(bc as usize)) else {
            return false;
        };
        if let Some(queue) = self.queue_mut(db, &key) {
            queue.waiters.retain(|w| w.bc != bc);
        }
        self.drop_if_empty(db, &key);
        true
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

/// Blocks the calling client in the queue of `key` for at most `wait_ms` (0: no limit).
pub fn block(
    ctx: *mut raw::RedisModuleCtx,
    db: c_int,
    key: &LockKey,
    owner: &[u8],
    lease_ms: i64,
    wait_ms: i64,
) -> Result<(), LockError> {
    let block_client = api!(RedisModule_BlockClient);
    let on_disconnect = api!(RedisModule_SetDisconnectCallback);
    let bc = unsafe {
        block_client(
            ctx,
            Some(reply_granted),
            Some(reply_timeout),
            Some(free_token),
            wait_ms,
        )
    };
    if bc.is_null() {
        return Err(LockError::MissingApi("RedisModule_BlockClient"));
    }
    unsafe { on_disconnect(bc, Some(forget_disconnected)) };
    let name = key.name().to_vec();
    with(|r| {
        r.index.insert(bc as usize, (db, name.clone()));
        let queue = r.dbs.entry(db).or_default().entry(name).or_default();
        queue.waiters.push_back(Waiter {
            bc,
            owner: owner.to_vec(),
            lease_ms,
        });
    });
    if let Ok(ttl) = key.ttl_ms() {
        if ttl >= 0 {
            crate::expiry::arm(ctx, db, key.name(), now_ms().saturating_add(ttl));
        }
    }
    Ok(())
}

/// Hands the lock to the first waiter, if any: writes its holding (count 1, its lease,
/// a fresh token), replicates it, and unblocks it with the token. `key` must be free, or
/// still hold the holding being given up. Returns the new token.
pub fn hand_off(db: c_int, key: &LockKey) -> Result<Option<i64>, LockError> {
    let unblock = api!(RedisModule_UnblockClient);
    if queue_len(db, key.name()) == 0 {
        return Ok(None);
    }
    // Never overwrite something that is not a lock.
    let occupied = key.read()?.is_some();
    let Some(waiter) = with(|r| r.pop(db, key.name())) else {
        return Ok(None);
    };
    if occupied {
        key.delete()?;
    }
    let token = TOKENS.issue(token::now_us());
    let deadline = now_ms().saturating_add(waiter.lease_ms);
    key.write_fresh(&waiter.owner, token, deadline)?;
    with(|r| r.handed.insert(waiter.bc as usize, token));
    unsafe { unblock(waiter.bc, Box::into_raw(Box::new(token)).cast::<c_void>()) };
    info::HANDOFFS.bump();
    Ok(Some(token))
}

/// Serves waiters of a lock that is now free (called by a command that found it free).
pub fn serve_if_queued(db: c_int, key: &LockKey) -> Result<Option<i64>, LockError> {
    if queue_len(db, key.name()) == 0 {
        return Ok(None);
    }
    hand_off(db, key)
}

/// Whether any client waits anywhere (the fast path of every event).
pub fn any() -> bool {
    with(|r| !r.index.is_empty())
}

/// Whether the module is emitting events for its own writes.
pub fn self_notifying() -> bool {
    SELF_NOTIFYING.with(Cell::get)
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

unsafe extern "C" fn reply_granted(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    let token = unsafe {
        let bc = raw::RedisModule_GetBlockedClientHandle.map_or(ptr::null_mut(), |f| f(ctx));
        with(|r| {
            r.handed.remove(&(bc as usize));
            if r.handed.is_empty() {
                r.handed = HashMap::new();
            }
        });
        raw::RedisModule_GetBlockedClientPrivateData
            .map(|f| f(ctx).cast::<i64>())
            .filter(|p| !p.is_null())
            .map(|p| *p)
    };
    reply_token(ctx, token)
}

unsafe extern "C" fn reply_timeout(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    let bc = unsafe { raw::RedisModule_GetBlockedClientHandle.map_or(ptr::null_mut(), |f| f(ctx)) };
    // A handoff and the timeout can fall in the same event-loop turn: the lock was given,
    // so the client gets its token, not nil.
    let handed = with(|r| {
        r.remove(bc);
        r.handed.remove(&(bc as usize))
    });
    if handed.is_none() {
        info::WAIT_TIMEOUTS.bump();
    }
    let status = reply_token(ctx, handed);
    release_handle(bc);
    status
}

/// Redis 7.0 frees a blocked client's handle only through `UnblockClient`, even after a
/// timeout or a disconnect; the reply callback does not run for a client already gone.
fn release_handle(bc: Bc) {
    if bc.is_null() {
        return;
    }
    if let Some(unblock) = unsafe { raw::RedisModule_UnblockClient } {
        unsafe { unblock(bc, ptr::null_mut()) };
    }
}

fn reply_token(ctx: *mut raw::RedisModuleCtx, token: Option<i64>) -> c_int {
    unsafe {
        match token {
            Some(t) => raw::RedisModule_ReplyWithLongLong.map(|f| f(ctx, t)),
            None => raw::RedisModule_ReplyWithNull.map(|f| f(ctx)),
        };
    }
    raw::REDISMODULE_OK as c_int
}

unsafe extern "C" fn free_token(_ctx: *mut raw::RedisModuleCtx, privdata: *mut c_void) {
    if !privdata.is_null() {
        // Made by `Box::into_raw` in `hand_off`; Redis calls this exactly once.
        drop(unsafe { Box::from_raw(privdata.cast::<i64>()) });
    }
}

unsafe extern "C" fn forget_disconnected(_ctx: *mut raw::RedisModuleCtx, bc: Bc) {
    let handed = with(|r| {
        r.remove(bc);
        r.handed.remove(&(bc as usize))
    });
    // A client handed the lock was unblocked already; any other one must be, to be freed.
    if handed.is_none() {
        release_handle(bc);
    }
}

pub fn selected_db(ctx: *mut raw::RedisModuleCtx) -> c_int {
    unsafe { raw::RedisModule_GetSelectedDb.map_or(0, |f| f(ctx)) }
}

pub fn now_ms() -> i64 {
    unsafe { raw::RedisModule_Milliseconds.map_or(0, |f| f()) }
}
