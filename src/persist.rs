//! Durable fencing tokens (SPEC.md §5): the token counter rides in every RDB file (and so
//! in AOF files with an RDB preamble, and in the full sync a replica loads) as a module
//! auxiliary field. The replication stream and AOF commands carry tokens in `LOCK.APPLY`.
//! An AOF rewritten without the preamble holds remaining locks as plain hashes: after
//! loading an AOF the module reads the `@token` of every lock left. The wall-clock floor of
//! `token.rs` covers the rest.
//!
//! The module registers a data type only for this field: no key ever has that type.

use std::ffi::{c_int, c_void};

use redis_module::native_types::RedisType;
use redis_module::raw;

use crate::args::strict_i64;
use crate::ffi::OwnedString;
use crate::store::token_field;
use crate::token::TOKENS;

/// Version of the auxiliary field's encoding.
const ENCODING_VERSION: i32 = 0;

/// The data type that carries the counter; its name must be exactly nine characters.
pub static TOKEN_AUX: RedisType = RedisType::new(
    "rlock-tok",
    ENCODING_VERSION,
    raw::RedisModuleTypeMethods {
        // Version 4 is the last that Redis 7.0 knows; later fields stay unused there.
        version: 4,
        rdb_load: None,
        rdb_save: None,
        aof_rewrite: None,
        free: Some(free_nothing),
        mem_usage: None,
        digest: None,
        aux_load: Some(aux_load),
        aux_save: Some(aux_save),
        aux_save2: None,
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
    if when == raw::REDISMODULE_AUX_AFTER_RDB as c_int {
        raw::save_signed(rdb, TOKENS.last());
    }
}

unsafe extern "C" fn aux_load(rdb: *mut raw::RedisModuleIO, encver: c_int, when: c_int) -> c_int {
    if encver != ENCODING_VERSION || when != raw::REDISMODULE_AUX_AFTER_RDB as c_int {
        return raw::REDISMODULE_ERR as c_int;
    }
    match raw::load_signed(rdb) {
        Ok(last) => {
            TOKENS.observe(last);
            raw::REDISMODULE_OK as c_int
        }
        Err(_) => raw::REDISMODULE_ERR as c_int,
    }
}

unsafe extern "C" fn free_nothing(_value: *mut c_void) {}

/// Learns the token of every lock in every database (after an AOF load).
pub fn learn_tokens_from_keyspace(ctx: *mut raw::RedisModuleCtx) {
    let (Some(select), Some(create), Some(scan), Some(destroy)) = (unsafe {
        (
            raw::RedisModule_SelectDb,
            raw::RedisModule_ScanCursorCreate,
            raw::RedisModule_Scan,
            raw::RedisModule_ScanCursorDestroy,
        )
    }) else {
        return;
    };
    // Redis refuses to select past its last database; 1024 bounds the loop regardless.
    for db in 0..1024 {
        if unsafe { select(ctx, db) } != raw::REDISMODULE_OK as c_int {
            break;
        }
        let cursor = unsafe { create() };
        while unsafe { scan(ctx, cursor, Some(observe_key), std::ptr::null_mut()) } != 0 {}
        unsafe { destroy(cursor) };
    }
    unsafe { select(ctx, 0) };
}

unsafe extern "C" fn observe_key(
    ctx: *mut raw::RedisModuleCtx,
    _name: *mut raw::RedisModuleString,
    key: *mut raw::RedisModuleKey,
    _privdata: *mut c_void,
) {
    let (Some(key_type), Some(hash_get), Ok(field)) = (
        unsafe { raw::RedisModule_KeyType },
        unsafe { raw::RedisModule_HashGet },
        token_field(),
    ) else {
        return;
    };
    if key.is_null() || unsafe { key_type(key) } as isize != raw::REDISMODULE_KEYTYPE_HASH {
        return;
    }
    let mut value: *mut raw::RedisModuleString = std::ptr::null_mut();
    let none = raw::REDISMODULE_HASH_NONE as c_int;
    let end = std::ptr::null_mut::<raw::RedisModuleString>();
    unsafe { hash_get(key, none, field, &mut value as *mut _, end) };
    if value.is_null() {
        return;
    }
    let value = OwnedString::adopt(ctx, value);
    if let Some(token) = strict_i64(value.bytes()).filter(|t| *t >= 0) {
        TOKENS.observe(token);
    }
}
