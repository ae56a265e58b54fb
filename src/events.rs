//! What the module watches outside its own commands: keyspace events on locks that have
//! waiters, `FLUSHDB`/`FLUSHALL`, replication role changes, and (on a replica or while
//! loading an AOF) the tokens that replicated writes carry.

use std::ffi::{c_int, c_void};

use redis_module::{raw, Context, NotifyEvent};

use crate::error::LockError;
use crate::store::{api, LockKey, OwnedString};
use crate::{config, expiry, guard, token, TOKENS};

/// Keyspace events: any event on a lock with waiters makes the module check it at once.
pub fn on_key_event(ctx: &Context, _class: NotifyEvent, event: &str, key: &[u8]) {
    guard::callback("keyspace event", || {
        if event == "hset" {
            learn_token(ctx.ctx, key)?;
        }
        expiry::on_key_event(ctx.ctx, key, event == "expired");
        Ok(())
    });
}

/// On a replica (or while replaying an AOF), the module issues no tokens but must know the
/// highest one, to skip past it when promoted.
fn learn_token(ctx: *mut raw::RedisModuleCtx, key: &[u8]) -> Result<(), LockError> {
    let flags = unsafe { raw::RedisModule_GetContextFlags.map_or(0, |f| f(ctx)) } as u32;
    if flags & (raw::REDISMODULE_CTX_FLAGS_SLAVE | raw::REDISMODULE_CTX_FLAGS_LOADING) == 0 {
        return Ok(());
    }
    let name = OwnedString::new(ctx, key)?;
    if let Ok(Some(holding)) = LockKey::open(ctx, name.0, false)?.read() {
        TOKENS.observe(holding.token);
    }
    Ok(())
}

/// Subscribes to the server events the module needs.
pub fn subscribe(ctx: &Context) -> Result<(), LockError> {
    let subscribe = api!(RedisModule_SubscribeToServerEvent);
    let events = [
        (raw::REDISMODULE_EVENT_FLUSHDB, on_flush as ServerEventFn),
        (
            raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED,
            on_role_change,
        ),
        (raw::REDISMODULE_EVENT_LOADING, on_loading),
    ];
    for (id, callback) in events {
        let event = raw::RedisModuleEvent { id, dataver: 1 };
        unsafe { subscribe(ctx.ctx, event, Some(callback)) };
    }
    Ok(())
}

type ServerEventFn =
    unsafe extern "C" fn(*mut raw::RedisModuleCtx, raw::RedisModuleEvent, u64, *mut c_void);

unsafe extern "C" fn on_flush(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    if subevent != raw::REDISMODULE_SUBEVENT_FLUSHDB_END || data.is_null() {
        return;
    }
    // For this event Redis passes a RedisModuleFlushInfo.
    let db: c_int = unsafe { (*data.cast::<raw::RedisModuleFlushInfo>()).dbnum };
    guard::callback("flush event", || {
        expiry::on_flush(ctx, db);
        Ok(())
    });
}

unsafe extern "C" fn on_role_change(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    if subevent == raw::REDISMODULE_EVENT_REPLROLECHANGED_NOW_MASTER {
        TOKENS.skip(config::token_gap());
    }
}

/// After an RDB or AOF load, tokens skip ahead as on a promotion: tokens issued after the
/// last save that the files do not record (an AOF rewritten without the RDB preamble when
/// no lock remained) are at most `rlock.token-gap` ahead of the clock.
unsafe extern "C" fn on_loading(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    if subevent == raw::REDISMODULE_SUBEVENT_LOADING_ENDED {
        TOKENS.observe(token::now_us().saturating_add(config::token_gap()));
    }
}
