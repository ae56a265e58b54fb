//! What the module watches outside its own commands: keyspace events on locks that have
//! waiters, `FLUSHDB`/`FLUSHALL`, replication role changes, and the end of loading.
//! (Replicas and AOF replays learn tokens from `LOCK.APPLY`; RDB files carry the counter.)

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};

use redis_module::raw;

use crate::error::LockError;
use crate::ffi::api;
use crate::token::{self, TOKENS};
use crate::{blocked, config, expiry, gate, guard, node, persist, store, waiters};

/// Keyspace events (generic, expired, evicted): any event on a lock with waiters makes the
/// module check it at once. Redis calls this for every such event on any key, the module's
/// own writes included, so it returns at once unless some client waits.
unsafe extern "C" fn on_key_event(
    ctx: *mut raw::RedisModuleCtx,
    _class: c_int,
    event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    if store::self_notifying() || !waiters::any() {
        return 0;
    }
    guard::callback("keyspace event", || {
        // Redis passes the event's name as a C string.
        let expired = !event.is_null() && unsafe { CStr::from_ptr(event) } == c"expired";
        let key = redis_module::RedisString::string_as_slice(key);
        expiry::on_key_event(ctx, key, expired);
        Ok(())
    });
    0
}

/// Subscribes to the keyspace and server events the module needs.
pub fn subscribe(ctx: *mut raw::RedisModuleCtx) -> Result<(), LockError> {
    let keyspace = api!(RedisModule_SubscribeToKeyspaceEvents);
    let classes = raw::REDISMODULE_NOTIFY_GENERIC
        | raw::REDISMODULE_NOTIFY_EXPIRED
        | raw::REDISMODULE_NOTIFY_EVICTED;
    unsafe { keyspace(ctx, classes as c_int, Some(on_key_event)) };
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
        unsafe { subscribe(ctx, event, Some(callback)) };
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

/// Promotion: tokens skip ahead, and the failover delay starts. Demotion: nobody may wait
/// here any more (Redis has already ended the waits of blocked clients; this ends any left).
unsafe extern "C" fn on_role_change(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    guard::callback("role change", || {
        match subevent {
            raw::REDISMODULE_EVENT_REPLROLECHANGED_NOW_MASTER => {
                TOKENS.skip(config::token_gap());
                gate::promoted(node::now_ms());
            }
            raw::REDISMODULE_EVENT_REPLROLECHANGED_NOW_REPLICA => {
                blocked::refuse(ctx, waiters::take_all(), gate::DEMOTED);
            }
            _ => {}
        }
        Ok(())
    });
}

/// After an RDB or AOF load, tokens skip ahead as on a promotion: tokens issued after the
/// last save that the files do not record (an AOF rewritten without the RDB preamble when
/// no lock remained) are at most `rlock.token-gap` ahead of the clock.
unsafe extern "C" fn on_loading(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    match subevent {
        raw::REDISMODULE_SUBEVENT_LOADING_AOF_START => LOADING_AOF.store(true, Ordering::Relaxed),
        raw::REDISMODULE_SUBEVENT_LOADING_ENDED => {
            if LOADING_AOF.swap(false, Ordering::Relaxed) {
                guard::callback("learning tokens after an AOF load", || {
                    persist::learn_tokens_from_keyspace(ctx);
                    Ok(())
                });
            }
            TOKENS.observe(token::now_us().saturating_add(config::token_gap()));
        }
        _ => {}
    }
}

/// An AOF (not an RDB) is being loaded.
static LOADING_AOF: AtomicBool = AtomicBool::new(false);
