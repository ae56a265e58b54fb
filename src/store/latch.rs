//! A countdown latch in Redisson's `RCountDownLatch` layout: a string holding the count.
//! Read with `GET`; written with the very commands Redisson's scripts run (`SET`,
//! `DECR`, `DEL`), called inside the module and replicated as themselves, so replicas, the
//! AOF and Redisson clients see a latch as Redisson writes it. The message on Redisson's
//! latch channel tells its clients a count was set (`1`) or reached zero (`0`).

use std::ffi::{c_int, CStr};

use redis_module::raw;

use super::{while_self_notifying, LockKey};
use crate::host::config::{self, PublishMode};
use crate::host::ffi::{api, OwnedString};
use rlock_core::args::strict_i64;
use rlock_core::error::LockError;

/// The channel Redisson's latch clients wait on: `redisson_countdownlatch__channel__{key}`.
const CHANNEL_PREFIX: &[u8] = b"redisson_countdownlatch__channel__{";

/// Longest string read as a count: an `i64` has at most 20 characters.
const MAX_COUNT_LEN: usize = 20;

impl LockKey {
    /// The latch's count: `None` when the key does not exist, an error when it holds
    /// anything but an integer string.
    pub fn read_latch(&self) -> Result<Option<i64>, LockError> {
        let key_type = api!(RedisModule_KeyType);
        if self.key.is_null() {
            return Ok(None);
        }
        match unsafe { key_type(self.key) } as isize {
            raw::REDISMODULE_KEYTYPE_EMPTY => return Ok(None),
            raw::REDISMODULE_KEYTYPE_STRING => {}
            _ => return Err(LockError::NotALatch),
        }
        // `GET`, not the key API's direct access, which would re-encode a number stored
        // as an integer (a write, even on a replica).
        let (call, free) = (api!(RedisModule_Call), api!(RedisModule_FreeCallReply));
        let (reply_type, string) = (
            api!(RedisModule_CallReplyType),
            api!(RedisModule_CallReplyStringPtr),
        );
        let reply = unsafe { call(self.ctx, c"GET".as_ptr(), c"s".as_ptr(), self.name) };
        if reply.is_null() {
            return Err(LockError::Internal("a latch read"));
        }
        let count = match unsafe { reply_type(reply) } as isize {
            raw::REDISMODULE_REPLY_NULL => Ok(None),
            raw::REDISMODULE_REPLY_STRING => {
                let mut len = 0usize;
                let ptr = unsafe { string(reply, &mut len) };
                // Valid for `len` bytes until the reply is freed.
                let bytes = match ptr.is_null() || len > MAX_COUNT_LEN {
                    true => &[][..],
                    false => unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) },
                };
                strict_i64(bytes).map(Some).ok_or(LockError::NotALatch)
            }
            _ => Err(LockError::NotALatch),
        };
        unsafe { free(reply) };
        count
    }
}

/// Runs `command` on `key` (with `count`, if any) as a client would, replicated as itself.
fn run(
    ctx: *mut raw::RedisModuleCtx,
    command: &CStr,
    key: *mut raw::RedisModuleString,
    count: Option<i64>,
) -> Result<(), LockError> {
    let (call, free, reply_type) = (
        api!(RedisModule_Call),
        api!(RedisModule_FreeCallReply),
        api!(RedisModule_CallReplyType),
    );
    let mut reply = std::ptr::null_mut();
    while_self_notifying(|| {
        reply = unsafe {
            match count {
                Some(n) => call(ctx, command.as_ptr(), c"!sl".as_ptr(), key, n),
                None => call(ctx, command.as_ptr(), c"!s".as_ptr(), key),
            }
        };
    });
    if reply.is_null() {
        return Err(LockError::Internal("a latch write"));
    }
    let failed = unsafe { reply_type(reply) } == raw::REDISMODULE_REPLY_ERROR as c_int;
    unsafe { free(reply) };
    if failed {
        return Err(LockError::NotALatch);
    }
    Ok(())
}

/// Sets the count of the latch `key` (`SET key count`).
pub fn set_count(
    ctx: *mut raw::RedisModuleCtx,
    key: *mut raw::RedisModuleString,
    count: i64,
) -> Result<(), LockError> {
    run(ctx, c"SET", key, Some(count))
}

/// Takes one off the count of the latch `key` (`DECR key`, its time to live kept).
pub fn decrement(
    ctx: *mut raw::RedisModuleCtx,
    key: *mut raw::RedisModuleString,
) -> Result<(), LockError> {
    run(ctx, c"DECR", key, None)
}

/// Deletes the latch `key` (`DEL key`).
pub fn delete(
    ctx: *mut raw::RedisModuleCtx,
    key: *mut raw::RedisModuleString,
) -> Result<(), LockError> {
    run(ctx, c"DEL", key, None)
}

/// Publishes `message` (`1`: a count was set; `0`: it reached zero) on the latch channel of
/// `key`, as `rlock.publish` says.
pub fn latch_message(
    ctx: *mut raw::RedisModuleCtx,
    key: &[u8],
    message: &[u8],
) -> Result<(), LockError> {
    let mode = config::publish_mode();
    if mode == PublishMode::none {
        return Ok(());
    }
    let mut channel = Vec::with_capacity(CHANNEL_PREFIX.len() + key.len() + 1);
    channel.extend_from_slice(CHANNEL_PREFIX);
    channel.extend_from_slice(key);
    channel.push(b'}');
    let channel = OwnedString::new(ctx, &channel)?;
    let message = OwnedString::new(ctx, message)?;
    let publish = match mode {
        PublishMode::spublish => api!(RedisModule_PublishMessageShard),
        _ => api!(RedisModule_PublishMessage),
    };
    unsafe { publish(ctx, channel.0, message.0) };
    Ok(())
}
