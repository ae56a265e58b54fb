//! Writing a lock, and replicating each write.
//!
//! Writes go through the module key API, which replicates nothing by itself, so each write
//! here replicates itself as something that gives the same result whenever and wherever
//! it runs: a new or reentered holding as one `LOCK.APPLY key owner holds token unix-ms`,
//! the other writes as their effects (`HSET` of a count, `PEXPIREAT`, `DEL`). A replica or
//! an AOF thus replays exactly what the master did, whatever time it is there. Each write
//! also sends the keyspace events that `HSET`, `PEXPIREAT` and `DEL` would.

use std::ffi::{c_int, c_longlong, CStr};
use std::ptr;

use redis_module::raw;

use super::{api, token_field, LockKey, Name, OwnedString};
use crate::error::LockError;

/// A holding as `LOCK.APPLY` writes it.
pub struct Apply<'a> {
    pub owner: Name<'a>,
    pub holds: i64,
    /// 0: the lock has no `@token` field (a lock made by a script-based client).
    pub token: i64,
    pub deadline_ms: i64,
}

impl LockKey {
    /// Makes the key exactly `holding` and replicates it as one `LOCK.APPLY`. `replace`:
    /// the key holds something else, deleted first; `token_unchanged`: the key already
    /// has this owner and token, so the token is not rewritten.
    pub fn apply(
        &self,
        holding: &Apply<'_>,
        replace: bool,
        token_unchanged: bool,
    ) -> Result<(), LockError> {
        let hash_set = api!(RedisModule_HashSet);
        let replicate = api!(RedisModule_Replicate);
        if replace {
            self.delete_locally()?;
        }
        let holds = OwnedString::number(self.ctx, holding.holds)?;
        let flags = raw::REDISMODULE_HASH_NONE as c_int;
        let end = ptr::null_mut::<raw::RedisModuleString>();
        if holding.token > 0 && !token_unchanged {
            let token = OwnedString::number(self.ctx, holding.token)?;
            let field = token_field()?;
            unsafe {
                hash_set(
                    self.key,
                    flags,
                    holding.owner.raw,
                    holds.0,
                    field,
                    token.0,
                    end,
                )
            };
        } else {
            unsafe { hash_set(self.key, flags, holding.owner.raw, holds.0, end) };
        }
        self.expire_at(holding.deadline_ms)?;
        unsafe {
            replicate(
                self.ctx,
                c"LOCK.APPLY".as_ptr(),
                c"sslll".as_ptr(),
                self.name,
                holding.owner.raw,
                holding.holds as c_longlong,
                holding.token as c_longlong,
                holding.deadline_ms as c_longlong,
            );
        }
        self.notify(raw::REDISMODULE_NOTIFY_HASH, c"hset")?;
        self.notify(raw::REDISMODULE_NOTIFY_GENERIC, c"expire")
    }

    /// Whether the key holds anything but a lock of `owner`, which `apply` must replace.
    pub fn holds_other_than(&self, owner: &[u8]) -> bool {
        match self.read() {
            Ok(None) => false,
            Ok(Some(current)) => !current.is_held_by(owner),
            Err(_) => true,
        }
    }

    /// Sets the reentry count of the current owner, replicated as `HSET`.
    pub fn write_count(&self, owner: &Name<'_>, count: i64) -> Result<(), LockError> {
        let hash_set = api!(RedisModule_HashSet);
        let replicate = api!(RedisModule_Replicate);
        let count_str = OwnedString::number(self.ctx, count)?;
        let flags = raw::REDISMODULE_HASH_NONE as c_int;
        let end = ptr::null_mut::<raw::RedisModuleString>();
        unsafe {
            hash_set(self.key, flags, owner.raw, count_str.0, end);
            replicate(
                self.ctx,
                c"HSET".as_ptr(),
                c"ssl".as_ptr(),
                self.name,
                owner.raw,
                count as c_longlong,
            );
        }
        self.notify(raw::REDISMODULE_NOTIFY_HASH, c"hset")
    }

    /// Sets the lease to end at `deadline_ms` (Unix time in ms), replicated as `PEXPIREAT`.
    pub fn set_deadline(&self, deadline_ms: i64) -> Result<(), LockError> {
        let replicate = api!(RedisModule_Replicate);
        self.expire_at(deadline_ms)?;
        unsafe {
            replicate(
                self.ctx,
                c"PEXPIREAT".as_ptr(),
                c"sl".as_ptr(),
                self.name,
                deadline_ms as c_longlong,
            );
        }
        self.notify(raw::REDISMODULE_NOTIFY_GENERIC, c"expire")
    }

    fn expire_at(&self, deadline_ms: i64) -> Result<(), LockError> {
        let set_abs_expire = api!(RedisModule_SetAbsExpire);
        unsafe { set_abs_expire(self.key, deadline_ms) };
        crate::expiry::deadline_changed(self.ctx, self.name(), deadline_ms);
        Ok(())
    }

    /// Deletes the lock, replicated as `DEL`.
    pub fn delete(&self) -> Result<(), LockError> {
        let replicate = api!(RedisModule_Replicate);
        self.delete_locally()?;
        unsafe { replicate(self.ctx, c"DEL".as_ptr(), c"s".as_ptr(), self.name) };
        Ok(())
    }

    fn delete_locally(&self) -> Result<(), LockError> {
        let delete_key = api!(RedisModule_DeleteKey);
        unsafe { delete_key(self.key) };
        self.notify(raw::REDISMODULE_NOTIFY_GENERIC, c"del")
    }

    fn notify(&self, class: c_int, event: &CStr) -> Result<(), LockError> {
        let notify = api!(RedisModule_NotifyKeyspaceEvent);
        let signal = api!(RedisModule_SignalModifiedKey);
        unsafe { signal(self.ctx, self.name) };
        crate::waiters::while_self_notifying(|| unsafe {
            notify(self.ctx, class, event.as_ptr(), self.name);
        });
        Ok(())
    }
}
