//! Module configs (SPEC.md §7): `rlock.default-lease`, `rlock.channel-prefix`,
//! `rlock.publish`, `rlock.token-gap`, `rlock.failover-delay`, `rlock.max-waiters`,
//! `rlock.max-waiters-per-key`. Readable and settable with
//! `CONFIG GET/SET` and as lines of redis.conf after the `loadmodule` line.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::ptr;
use std::sync::atomic::{AtomicI64, AtomicPtr, Ordering};
use std::sync::{Mutex, MutexGuard};

use redis_module::{enum_configuration, raw};

use crate::host::ffi::kept;
use crate::host::guard;

/// Default lease, in ms, when a command has no `LEASE`.
pub static DEFAULT_LEASE: AtomicI64 = AtomicI64::new(DEFAULT_LEASE_MS);
pub const DEFAULT_LEASE_MS: i64 = 30_000;
/// Ten years: a bound that catches unit mistakes without limiting real use.
pub const MAX_LEASE_MS: i64 = 315_360_000_000;

/// How long a promoted replica grants no fresh holding of a lock it does not have (ms).
pub static FAILOVER_DELAY: AtomicI64 = AtomicI64::new(DEFAULT_FAILOVER_DELAY_MS);
pub const DEFAULT_FAILOVER_DELAY_MS: i64 = 30_000;

/// How long a lock with native waiters stays free for script clients (Redisson) when their
/// turn comes (ms; 0, the default: no turns, native waiters are always served first).
pub static SCRIPT_TURN: AtomicI64 = AtomicI64::new(DEFAULT_SCRIPT_TURN_MS);
pub const DEFAULT_SCRIPT_TURN_MS: i64 = 0;
pub const MAX_SCRIPT_TURN_MS: i64 = 60_000;

/// How far a promoted replica moves its token counter ahead.
pub static TOKEN_GAP: AtomicI64 = AtomicI64::new(DEFAULT_TOKEN_GAP);
pub const DEFAULT_TOKEN_GAP: i64 = 1 << 20;
pub const MAX_TOKEN_GAP: i64 = 1 << 50;

/// Most clients that may wait on this node at once (0: no limit).
pub static MAX_WAITERS: AtomicI64 = AtomicI64::new(0);
/// Most clients that may wait for one lock at once (0: no limit).
pub static MAX_WAITERS_PER_KEY: AtomicI64 = AtomicI64::new(0);
/// The largest value either limit takes.
pub const MAX_WAITERS_LIMIT: i64 = 1 << 40;

/// Prefix of the release channel.
pub static CHANNEL_PREFIX: ChannelPrefix = ChannelPrefix(Mutex::new(Vec::new()));
pub const DEFAULT_CHANNEL_PREFIX: &str = "redisson_lock__channel";
/// [`DEFAULT_CHANNEL_PREFIX`] as Redis is given it.
const DEFAULT_CHANNEL_PREFIX_C: &CStr = c"redisson_lock__channel";

/// The longest channel prefix accepted.
const MAX_PREFIX_LEN: usize = 1024;

enum_configuration! {
    /// How the release message is sent.
    #[allow(non_camel_case_types)]
    #[derive(Debug, PartialEq, Eq, Copy)]
    pub enum PublishMode {
        publish = 0,
        spublish = 1,
        none = 2,
    }
}

pub static PUBLISH: Mutex<PublishMode> = Mutex::new(PublishMode::publish);

pub fn default_lease() -> i64 {
    DEFAULT_LEASE.load(Ordering::Relaxed)
}

pub fn failover_delay() -> i64 {
    FAILOVER_DELAY.load(Ordering::Relaxed)
}

pub fn token_gap() -> i64 {
    TOKEN_GAP.load(Ordering::Relaxed)
}

pub fn max_waiters() -> i64 {
    MAX_WAITERS.load(Ordering::Relaxed)
}

pub fn max_waiters_per_key() -> i64 {
    MAX_WAITERS_PER_KEY.load(Ordering::Relaxed)
}

pub fn publish_mode() -> PublishMode {
    *lock(&PUBLISH)
}

pub fn set_publish_mode(mode: PublishMode) {
    *lock(&PUBLISH) = mode;
}

/// The channel prefix, a byte string that is never empty.
pub struct ChannelPrefix(Mutex<Vec<u8>>);

impl ChannelPrefix {
    /// Runs `f` on the prefix without copying it.
    pub fn with<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        let prefix = lock(&self.0);
        if prefix.is_empty() {
            f(DEFAULT_CHANNEL_PREFIX.as_bytes())
        } else {
            f(&prefix)
        }
    }
}

impl ChannelPrefix {
    /// Checks and sets a new prefix.
    fn set(&self, bytes: &[u8]) -> Result<(), &'static CStr> {
        if bytes.is_empty() {
            return Err(c"rlock.channel-prefix must not be empty");
        }
        if bytes.len() > MAX_PREFIX_LEN {
            return Err(c"rlock.channel-prefix must not be longer than 1024 bytes");
        }
        *lock(&self.0) = bytes.to_vec();
        Ok(())
    }
}

/// The prefix as a module string for `CONFIG GET`, owned by the module: Redis copies what
/// the getter returns and never frees it, so the getter hands out this one string instead
/// of a new one per call.
static PREFIX_STRING: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(ptr::null_mut());

/// Registers `rlock.channel-prefix` with getter and setter of the module's own.
pub(crate) fn register_channel_prefix(ctx: *mut raw::RedisModuleCtx) -> bool {
    let Some(register) = (unsafe { raw::RedisModule_RegisterStringConfig }) else {
        return false;
    };
    let default = DEFAULT_CHANNEL_PREFIX_C;
    let flags = raw::REDISMODULE_CONFIG_DEFAULT as c_uint;
    let registered = unsafe {
        register(
            ctx,
            c"channel-prefix".as_ptr(),
            default.as_ptr(),
            flags,
            Some(get_prefix),
            Some(set_prefix),
            None,
            ptr::null_mut(),
        )
    };
    registered == raw::REDISMODULE_OK as c_int
}

extern "C" fn get_prefix(
    _name: *const c_char,
    _privdata: *mut c_void,
) -> *mut raw::RedisModuleString {
    guard::entry("CONFIG GET rlock.channel-prefix", ptr::null_mut(), || {
        // Made on the first CONFIG GET after a change (a set frees and clears it).
        CHANNEL_PREFIX
            .with(|prefix| kept(&PREFIX_STRING, prefix))
            .unwrap_or(ptr::null_mut())
    })
}

extern "C" fn set_prefix(
    _name: *const c_char,
    value: *mut raw::RedisModuleString,
    _privdata: *mut c_void,
    err: *mut *mut raw::RedisModuleString,
) -> c_int {
    guard::entry(
        "CONFIG SET rlock.channel-prefix",
        raw::REDISMODULE_ERR as c_int,
        || {
            let bytes = redis_module::RedisString::string_as_slice(value);
            match CHANNEL_PREFIX.set(bytes) {
                Ok(()) => {
                    // The next CONFIG GET makes the string of the new value.
                    let old = PREFIX_STRING.swap(ptr::null_mut(), Ordering::Relaxed);
                    free_string(old);
                    raw::REDISMODULE_OK as c_int
                }
                Err(message) => {
                    if !err.is_null() {
                        // Redis frees the error string it is given.
                        unsafe { *err = new_string(message.to_bytes()) };
                    }
                    raw::REDISMODULE_ERR as c_int
                }
            }
        },
    )
}

/// A module string without a context: freed only by [`free_string`].
fn new_string(bytes: &[u8]) -> *mut raw::RedisModuleString {
    match unsafe { raw::RedisModule_CreateString } {
        Some(create) => unsafe {
            create(
                ptr::null_mut(),
                bytes.as_ptr().cast::<c_char>(),
                bytes.len(),
            )
        },
        None => ptr::null_mut(),
    }
}

fn free_string(s: *mut raw::RedisModuleString) {
    if let (false, Some(free)) = (s.is_null(), unsafe { raw::RedisModule_FreeString }) {
        unsafe { free(ptr::null_mut(), s) };
    }
}

/// Locks a config mutex; a poisoned one still holds a valid value.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_prefix_is_the_same_in_both_forms() {
        assert_eq!(
            DEFAULT_CHANNEL_PREFIX_C.to_bytes(),
            DEFAULT_CHANNEL_PREFIX.as_bytes()
        );
    }
}
