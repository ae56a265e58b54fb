//! Script clients' turns on a lock with native waiters (`rlock.script-turn`,
//! docs/design/script-turns.md): whether they are on, and starting one when it is due.

use std::sync::atomic::Ordering;

use redis_module::raw;

use crate::host::{config, node};
use crate::store::publish;
use crate::waits::queues;
use rlock_core::error::LockError;
use rlock_core::{counters, registry};

/// Whether script clients get turns (`rlock.script-turn` > 0).
pub fn turns_on() -> bool {
    config::SCRIPT_TURN.load(Ordering::Relaxed) > 0
}

/// When the script clients' running turn on `key` ends, if turns are on and one runs.
pub fn scripts_until(ctx: *mut raw::RedisModuleCtx, key: &[u8]) -> Option<i64> {
    if !turns_on() {
        return None;
    }
    queues::scripts_until(node::selected_db(ctx), key, node::now_ms())
}

/// Starts the script clients' turn on `key` if it is due (`registry/turns.rs`): native
/// grants are then held back until the time returned, and whoever frees the lock publishes
/// its release, so that a script client waiting for it can take it.
pub fn scripts_turn(
    ctx: *mut raw::RedisModuleCtx,
    db: registry::Db,
    key: &[u8],
) -> Result<Option<i64>, LockError> {
    let hold_ms = config::SCRIPT_TURN.load(Ordering::Relaxed);
    if hold_ms <= 0 || !queues::scripts_may_be_due(db, key) {
        return Ok(None);
    }
    let scripts = publish::listeners(ctx, key)?;
    let until = queues::start_scripts_turn(db, key, scripts, node::now_ms(), hold_ms);
    if until.is_some() {
        counters::SCRIPT_TURNS.bump();
    }
    Ok(until)
}
