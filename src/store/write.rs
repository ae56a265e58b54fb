//! Writing a lock, and replicating each write.
//!
//! Writes go through the module key API, which replicates nothing by itself, so each write
//! here replicates itself as something that gives the same result whenever and wherever
//! it runs: a new or reentered holding as one `LOCK.APPLY key owner holds token unix-ms`,
//! the other writes as their effects (`HSET` of a count, `PEXPIREAT`), a release that
//! deletes the lock as the `LOCK.RELEASE` itself (see [`Replicate::Command`]), and any other
//! deletion as `LOCK.FORCERELEASE`. A
//! replica or an AOF thus replays exactly what the master did, whatever time it is there.
//! Each write also sends the keyspace events that `HSET`, `PEXPIREAT` and `DEL` would.
//!
//! Numbers are made into strings once and passed to Redis as strings (`s`), so that
//! replicating them copies nothing.

use std::ffi::{c_int, CStr};
use std::ptr;
use std::sync::atomic::AtomicPtr;

use redis_module::raw;

use super::{token_field, while_self_notifying, LockKey, Name};
use crate::host::ffi::{api, kept, OwnedString};
use rlock_core::error::LockError;

/// How a deletion that frees a lock reaches replicas and the AOF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replicate {
    /// As `LOCK.FORCERELEASE key` (a force release, a grant taken back): replayed, it
    /// deletes the lock and, outside a cluster, a replica publishes the release message to
    /// its own subscribers, as for a replayed `LOCK.RELEASE`.
    ForceRelease,
    /// As the command being run, verbatim: for a `LOCK.RELEASE` that removed the last
    /// hold. Replayed, it finds the same lock with the same single hold, since a replica
    /// or an AOF being loaded never expires a key, and so deletes it just the same.
    Command,
}

/// A count or token as a module string; 1, the count of every fresh holding, is made once.
enum Decimal {
    Kept(*mut raw::RedisModuleString),
    Made(OwnedString),
}

impl Decimal {
    fn new(ctx: *mut raw::RedisModuleCtx, n: i64) -> Result<Decimal, LockError> {
        static ONE: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(ptr::null_mut());
        if n == 1 {
            return kept(&ONE, b"1").map(Decimal::Kept);
        }
        OwnedString::number(ctx, n).map(Decimal::Made)
    }

    fn raw(&self) -> *mut raw::RedisModuleString {
        match self {
            Decimal::Kept(s) => *s,
            Decimal::Made(s) => s.0,
        }
    }
}

/// A holding as it is written (and as `LOCK.APPLY` replicates it).
pub struct LockEntry<'a> {
    pub owner: Name<'a>,
    pub holds: i64,
    /// 0: the lock has no `@token` field (a lock made by a script-based client).
    pub token: i64,
    pub deadline_ms: i64,
}

/// What the key holds when a holding is written over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Over {
    /// Nothing, or a lock of the same owner: the fields are set in place.
    Nothing,
    /// Something else (another holder's lock, a lease that ran out): deleted first.
    Other,
    /// This very holding, reentered: its token field is left as it is.
    Itself,
    /// The lock of this other owner, exactly (its count of 1 and its token, or a script
    /// client's count alone), whose last hold was just released: its owner field is replaced
    /// in place, in the same write, with no deletion of the key.
    Replacing(*mut raw::RedisModuleString),
}

impl Over {
    /// Whether the key holds something the new holding is written over.
    pub fn key_here(self) -> bool {
        matches!(self, Over::Other | Over::Replacing(_))
    }
}

impl LockKey {
    /// Makes the key exactly `holding` and replicates it as one `LOCK.APPLY`.
    pub fn write_holding(&self, holding: &LockEntry<'_>, over: Over) -> Result<(), LockError> {
        let hash_set = api!(RedisModule_HashSet);
        let replicate = api!(RedisModule_Replicate);
        let replaced = match over {
            Over::Other => {
                self.delete_locally()?;
                None
            }
            Over::Replacing(old) => Some(old),
            Over::Nothing | Over::Itself => None,
        };
        let holds = Decimal::new(self.ctx, holding.holds)?;
        let token = Decimal::new(self.ctx, holding.token)?;
        let deadline = OwnedString::number(self.ctx, holding.deadline_ms)?;
        let flags = raw::REDISMODULE_HASH_NONE as c_int;
        let end = ptr::null_mut::<raw::RedisModuleString>();
        let owner = holding.owner.raw;
        if let Some(old) = replaced.filter(|_| holding.token > 0) {
            let field = token_field()?;
            let gone = raw::REDISMODULE_HASH_DELETE.cast_mut();
            // The token field goes too and comes back after the owner's: the fields keep
            // the order a fresh write gives them.
            unsafe {
                hash_set(
                    self.key,
                    flags,
                    old,
                    gone,
                    field,
                    gone,
                    owner,
                    holds.raw(),
                    field,
                    token.raw(),
                    end,
                )
            };
        } else if holding.token > 0 && over != Over::Itself {
            let field = token_field()?;
            unsafe { hash_set(self.key, flags, owner, holds.raw(), field, token.raw(), end) };
        } else {
            unsafe { hash_set(self.key, flags, owner, holds.raw(), end) };
        }
        self.expire_at(holding.deadline_ms)?;
        unsafe {
            replicate(
                self.ctx,
                c"LOCK.APPLY".as_ptr(),
                c"sssss".as_ptr(),
                self.name,
                owner,
                holds.raw(),
                token.raw(),
                deadline.0,
            );
        }
        // One signal for the write: a second would find nothing more to invalidate.
        self.notify(raw::REDISMODULE_NOTIFY_HASH, c"hset")?;
        self.notify_only(raw::REDISMODULE_NOTIFY_GENERIC, c"expire")
    }

    /// What a holding of `owner` would be written over.
    pub fn over_for(&self, owner: &[u8]) -> Over {
        match self.read() {
            Ok(None) => Over::Nothing,
            Ok(Some(current)) if current.is_held_by(owner) => Over::Nothing,
            _ => Over::Other,
        }
    }

    /// Sets the reentry count of the current owner, replicated as `HSET`.
    pub fn write_count(&self, owner: &Name<'_>, count: i64) -> Result<(), LockError> {
        let hash_set = api!(RedisModule_HashSet);
        let replicate = api!(RedisModule_Replicate);
        let count = Decimal::new(self.ctx, count)?;
        let flags = raw::REDISMODULE_HASH_NONE as c_int;
        let end = ptr::null_mut::<raw::RedisModuleString>();
        unsafe {
            hash_set(self.key, flags, owner.raw, count.raw(), end);
            replicate(
                self.ctx,
                c"HSET".as_ptr(),
                c"sss".as_ptr(),
                self.name,
                owner.raw,
                count.raw(),
            );
        }
        self.notify(raw::REDISMODULE_NOTIFY_HASH, c"hset")
    }

    /// Sets the lease to end at `deadline_ms` (Unix time in ms), replicated as `PEXPIREAT`.
    pub fn set_deadline(&self, deadline_ms: i64) -> Result<(), LockError> {
        let replicate = api!(RedisModule_Replicate);
        let deadline = OwnedString::number(self.ctx, deadline_ms)?;
        self.expire_at(deadline_ms)?;
        unsafe {
            replicate(
                self.ctx,
                c"PEXPIREAT".as_ptr(),
                c"ss".as_ptr(),
                self.name,
                deadline.0,
            );
        }
        self.notify(raw::REDISMODULE_NOTIFY_GENERIC, c"expire")
    }

    fn expire_at(&self, deadline_ms: i64) -> Result<(), LockError> {
        let set_abs_expire = api!(RedisModule_SetAbsExpire);
        unsafe { set_abs_expire(self.key, deadline_ms) };
        Ok(())
    }

    /// Deletes the lock, replicated as `how` says.
    pub fn delete(&self, how: Replicate) -> Result<(), LockError> {
        self.delete_locally()?;
        match how {
            Replicate::ForceRelease => {
                let replicate = api!(RedisModule_Replicate);
                let command = c"LOCK.FORCERELEASE".as_ptr();
                unsafe { replicate(self.ctx, command, c"s".as_ptr(), self.name) };
            }
            Replicate::Command => {
                let verbatim = api!(RedisModule_ReplicateVerbatim);
                unsafe { verbatim(self.ctx) };
            }
        }
        Ok(())
    }

    pub(super) fn delete_locally(&self) -> Result<(), LockError> {
        let delete_key = api!(RedisModule_DeleteKey);
        unsafe { delete_key(self.key) };
        self.notify(raw::REDISMODULE_NOTIFY_GENERIC, c"del")
    }

    /// Signals the key as modified (`WATCH`, client-side caching) and sends `event`.
    pub(super) fn notify(&self, class: c_int, event: &CStr) -> Result<(), LockError> {
        let signal = api!(RedisModule_SignalModifiedKey);
        unsafe { signal(self.ctx, self.name) };
        self.notify_only(class, event)
    }

    /// Sends `event`, for a write already signalled.
    fn notify_only(&self, class: c_int, event: &CStr) -> Result<(), LockError> {
        let notify = api!(RedisModule_NotifyKeyspaceEvent);
        while_self_notifying(|| unsafe {
            notify(self.ctx, class, event.as_ptr(), self.name);
        });
        Ok(())
    }
}
