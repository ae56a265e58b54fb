//! Module configs (SPEC.md §7): `rlock.default-lease`, `rlock.channel-prefix`,
//! `rlock.publish`, `rlock.token-gap`, `rlock.failover-delay`. Readable and settable with
//! `CONFIG GET/SET` and as lines of redis.conf after the `loadmodule` line.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard};

use redis_module::configuration::{ConfigurationContext, ConfigurationValue};
use redis_module::{enum_configuration, RedisError, RedisString};

/// Default lease, in ms, when a command has no `LEASE`.
pub static DEFAULT_LEASE: AtomicI64 = AtomicI64::new(DEFAULT_LEASE_MS);
pub const DEFAULT_LEASE_MS: i64 = 30_000;
/// Ten years: a bound that catches unit mistakes without limiting real use.
pub const MAX_LEASE_MS: i64 = 315_360_000_000;

/// How long a promoted replica grants no fresh holding of a lock it does not have (ms).
pub static FAILOVER_DELAY: AtomicI64 = AtomicI64::new(DEFAULT_FAILOVER_DELAY_MS);
pub const DEFAULT_FAILOVER_DELAY_MS: i64 = 30_000;

/// How far a promoted replica moves its token counter ahead.
pub static TOKEN_GAP: AtomicI64 = AtomicI64::new(DEFAULT_TOKEN_GAP);
pub const DEFAULT_TOKEN_GAP: i64 = 1 << 20;
pub const MAX_TOKEN_GAP: i64 = 1 << 50;

/// Prefix of the release channel.
pub static CHANNEL_PREFIX: ChannelPrefix = ChannelPrefix(Mutex::new(Vec::new()));
pub const DEFAULT_CHANNEL_PREFIX: &str = "redisson_lock__channel";

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

pub fn publish_mode() -> PublishMode {
    *lock(&PUBLISH)
}

/// The channel prefix, a byte string that is never empty.
pub struct ChannelPrefix(Mutex<Vec<u8>>);

impl ChannelPrefix {
    pub fn get(&self) -> Vec<u8> {
        self.with(<[u8]>::to_vec)
    }

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

impl ConfigurationValue<RedisString> for ChannelPrefix {
    fn get(&self, _ctx: &ConfigurationContext) -> RedisString {
        RedisString::create(None, self.get())
    }

    fn set(&self, _ctx: &ConfigurationContext, val: RedisString) -> Result<(), RedisError> {
        let bytes = val.as_slice();
        if bytes.is_empty() {
            return Err(RedisError::Str("rlock.channel-prefix must not be empty"));
        }
        if bytes.len() > MAX_PREFIX_LEN {
            return Err(RedisError::Str(
                "rlock.channel-prefix must not be longer than 1024 bytes",
            ));
        }
        *lock(&self.0) = bytes.to_vec();
        Ok(())
    }
}

/// Locks a config mutex; a poisoned one still holds a valid value.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
