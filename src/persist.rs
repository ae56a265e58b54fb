//! Durable fencing tokens (SPEC.md §5): the token counter rides in every RDB file (and so
//! in AOF files with an RDB preamble, and in the full sync a replica loads) as a module
//! auxiliary field. AOF commands and the replication stream carry tokens in `HSET`s, which
//! `events.rs` learns from; the wall-clock floor of `token.rs` covers the rest.
//!
//! The module registers a data type only for this field: no key ever has that type.

use std::ffi::{c_int, c_void};

use redis_module::native_types::RedisType;
use redis_module::raw;

use crate::TOKENS;

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
