//! What this node is and what Redis lets the module do right now: the clock, the selected
//! database, and the context flags a command or a callback runs under.

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use redis_module::raw;

use crate::host::valkey;
use rlock_core::counters;

/// Redis's clock in Unix milliseconds (the one TTLs are measured with).
pub fn now_ms() -> i64 {
    unsafe { raw::RedisModule_Milliseconds.map_or(0, |f| f()) }
}

/// Selects database `db` on the context; false if Redis refused (no such database).
pub fn select_db(ctx: *mut raw::RedisModuleCtx, db: c_int) -> bool {
    let select = unsafe { raw::RedisModule_SelectDb };
    select.is_some_and(|f| unsafe { f(ctx, db) } == raw::REDISMODULE_OK as c_int)
}

/// The database the context has selected.
pub fn selected_db(ctx: *mut raw::RedisModuleCtx) -> c_int {
    unsafe { raw::RedisModule_GetSelectedDb.map_or(0, |f| f(ctx)) }
}

/// The context flags (`REDISMODULE_CTX_FLAGS_*`).
pub fn flags(ctx: *mut raw::RedisModuleCtx) -> u32 {
    (unsafe { raw::RedisModule_GetContextFlags.map_or(0, |f| f(ctx)) }) as u32
}

/// Whether the command comes from the master, an AOF being loaded, or (Valkey 9) the source
/// of an atomic slot migration, whose stream replays the module's replicated commands.
pub fn from_replication(ctx: *mut raw::RedisModuleCtx) -> bool {
    let mut replayed = raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING;
    if valkey::atomic_migration() {
        replayed |= valkey::SLOT_IMPORT_CLIENT;
    }
    flags(ctx) & replayed != 0
}

/// Whether the calling client may be blocked: not inside MULTI/EXEC or a script.
pub fn can_block(ctx: *mut raw::RedisModuleCtx) -> bool {
    let no_blocking = raw::REDISMODULE_CTX_FLAGS_MULTI
        | raw::REDISMODULE_CTX_FLAGS_LUA
        | raw::REDISMODULE_CTX_FLAGS_DENY_BLOCKING;
    flags(ctx) & no_blocking == 0
}

/// Whether the node runs in Redis Cluster mode.
pub fn is_cluster(ctx: *mut raw::RedisModuleCtx) -> bool {
    flags(ctx) & raw::REDISMODULE_CTX_FLAGS_CLUSTER != 0
}

/// Whether a command replayed from the master (or an AOF) runs in a cluster node. Outside a
/// cluster (`cluster-enabled` cannot change while the server runs, so it is read once) the
/// final release, which asks this, reads no context flags.
pub fn replayed_in_cluster(ctx: *mut raw::RedisModuleCtx) -> bool {
    static CLUSTER: OnceLock<bool> = OnceLock::new();
    if !*CLUSTER.get_or_init(|| is_cluster(ctx)) {
        return false;
    }
    let replayed = raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING;
    flags(ctx) & replayed != 0
}

/// The longest a module timer is armed for: ten years. Redis keeps a timer's due time in
/// microseconds, so a period much longer than this overflows and fires at once.
pub const MAX_TIMER_MS: i64 = 315_360_000_000;

/// A timer period Redis can hold: `ms` clamped to `0..=MAX_TIMER_MS`. A lease check armed
/// for a deadline further away comes back after ten years and arms again.
pub fn timer_period(ms: i64) -> i64 {
    ms.clamp(0, MAX_TIMER_MS)
}

/// A module timer's callback.
pub type TimerFn = extern "C" fn(*mut raw::RedisModuleCtx, *mut c_void);

/// Arms a module timer that calls `callback` with `data` in `period_ms` (clamped by
/// [`timer_period`]); its id, or `None` (then `data` is still the caller's). Every timer
/// the module arms goes through here and [`stop_timer`], and its callback starts with
/// [`timer_fired`]: `INFO rlock`'s `timers` counts the live ones.
pub fn create_timer(
    ctx: *mut raw::RedisModuleCtx,
    period_ms: i64,
    callback: TimerFn,
    data: *mut c_void,
) -> Option<u64> {
    let create = unsafe { raw::RedisModule_CreateTimer }?;
    let id = unsafe { create(ctx, timer_period(period_ms), Some(callback), data) };
    counters::TIMERS.up();
    Some(id)
}

/// Stops a timer that has not fired; the data it was armed with (`None`: it had fired, or
/// was stopped already, or is no timer of this module).
pub fn stop_timer(ctx: *mut raw::RedisModuleCtx, timer: u64) -> Option<*mut c_void> {
    let stop = unsafe { raw::RedisModule_StopTimer }?;
    let mut data: *mut c_void = std::ptr::null_mut();
    if unsafe { stop(ctx, timer, &mut data) } != raw::REDISMODULE_OK as c_int {
        return None;
    }
    counters::TIMERS.down();
    Some(data)
}

/// A timer of the module fired (its callback runs).
pub fn timer_fired() {
    counters::TIMERS.down();
}
