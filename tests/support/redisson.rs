//! Redisson's `RLock` scripts, written from its documented behaviour; the tests and the
//! benchmark (`bench/`) share these files.

/// `tryLockInner`: KEYS[1] = lock; ARGV[1] = lease ms, ARGV[2] = owner. Nil when acquired,
/// else the PTTL.
pub const TRY_LOCK: &str = include_str!("redisson/try_lock.lua");

/// `unlockInner`: KEYS[1] = lock, KEYS[2] = channel; ARGV[1] = message, ARGV[2] = lease ms,
/// ARGV[3] = owner. Nil when not held, 0 when holds remain, 1 when released.
pub const UNLOCK: &str = include_str!("redisson/unlock.lua");

/// `renewExpiration`: KEYS[1] = lock; ARGV[1] = lease ms, ARGV[2] = owner. 1 when renewed.
pub const RENEW: &str = include_str!("redisson/renew.lua");
