//! The life of a client blocked in `LOCK.ACQUIRE ... WAIT`: blocking, its `WAIT` deadline,
//! its reply, and its disconnection.
//!
//! Redis 7.0 loses the reply of a module-blocked client whose timeout (or `CLIENT UNBLOCK`)
//! is processed in the same event-loop turn as the module's unblock: neither callback runs.
//! So a waiter is blocked without a Redis timeout callback, and its `WAIT` limit is a
//! module timer that unblocks it through `RedisModule_UnblockClient`, like a handoff does.
//! Both decide on the main thread by taking the waiter out of its queue: exactly one wins,
//! and the client always gets the token or nil. (`CLIENT UNBLOCK` therefore answers 0 for a
//! waiter; closing the connection ends a wait.)

use std::ffi::{c_int, c_void};
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};

use redis_module::raw;

use crate::error::LockError;
use crate::lock::{self, ReleaseStep};
use crate::store::{api, LockKey, Name, OwnedString};
use crate::waiters::{self, Bc, Grant, Waiter};
use crate::{commands, expiry, guard, info};

/// What a blocked client is unblocked with.
pub enum Outcome {
    Granted(i64),
    TimedOut,
}

/// The data of a waiter's deadline timer.
struct Deadline {
    id: u64,
    bc: Bc,
}

static NEXT_WAITER: AtomicU64 = AtomicU64::new(1);

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
    let create_timer = api!(RedisModule_CreateTimer);
    let bc = unsafe { block_client(ctx, Some(reply), None, Some(free_outcome), 0) };
    if bc.is_null() {
        return Err(LockError::MissingApi("RedisModule_BlockClient"));
    }
    unsafe { on_disconnect(bc, Some(forget_disconnected)) };
    let id = NEXT_WAITER.fetch_add(1, Ordering::Relaxed);
    let deadline_timer = (wait_ms > 0).then(|| {
        let data = Box::into_raw(Box::new(Deadline { id, bc }));
        unsafe { create_timer(ctx, wait_ms, Some(wait_expired), data.cast::<c_void>()) }
    });
    let waiter = Waiter {
        id,
        bc,
        owner: owner.to_vec(),
        lease_ms,
        deadline_timer,
    };
    waiters::enqueue(db, key.name(), waiter);
    if let Ok(ttl) = key.ttl_ms() {
        if ttl >= 0 {
            expiry::arm(ctx, db, key.name(), waiters::now_ms().saturating_add(ttl));
        }
    }
    Ok(())
}

/// Cancels a waiter's deadline timer (it was served or left) and frees its data.
pub fn stop_deadline(ctx: *mut raw::RedisModuleCtx, timer: Option<raw::RedisModuleTimerID>) {
    let (Some(timer), Some(stop)) = (timer, unsafe { raw::RedisModule_StopTimer }) else {
        return;
    };
    let mut data: *mut c_void = ptr::null_mut();
    if unsafe { stop(ctx, timer, &mut data) } == raw::REDISMODULE_OK as c_int && !data.is_null() {
        // Made by `Box::into_raw` in `block`; a stopped timer never fires.
        drop(unsafe { Box::from_raw(data.cast::<Deadline>()) });
    }
}

extern "C" fn wait_expired(_ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    // The timer hands back the box made in `block`; it is ours to free.
    let deadline = unsafe { Box::from_raw(data.cast::<Deadline>()) };
    guard::callback("wait deadline", || {
        // Still queued: nobody handed it the lock, so its WAIT ran out.
        if waiters::take_waiter(deadline.bc, Some(deadline.id)).is_some() {
            let unblock = api!(RedisModule_UnblockClient);
            let outcome = Box::into_raw(Box::new(Outcome::TimedOut));
            unsafe { unblock(deadline.bc, outcome.cast::<c_void>()) };
            info::WAIT_TIMEOUTS.bump();
        }
        Ok(())
    });
}

unsafe extern "C" fn reply(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    let token = unsafe {
        let bc = raw::RedisModule_GetBlockedClientHandle.map_or(ptr::null_mut(), |f| f(ctx));
        waiters::take_grant(bc);
        raw::RedisModule_GetBlockedClientPrivateData
            .map(|f| f(ctx).cast::<Outcome>())
            .filter(|p| !p.is_null())
            .and_then(|p| match *p {
                Outcome::Granted(token) => Some(token),
                Outcome::TimedOut => None,
            })
    };
    unsafe {
        match token {
            Some(t) => raw::RedisModule_ReplyWithLongLong.map(|f| f(ctx, t)),
            None => raw::RedisModule_ReplyWithNull.map(|f| f(ctx)),
        };
    }
    raw::REDISMODULE_OK as c_int
}

unsafe extern "C" fn free_outcome(_ctx: *mut raw::RedisModuleCtx, privdata: *mut c_void) {
    if !privdata.is_null() {
        // Made by `Box::into_raw` when unblocking; Redis calls this exactly once.
        drop(unsafe { Box::from_raw(privdata.cast::<Outcome>()) });
    }
}

unsafe extern "C" fn forget_disconnected(ctx: *mut raw::RedisModuleCtx, bc: Bc) {
    guard::callback("waiter disconnected", || {
        if let Some(waiter) = waiters::take_waiter(bc, None) {
            stop_deadline(ctx, waiter.deadline_timer);
            // Redis 7.0 frees a blocked client's handle only through UnblockClient.
            let unblock = api!(RedisModule_UnblockClient);
            unsafe { unblock(bc, ptr::null_mut()) };
        } else if let Some(grant) = waiters::take_grant(bc) {
            // Handed the lock, but gone before its reply: nobody will ever know it holds
            // it. Take the hold back once this callback is over.
            let create_timer = api!(RedisModule_CreateTimer);
            let data = Box::into_raw(Box::new(grant));
            unsafe { create_timer(ctx, 0, Some(revoke), data.cast::<c_void>()) };
        }
        Ok(())
    });
}

extern "C" fn revoke(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    // The timer hands back the box made in `forget_disconnected`.
    let grant = unsafe { Box::from_raw(data.cast::<Grant>()) };
    guard::callback("revoking an undelivered grant", || {
        let select = api!(RedisModule_SelectDb);
        unsafe { select(ctx, grant.db) };
        let name = OwnedString::new(ctx, &grant.key)?;
        let key = LockKey::open(ctx, name.0, true)?;
        let Ok(Some(holding)) = key.read() else {
            return Ok(());
        };
        if holding.token != grant.token {
            return Ok(());
        }
        match lock::release(Some(&holding), &grant.owner) {
            ReleaseStep::Remaining(count) => {
                let owner = OwnedString::new(ctx, &grant.owner)?;
                key.write_count(&Name::of(&owner), count)
            }
            ReleaseStep::Freed => commands::free(ctx, &key, commands::Replicate::Del),
            ReleaseStep::NotHeld => Ok(()),
        }
    });
}
