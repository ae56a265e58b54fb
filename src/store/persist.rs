//! Durable fencing tokens (SPEC.md §5): the token counter rides in every RDB file (and so
//! in AOF files with an RDB preamble, and in the full sync a replica loads) as a module
//! auxiliary field. The replication stream and AOF commands carry tokens in `LOCK.APPLY`.
//! An AOF rewritten without the preamble holds remaining locks as plain hashes: after
//! loading an AOF the module reads the `@token` of every lock left. The wall-clock floor of
//! `token.rs` covers the rest.
//!
//! The module registers a data type only for this field: no key ever has that type.
//!
//! On servers with `aux_save2` (Redis 7.2+, Valkey) the field is written only while the
//! counter is ahead of the wall clock, the one case the clock floor does not cover; so an
//! RDB saved at any other time loads into a server without the module. Redis 7.0 writes
//! the field in every RDB (`aux_save`), and such a file needs the module to load.

use std::ffi::{c_int, c_void};

use redis_module::native_types::RedisType;
use redis_module::raw;

use crate::host::{guard, node};
use crate::store::learn_token_of;
use rlock_core::token::{self, TOKENS};

/// Version of the auxiliary field's encoding.
const ENCODING_VERSION: i32 = 0;

/// The data type that carries the counter; its name must be exactly nine characters.
pub static TOKEN_AUX: RedisType = RedisType::new(
    "rlock-tok",
    ENCODING_VERSION,
    raw::RedisModuleTypeMethods {
        // Version 5 brought `aux_save2`, which Redis 7.0 does not read: it calls `aux_save`.
        version: 5,
        rdb_load: None,
        rdb_save: None,
        aof_rewrite: None,
        free: Some(free_nothing),
        mem_usage: None,
        digest: None,
        aux_load: Some(aux_load),
        aux_save: Some(aux_save),
        aux_save2: Some(aux_save_when_needed),
        aux_save_triggers: raw::REDISMODULE_AUX_AFTER_RDB as c_int,
        free_effort: None,
        unlink: None,
        copy: None,
        defrag: None,
        copy2: None,
        free_effort2: None,
        mem_usage2: None,
        unlink2: None,
    },
);

unsafe extern "C" fn aux_save(rdb: *mut raw::RedisModuleIO, when: c_int) {
    guard::entry("saving the token counter", (), || {
        if when == raw::REDISMODULE_AUX_AFTER_RDB as c_int {
            raw::save_signed(rdb, TOKENS.last());
        }
    });
}

/// `aux_save2`: writing nothing leaves no trace of the module in the RDB.
unsafe extern "C" fn aux_save_when_needed(rdb: *mut raw::RedisModuleIO, when: c_int) {
    guard::entry("saving the token counter", (), || {
        if when == raw::REDISMODULE_AUX_AFTER_RDB as c_int && counter_needed(token::now_us()) {
            raw::save_signed(rdb, TOKENS.last());
        }
    });
}

/// Whether the counter must be saved: it is at or ahead of the clock floor `now_us`.
fn counter_needed(now_us: i64) -> bool {
    TOKENS.last() >= now_us
}

unsafe extern "C" fn aux_load(rdb: *mut raw::RedisModuleIO, encver: c_int, when: c_int) -> c_int {
    let err = raw::REDISMODULE_ERR as c_int;
    guard::entry("loading the token counter", err, || {
        if encver != ENCODING_VERSION || when != raw::REDISMODULE_AUX_AFTER_RDB as c_int {
            return err;
        }
        match raw::load_signed(rdb) {
            Ok(last) => {
                TOKENS.observe_issued(last);
                raw::REDISMODULE_OK as c_int
            }
            Err(_) => err,
        }
    })
}

unsafe extern "C" fn free_nothing(_value: *mut c_void) {
    // No key ever has this type: Redis never has a value of it to free.
    guard::entry("freeing a value", (), || {});
}

/// Learns the token of every lock in every database (after an AOF load).
pub fn learn_tokens_from_keyspace(ctx: *mut raw::RedisModuleCtx) {
    let (Some(create), Some(scan), Some(destroy)) = (unsafe {
        (
            raw::RedisModule_ScanCursorCreate,
            raw::RedisModule_Scan,
            raw::RedisModule_ScanCursorDestroy,
        )
    }) else {
        return;
    };
    // Redis refuses to select past its last database; 1024 bounds the loop regardless.
    for db in 0..1024 {
        if !node::select_db(ctx, db) {
            break;
        }
        let cursor = unsafe { create() };
        while unsafe { scan(ctx, cursor, Some(observe_key), std::ptr::null_mut()) } != 0 {}
        unsafe { destroy(cursor) };
    }
    node::select_db(ctx, 0);
}

unsafe extern "C" fn observe_key(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    key: *mut raw::RedisModuleKey,
    _privdata: *mut c_void,
) {
    // Only a hash of the lock's shape, with a token within bounds, teaches the counter.
    guard::callback("learning a token after an AOF load", || {
        learn_token_of(ctx, name, key)
    });
}
