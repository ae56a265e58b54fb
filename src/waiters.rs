//! Server-side waiting (SPEC.md §3): per-lock FIFO queues of blocked clients, direct
//! handoff, and the timers that notice the end of a lease.
//!
//! Everything here runs on Redis's main thread, so the registry is a thread-local.
//! No borrow of it is ever held across a call into Redis.
//!
//! A queue exists only while a lock has waiters. For such a lock the module keeps one
//! timer armed at the lease deadline + 1 ms, and any keyspace event on the key (a `DEL`,
//! a script's unlock, Redis's own expiry, eviction) or a `FLUSHDB` arms an immediate
//! check. A check is idempotent: a free lock goes to the first waiter, a held one gets its
//! timer re-armed at its deadline.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::ffi::{c_int, c_void};
use std::ptr;

use redis_module::raw;

use crate::error::LockError;
use crate::info;
use crate::store::{api, LockKey, OwnedString};
use crate::{guard, token, TOKENS};

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
            arm(ctx, db, key.name(), now_ms().saturating_add(ttl));
        }
    }
    Ok(())
}

/// Hands the lock to the first waiter, if any: writes its holding (count 1, its lease,
/// a fresh token), replicates it, and unblocks it with the token. `key` must be free, or
/// still hold the holding being given up. Returns the new token.
pub fn hand_off(db: c_int, key: &LockKey) -> Result<Option<i64>, LockError> {
    let unblock = api!(RedisModule_UnblockClient);
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

/// The lease of `key` now ends at `deadline_ms`: make sure a check runs right after it.
pub fn deadline_changed(ctx: *mut raw::RedisModuleCtx, key: &[u8], deadline_ms: i64) {
    if with(|r| r.index.is_empty()) {
        return;
    }
    let db = selected_db(ctx);
    if queue_len(db, key) > 0 {
        arm(ctx, db, key, deadline_ms);
    }
}

/// A keyspace event on `key`: if the lock has waiters, check it right away.
pub fn on_key_event(ctx: *mut raw::RedisModuleCtx, key: &[u8], expired: bool) {
    if SELF_NOTIFYING.with(Cell::get) || with(|r| r.index.is_empty()) {
        return;
    }
    let db = selected_db(ctx);
    if queue_len(db, key) > 0 {
        schedule(ctx, db, key.to_vec(), 0, expired);
    }
}

/// A `FLUSHDB` (`db` ≥ 0) or `FLUSHALL` (`db` = -1) ended: check every lock with waiters.
pub fn on_flush(ctx: *mut raw::RedisModuleCtx, db: c_int) {
    let keys: Vec<(c_int, Vec<u8>)> = with(|r| {
        r.dbs
            .iter()
            .filter(|(d, _)| db < 0 || **d == db)
            .flat_map(|(d, qs)| qs.keys().map(move |k| (*d, k.clone())))
            .collect()
    });
    for (d, key) in keys {
        schedule(ctx, d, key, 0, false);
    }
}

/// Arms a check at `fire_at` (Unix ms) + 1, unless an earlier one is pending.
fn arm(ctx: *mut raw::RedisModuleCtx, db: c_int, key: &[u8], deadline_ms: i64) {
    let fire_at = deadline_ms.saturating_add(1);
    let earlier_pending = with(|r| match r.queue_mut(db, key) {
        Some(q) if q.armed_at.is_some_and(|t| t <= fire_at) => true,
        Some(q) => {
            q.armed_at = Some(fire_at);
            false
        }
        None => true,
    });
    if !earlier_pending {
        let delay = fire_at.saturating_sub(now_ms()).max(0);
        schedule(ctx, db, key.to_vec(), delay, true);
    }
}

struct Check {
    db: c_int,
    key: Vec<u8>,
    /// The check is for a lease that ran out (counted in `expiry_handoffs`).
    expiry: bool,
}

fn schedule(ctx: *mut raw::RedisModuleCtx, db: c_int, key: Vec<u8>, delay_ms: i64, expiry: bool) {
    let Some(create_timer) = (unsafe { raw::RedisModule_CreateTimer }) else {
        return;
    };
    let data = Box::into_raw(Box::new(Check { db, key, expiry }));
    unsafe { create_timer(ctx, delay_ms, Some(run_check), data.cast::<c_void>()) };
}

extern "C" fn run_check(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    // The timer hands us back the box made in `schedule`; it is ours to free.
    let check = unsafe { Box::from_raw(data.cast::<Check>()) };
    guard::callback("lock expiry timer", || {
        with(|r| {
            if let Some(q) = r.queue_mut(check.db, &check.key) {
                if q.armed_at.is_some_and(|t| t <= now_ms()) {
                    q.armed_at = None;
                }
            }
        });
        check_lock(ctx, &check)
    });
}

/// Hands a free lock to its first waiter, or re-arms the timer of a held one.
fn check_lock(ctx: *mut raw::RedisModuleCtx, check: &Check) -> Result<(), LockError> {
    if queue_len(check.db, &check.key) == 0 {
        return Ok(());
    }
    let select = api!(RedisModule_SelectDb);
    unsafe { select(ctx, check.db) };
    let name = OwnedString::new(ctx, &check.key)?;
    let mut result = Ok(());
    while_self_notifying(|| result = serve_or_rearm(ctx, check, &name));
    result
}

fn serve_or_rearm(
    ctx: *mut raw::RedisModuleCtx,
    check: &Check,
    name: &OwnedString,
) -> Result<(), LockError> {
    let key = LockKey::open(ctx, name.0, true)?;
    match key.read() {
        Ok(None) => {
            if hand_off(check.db, &key)?.is_some() && check.expiry {
                info::EXPIRY_HANDOFFS.bump();
            }
        }
        Ok(Some(_)) => {}
        // Not a lock any more: waiters keep waiting until it is one, or they time out.
        Err(_) => return Ok(()),
    }
    let ttl = key.ttl_ms()?;
    if ttl >= 0 && queue_len(check.db, &check.key) > 0 {
        arm(ctx, check.db, &check.key, now_ms().saturating_add(ttl));
    }
    Ok(())
}

unsafe extern "C" fn reply_granted(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    let token = unsafe {
        let bc = raw::RedisModule_GetBlockedClientHandle.map_or(ptr::null_mut(), |f| f(ctx));
        with(|r| r.handed.remove(&(bc as usize)));
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
    reply_token(ctx, handed)
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
    with(|r| {
        r.remove(bc);
        r.handed.remove(&(bc as usize));
    });
}

pub fn selected_db(ctx: *mut raw::RedisModuleCtx) -> c_int {
    unsafe { raw::RedisModule_GetSelectedDb.map_or(0, |f| f(ctx)) }
}

pub fn now_ms() -> i64 {
    unsafe { raw::RedisModule_Milliseconds.map_or(0, |f| f()) }
}
