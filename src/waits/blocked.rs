//! The mechanics of a client blocked in `LOCK.ACQUIRE ... WAIT`: blocking it, its `WAIT`
//! deadline, unblocking it with an [`Outcome`], and its reply.
//!
//! Redis 7.0 loses the reply of a module-blocked client whose timeout (or `CLIENT UNBLOCK`)
//! is processed in the same event-loop turn as the module's unblock: neither callback runs.
//! So a waiter is blocked without a Redis timeout callback, and its `WAIT` limit is a
//! module timer that unblocks it through `RedisModule_UnblockClient`, like a handoff does.
//! Both decide on the main thread by taking the waiter out of its queue: exactly one wins,
//! and the client always gets one reply. (`CLIENT UNBLOCK` therefore answers 0 for a
//! waiter; closing the connection ends a wait.)

use std::ffi::{c_int, c_void};
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};

use redis_module::raw;

use crate::host::ffi::api;
use crate::host::{guard, node};
use crate::waits::queues::{self, Bc};
use rlock_core::error::LockError;
use rlock_core::reply::{error_line, Outcome};
use rlock_core::rwlock::Kind;

/// Called when a blocked client disconnects.
pub type OnDisconnect = unsafe extern "C" fn(*mut raw::RedisModuleCtx, Bc);

/// The data of a wait's deadline timer: the wait and its registry entry.
pub struct Deadline {
    pub id: u64,
    pub client: usize,
}

/// A timer callback of a wait's deadline, handed a boxed [`Deadline`].
pub type OnDeadline = extern "C" fn(*mut raw::RedisModuleCtx, *mut c_void);

static NEXT_WAITER: AtomicU64 = AtomicU64::new(1);

/// A freshly blocked client: its handle and its waiter id.
pub struct Blocked {
    pub bc: Bc,
    pub id: u64,
}

/// Blocks the calling client; `on_disconnect` runs if it leaves first. The caller queues it
/// and arms its deadline ([`arm_deadline`]).
pub fn block(
    ctx: *mut raw::RedisModuleCtx,
    on_disconnect: OnDisconnect,
) -> Result<Blocked, LockError> {
    let block_client = api!(RedisModule_BlockClient);
    let set_on_disconnect = api!(RedisModule_SetDisconnectCallback);
    let bc = unsafe { block_client(ctx, Some(reply), None, Some(free_outcome), 0) };
    if bc.is_null() {
        return Err(LockError::MissingApi("RedisModule_BlockClient"));
    }
    unsafe { set_on_disconnect(bc, Some(on_disconnect)) };
    let id = NEXT_WAITER.fetch_add(1, Ordering::Relaxed);
    Ok(Blocked { bc, id })
}

/// Arms the deadline timer of the wait `id` (registry entry `client`) when `wait_ms` > 0
/// (more than ten years waits ten years, the longest timer): `on_expiry` gets a boxed
/// [`Deadline`], and [`stop_deadline`] frees it if stopped first.
pub fn arm_deadline(
    ctx: *mut raw::RedisModuleCtx,
    id: u64,
    client: usize,
    wait_ms: i64,
    on_expiry: OnDeadline,
) -> Result<Option<u64>, LockError> {
    if wait_ms <= 0 {
        return Ok(None);
    }
    let data = Box::into_raw(Box::new(Deadline { id, client }));
    match node::create_timer(ctx, wait_ms, on_expiry, data.cast::<c_void>()) {
        Some(timer) => Ok(Some(timer)),
        None => {
            // Never armed: the box is still ours.
            drop(unsafe { Box::from_raw(data) });
            Err(LockError::MissingApi("RedisModule_CreateTimer"))
        }
    }
}

/// Unblocks a client that left its queue; its reply callback sends `outcome`.
pub fn unblock(bc: Bc, outcome: Outcome) -> Result<(), LockError> {
    let unblock = api!(RedisModule_UnblockClient);
    let outcome = Box::into_raw(Box::new(outcome));
    unsafe { unblock(bc, outcome.cast::<c_void>()) };
    Ok(())
}

/// Frees the handle of a client that disconnected while queued (Redis 7.0 frees a blocked
/// client's handle only through UnblockClient).
pub fn release_handle(bc: Bc) -> Result<(), LockError> {
    let unblock = api!(RedisModule_UnblockClient);
    unsafe { unblock(bc, ptr::null_mut()) };
    Ok(())
}

/// Cancels a waiter's deadline timer (it was served or left) and frees its data.
pub fn stop_deadline(ctx: *mut raw::RedisModuleCtx, timer: Option<u64>) {
    let data = timer.and_then(|timer| node::stop_timer(ctx, timer));
    if let Some(data) = data.filter(|d| !d.is_null()) {
        // Made by `Box::into_raw` in `arm_deadline`; a stopped timer never fires.
        drop(unsafe { Box::from_raw(data.cast::<Deadline>()) });
    }
}

/// How a wait of `kind` whose `WAIT` ran out ends: nil, or 0 for a latch's (its outcome is
/// 1 or 0).
pub fn timed_out(kind: Kind) -> Outcome {
    match kind {
        Kind::Latch => Outcome::Granted(0),
        Kind::Lock | Kind::Rw(_) | Kind::Permits(_) => Outcome::TimedOut,
    }
}

unsafe extern "C" fn reply(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    guard::entry("blocked reply", raw::REDISMODULE_OK as c_int, || {
        send_outcome(ctx);
        raw::REDISMODULE_OK as c_int
    })
}

fn send_outcome(ctx: *mut raw::RedisModuleCtx) {
    let outcome = unsafe {
        let bc = raw::RedisModule_GetBlockedClientHandle.map_or(ptr::null_mut(), |f| f(ctx));
        // The reply goes out now: its grants are delivered.
        queues::take_grant(bc);
        queues::take_batch(bc);
        raw::RedisModule_GetBlockedClientPrivateData
            .map(|f| f(ctx).cast::<Outcome>())
            .filter(|p| !p.is_null())
            .map(|p| &*p)
    };
    match outcome {
        Some(Outcome::Batch(batch)) => send_batch(ctx, batch),
        outcome => send_one(ctx, outcome),
    }
}

fn send_one(ctx: *mut raw::RedisModuleCtx, outcome: Option<&Outcome>) {
    unsafe {
        match outcome {
            Some(Outcome::Granted(t)) => raw::RedisModule_ReplyWithLongLong.map(|f| f(ctx, *t)),
            Some(Outcome::Refused(error)) => {
                let line = error_line(error);
                raw::RedisModule_ReplyWithError.map(|f| f(ctx, line.as_ptr()))
            }
            Some(Outcome::TimedOut | Outcome::Batch(_)) | None => {
                raw::RedisModule_ReplyWithNull.map(|f| f(ctx))
            }
        };
    }
}

/// The reply of `LOCK.GRANTS`: a flat array of wait ids and outcomes (a token, 0 for a
/// `WAIT` that ran out, or the refusal as a string `-<error line>`).
pub fn send_batch(ctx: *mut raw::RedisModuleCtx, batch: &[(u64, Outcome)]) {
    let len = (2 * batch.len()) as std::ffi::c_long;
    unsafe { raw::RedisModule_ReplyWithArray.map(|f| f(ctx, len)) };
    for (wait, outcome) in batch {
        let wait = i64::try_from(*wait).unwrap_or(i64::MAX);
        unsafe { raw::RedisModule_ReplyWithLongLong.map(|f| f(ctx, wait)) };
        match outcome {
            Outcome::Granted(token) => unsafe {
                raw::RedisModule_ReplyWithLongLong.map(|f| f(ctx, *token))
            },
            Outcome::Refused(text) => {
                let line = format!("-{}", error_line(text).to_string_lossy());
                let (ptr, len) = (line.as_ptr().cast(), line.len());
                unsafe { raw::RedisModule_ReplyWithStringBuffer.map(|f| f(ctx, ptr, len)) }
            }
            Outcome::TimedOut | Outcome::Batch(_) => unsafe {
                raw::RedisModule_ReplyWithLongLong.map(|f| f(ctx, 0))
            },
        };
    }
}

unsafe extern "C" fn free_outcome(_ctx: *mut raw::RedisModuleCtx, privdata: *mut c_void) {
    guard::entry("freeing a blocked reply", (), || {
        if !privdata.is_null() {
            // Made by `Box::into_raw` when unblocking; Redis calls this exactly once.
            drop(unsafe { Box::from_raw(privdata.cast::<Outcome>()) });
        }
    });
}
