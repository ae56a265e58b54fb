//! What the module watches outside its own commands: keyspace events on locks that have
//! waiters, `FLUSHDB`/`FLUSHALL`, replication role changes, the end of loading, and closed
//! connections (receivers of tickets).
//! (Replicas and AOF replays learn tokens from `LOCK.APPLY`; RDB files carry the counter.)

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use redis_module::raw;

use crate::handoff::{expiry, heartbeat, losses, ticket_wait};
use crate::host::ffi::api;
use crate::host::{config, gate, guard, node};
use crate::store;
use crate::store::persist;
use crate::waits::{queues, tickets};
use rlock_core::error::LockError;
use rlock_core::kind::Family;
use rlock_core::token::{self, TOKENS};
use rlock_core::watch::Cause;

/// Keyspace events (generic, expired, evicted, string): a `RESTORE` (or a `MIGRATE` into
/// this node) teaches the token counter the restored lock's token; any event on a lock with
/// waiters makes the module check it at once, and a string write on a countdown latch with
/// waits (a `DECRBY`, a `SET` to zero). Redis calls this for every such event on any key,
/// the module's own writes included, so it returns at once unless some client waits.
unsafe extern "C" fn on_key_event(
    ctx: *mut raw::RedisModuleCtx,
    class: c_int,
    event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    guard::entry("keyspace event", 0, || {
        if losses::active() && !store::self_notifying() {
            guard::callback("a listened key changed", || key_changed(ctx, event, key));
        }
        if class & raw::REDISMODULE_NOTIFY_STRING as c_int != 0 {
            if queues::any() && !store::self_notifying() {
                guard::callback("string write", || {
                    string_written(ctx, key);
                    Ok(())
                });
            }
            return 0;
        }
        if store::self_notifying() {
            return 0;
        }
        // Redis passes the event's name as a C string.
        let event = if event.is_null() {
            c""
        } else {
            unsafe { CStr::from_ptr(event) }
        };
        if event == c"restore" {
            guard::callback("learning a restored token", || store::learn_token(ctx, key));
        }
        if queues::any() {
            guard::callback("keyspace event", || {
                let name = redis_module::RedisString::string_as_slice(key);
                expiry::on_key_event(ctx, name, event);
                Ok(())
            });
        }
        keep_the_callers_db(ctx, event);
        0
    })
}

/// A keyspace event from outside the module on a key with listened holdings: a key that is
/// gone ended them all; a value written over it is read, and the holdings it no longer
/// has (or has with fewer holds) ended.
fn key_changed(
    ctx: *mut raw::RedisModuleCtx,
    event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> Result<(), LockError> {
    if event.is_null() {
        return Ok(());
    }
    // Redis passes the event's name as a C string.
    let event = unsafe { CStr::from_ptr(event) }.to_bytes();
    let name = redis_module::RedisString::string_as_slice(key);
    if !losses::tracks(ctx, name) {
        return Ok(());
    }
    if let Some(cause) = Cause::of_removal(event) {
        losses::key_gone(ctx, (node::selected_db(ctx), name), cause);
    } else if let Some(cause) = Cause::of_overwrite(event) {
        losses::settle(ctx, name, (cause, None))?;
    }
    Ok(())
}

/// A string written by a client: if it is a countdown latch with waits, it is checked on
/// the next turn of the event loop (never here: a keyspace event must not write), and its
/// waits go if its count is zero or less. Other locks' waits do not watch string writes.
fn string_written(ctx: *mut raw::RedisModuleCtx, key: *mut raw::RedisModuleString) {
    let db = node::selected_db(ctx);
    let name = redis_module::RedisString::string_as_slice(key);
    if queues::lane_len(db, name, Family::Latch) > 0 {
        expiry::arm(ctx, db, name, node::now_ms());
    }
}

/// The database of the last `move_from` event (-1: none pending).
static MOVED_FROM: AtomicI32 = AtomicI32::new(-1);

/// Valkey 8.1 runs module keyspace callbacks on the client executing the command and
/// selects the event's database on it without selecting the client's own back (fixed by
/// valkey-io/valkey#4024): after `MOVE key db` the client would be left in `db`. `MOVE`
/// notifies `move_from` (the client's database) then `move_to`: after `move_to`, the
/// client's database is selected again. (Where callbacks get a client of their own, as on
/// Redis, this selects a database on that client only.)
fn keep_the_callers_db(ctx: *mut raw::RedisModuleCtx, event: &CStr) {
    if event == c"move_from" {
        MOVED_FROM.store(node::selected_db(ctx), Ordering::Relaxed);
    } else if event == c"move_to" {
        let from = MOVED_FROM.swap(-1, Ordering::Relaxed);
        if from >= 0 {
            node::select_db(ctx, from);
        }
    }
}

/// Subscribes to the keyspace and server events the module needs, and starts the
/// heartbeat.
pub fn subscribe(ctx: *mut raw::RedisModuleCtx) -> Result<(), LockError> {
    let keyspace = api!(RedisModule_SubscribeToKeyspaceEvents);
    let classes = raw::REDISMODULE_NOTIFY_GENERIC
        | raw::REDISMODULE_NOTIFY_EXPIRED
        | raw::REDISMODULE_NOTIFY_EVICTED
        | raw::REDISMODULE_NOTIFY_STRING;
    unsafe { keyspace(ctx, classes as c_int, Some(on_key_event)) };
    let subscribe = api!(RedisModule_SubscribeToServerEvent);
    let events = [
        (raw::REDISMODULE_EVENT_FLUSHDB, on_flush as ServerEventFn),
        (
            raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED,
            on_role_change,
        ),
        (raw::REDISMODULE_EVENT_LOADING, on_loading),
        (raw::REDISMODULE_EVENT_SWAPDB, on_swapdb),
        (raw::REDISMODULE_EVENT_CLIENT_CHANGE, on_client_change),
    ];
    for (id, callback) in events {
        let event = raw::RedisModuleEvent { id, dataver: 1 };
        unsafe { subscribe(ctx, event, Some(callback)) };
    }
    heartbeat::start(ctx)
}

type ServerEventFn =
    unsafe extern "C" fn(*mut raw::RedisModuleCtx, raw::RedisModuleEvent, u64, *mut c_void);

unsafe extern "C" fn on_flush(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    guard::callback("flush event", || {
        if subevent != raw::REDISMODULE_SUBEVENT_FLUSHDB_END || data.is_null() {
            return Ok(());
        }
        // For this event Redis passes a RedisModuleFlushInfo.
        let db: c_int = unsafe { (*data.cast::<raw::RedisModuleFlushInfo>()).dbnum };
        losses::db_gone(ctx, db, Cause::Flushed);
        expiry::on_flush(ctx, db);
        Ok(())
    });
}

/// `SWAPDB a b`: the locks of both databases changed places, so every lock with waiters
/// in either is checked at once (a waiter waits for the key of its database, whatever now
/// holds it there; none is left waiting on a key no event will ever touch).
unsafe extern "C" fn on_swapdb(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _subevent: u64,
    data: *mut c_void,
) {
    guard::callback("swapdb event", || {
        if data.is_null() {
            return Ok(());
        }
        // For this event Redis passes a RedisModuleSwapDbInfo.
        let info = unsafe { &*data.cast::<raw::RedisModuleSwapDbInfo>() };
        losses::db_gone(ctx, info.dbnum_first, Cause::Swapped);
        losses::db_gone(ctx, info.dbnum_second, Cause::Swapped);
        if !queues::any() {
            return Ok(());
        }
        expiry::on_flush(ctx, info.dbnum_first);
        expiry::on_flush(ctx, info.dbnum_second);
        Ok(())
    });
}

/// A connection closed: if it received tickets (`LOCK.WAIT`), they leave their queues and
/// the grants in its mailbox are taken back.
unsafe extern "C" fn on_client_change(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    guard::callback("client change", || {
        let gone = subevent == raw::REDISMODULE_SUBEVENT_CLIENT_CHANGE_DISCONNECTED;
        if !gone || data.is_null() {
            return Ok(());
        }
        // For this event Redis passes a RedisModuleClientInfo.
        let id = unsafe { (*data.cast::<raw::RedisModuleClientInfo>()).id };
        losses::client_gone(id);
        if tickets::any_receiver() {
            ticket_wait::receiver_gone(ctx, id);
        }
        Ok(())
    });
}

/// Promotion: the token counter jumps to at least the clock + `rlock.token-gap` (see
/// `token.rs`: anchored to the clock, so that two replicas promoted one after the other
/// never count the same tokens), and the failover delay starts. Demotion: nobody may wait
/// here any more (Redis has already ended the waits of blocked clients; the checks armed here
/// end the tickets left, with `READONLY`).
unsafe extern "C" fn on_role_change(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    guard::callback("role change", || {
        match subevent {
            raw::REDISMODULE_EVENT_REPLROLECHANGED_NOW_MASTER => {
                TOKENS.jump(token::now_us(), config::token_gap());
                gate::promoted(node::now_ms());
                gate::role_changed(false);
            }
            raw::REDISMODULE_EVENT_REPLROLECHANGED_NOW_REPLICA => {
                gate::role_changed(true);
                losses::forget_holdings();
                // A check of each lock with waits refuses them, a slice a pass.
                expiry::on_flush(ctx, -1);
            }
            _ => {}
        }
        Ok(())
    });
}

/// After an RDB or AOF load, tokens jump ahead as on a promotion: tokens issued after the
/// last save that the files do not record (an AOF rewritten without the RDB preamble when
/// no lock remained) are at most `rlock.token-gap` ahead of the clock.
unsafe extern "C" fn on_loading(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    guard::callback("loading event", || {
        match subevent {
            raw::REDISMODULE_SUBEVENT_LOADING_AOF_START => {
                LOADING_AOF.store(true, Ordering::Relaxed)
            }
            raw::REDISMODULE_SUBEVENT_LOADING_ENDED => {
                heartbeat::loaded();
                if LOADING_AOF.swap(false, Ordering::Relaxed) {
                    persist::learn_tokens_from_keyspace(ctx);
                }
                TOKENS.jump(token::now_us(), config::token_gap());
            }
            _ => {}
        }
        Ok(())
    });
}

/// An AOF (not an RDB) is being loaded.
static LOADING_AOF: AtomicBool = AtomicBool::new(false);
