//! The module's heartbeat: a timer every `stall::BEAT_MS` that lets the node notice its own
//! stalls (`stall`), keeps its role fresh for the gate, and re-arms the checks of queued
//! waiters when the failover delay moves (`CONFIG SET rlock.failover-delay` applies to a
//! delay under way, and to the waiters it holds back).

use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicI64, Ordering};

use redis_module::raw;

use crate::handoff::expiry;
use crate::host::{gate, guard, node};
use crate::waits::queues;
use rlock_core::error::LockError;
use rlock_core::stall::{BEAT_MS, STALLS};

/// When the failover delay ended at the last beat (Unix ms; 0: no delay).
static DELAY_END: AtomicI64 = AtomicI64::new(0);

/// Starts the heartbeat (at load). The end of loading the data starts it again
/// (`loaded`): loading, however long, is no stall.
pub fn start(ctx: *mut raw::RedisModuleCtx) -> Result<(), LockError> {
    gate::learn_role(ctx);
    STALLS.restart(node::now_ms());
    schedule(ctx)
}

/// The node finished loading its data (at startup, or a replica's full sync).
pub fn loaded() {
    STALLS.restart(node::now_ms());
}

fn schedule(ctx: *mut raw::RedisModuleCtx) -> Result<(), LockError> {
    match node::create_timer(ctx, BEAT_MS, beat, ptr::null_mut()) {
        Some(_) => Ok(()),
        None => Err(LockError::MissingApi("RedisModule_CreateTimer")),
    }
}

extern "C" fn beat(ctx: *mut raw::RedisModuleCtx, _data: *mut c_void) {
    node::timer_fired();
    guard::callback("heartbeat", || {
        let now = node::now_ms();
        STALLS.beat(now);
        expiry::stop_stale(ctx);
        gate::learn_role(ctx);
        let delay_end = gate::fenced_until(now).unwrap_or(0);
        if DELAY_END.swap(delay_end, Ordering::Relaxed) != delay_end && queues::any() {
            // Every lock with waiters is checked again: the gate says when to come back.
            expiry::on_flush(ctx, -1);
        }
        schedule(ctx)
    });
}
