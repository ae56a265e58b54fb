//! A semaphore's hash: reading its holders, and writing one holder at a time (with
//! `@used`, the permits held, kept up to date), each write replicated as one
//! `SEM.APPLY key owner permits token unix-ms`, which makes that holder exactly so (0
//! permits: gone) on a replica or in an AOF, whatever time it is there. The key has no TTL
//! (its total stays); each holder's lease is its `@h:` field. Most commands look up a few
//! fields ([`LockKey::sem_glance`]) instead of reading the whole hash.

use std::ffi::c_int;
use std::ptr;
use std::sync::atomic::AtomicPtr;

use redis_module::raw;

use super::{LockKey, Name};
use crate::host::config;
use crate::host::ffi::{api, kept, OwnedString};
use rlock_core::args::strict_i64;
use rlock_core::error::LockError;
use rlock_core::semaphore::{
    meta_value, parse_meta, SemHolder, SemState, HOLDER_PREFIX, MAX_FIELDS, NEXT_FIELD,
    TOTAL_FIELD, USED_FIELD,
};
use rlock_core::semglance::SemGlance;
use rlock_core::token::TOKENS;

/// One holder as it is written: 0 permits take it out.
pub struct SemEntry<'a> {
    pub owner: Name<'a>,
    pub permits: i64,
    pub token: i64,
    pub deadline_ms: i64,
}

impl LockKey {
    /// Whether the key is a hash (`Ok(false)`: no key; `WRONGTYPE` for another type).
    fn sem_hash(&self) -> Result<bool, LockError> {
        let key_type = api!(RedisModule_KeyType);
        if self.key.is_null() {
            return Ok(false);
        }
        match unsafe { key_type(self.key) } as isize {
            raw::REDISMODULE_KEYTYPE_EMPTY => Ok(false),
            raw::REDISMODULE_KEYTYPE_HASH => Ok(true),
            _ => Err(LockError::NotASemaphore),
        }
    }

    /// Reads the semaphore: `None` when the key does not exist; `WRONGTYPE` when it is
    /// not a semaphore. The token counter learns every holder's token.
    pub fn read_sem(&self) -> Result<Option<SemState>, LockError> {
        if !self.sem_hash()? {
            return Ok(None);
        }
        let value_length = api!(RedisModule_ValueLength);
        let len = unsafe { value_length(self.key) };
        if len > MAX_FIELDS {
            return Err(LockError::NotASemaphore);
        }
        let fields = self.scan_fields(len)?;
        let state = SemState::from_fields(&fields).map_err(|_| LockError::NotASemaphore)?;
        for holder in &state.holders {
            TOKENS.learn(holder.token, config::token_gap());
        }
        Ok(Some(state))
    }

    /// Four field lookups: the total, `@used`, and `owner`'s own two fields.
    pub fn sem_glance(&self, owner: &Name<'_>) -> Result<SemGlance, LockError> {
        if !self.sem_hash()? {
            return Ok(SemGlance::default());
        }
        let value_length = api!(RedisModule_ValueLength);
        let fields = unsafe { value_length(self.key) };
        let meta = OwnedString::new(self.ctx, &[HOLDER_PREFIX, owner.bytes].concat())?;
        let [total, used, next, count] =
            self.get4([total_field()?, used_field()?, next_field()?, owner.raw]);
        let [meta, ..] = self.get4([meta.0, ptr::null_mut(), ptr::null_mut(), ptr::null_mut()]);
        let number = |s: &Option<OwnedString>| s.as_ref().and_then(|s| strict_i64(s.bytes()));
        let mine = match (number(&count), meta.and_then(|m| parse_meta(m.bytes()))) {
            (Some(permits), Some((token, deadline_ms))) => Some(SemHolder {
                owner: owner.bytes.to_vec(),
                permits,
                token,
                deadline_ms,
            }),
            _ => None,
        };
        if let Some(h) = &mine {
            TOKENS.learn(h.token, config::token_gap());
        }
        Ok(SemGlance {
            fields,
            total: number(&total).filter(|n| *n >= 0),
            used: number(&used).unwrap_or(0),
            next: number(&next),
            mine,
        })
    }

    /// Makes `entry` the holding of its owner (or takes the owner out), replicated as one
    /// `SEM.APPLY`.
    pub fn apply_sem(&self, entry: &SemEntry<'_>) -> Result<(), LockError> {
        self.set_sem_holder(entry)?;
        let replicate = api!(RedisModule_Replicate);
        let numbers = [entry.permits, entry.token, entry.deadline_ms]
            .map(|n| OwnedString::number(self.ctx, n));
        let [permits, token, deadline] = numbers;
        let (permits, token, deadline) = (permits?, token?, deadline?);
        unsafe {
            replicate(
                self.ctx,
                c"SEM.APPLY".as_ptr(),
                c"sssss".as_ptr(),
                self.name,
                entry.owner.raw,
                permits.0,
                token.0,
                deadline.0,
            );
        }
        Ok(())
    }

    /// The local write of [`apply_sem`](Self::apply_sem), also what a replayed
    /// `SEM.APPLY` does: the owner's fields, and `@used` moved by the change.
    pub fn set_sem_holder(&self, entry: &SemEntry<'_>) -> Result<(), LockError> {
        let meta_name = OwnedString::new(self.ctx, &[HOLDER_PREFIX, entry.owner.bytes].concat())?;
        let [total, used, before, next] = self.get4([
            total_field()?,
            used_field()?,
            entry.owner.raw,
            next_field()?,
        ]);
        let number =
            |s: &Option<OwnedString>| s.as_ref().and_then(|s| strict_i64(s.bytes())).unwrap_or(0);
        let used = number(&used)
            .saturating_sub(number(&before))
            .saturating_add(entry.permits)
            .max(0);
        let gone = entry.permits <= 0;
        // No later than every lease end: lowered to a new one; left as it is (maybe early)
        // when a holder leaves; gone with the last holder.
        let next = match (used, number(&next)) {
            (0, _) => None,
            (_, 0) if gone => None,
            (_, next) if gone => Some(next),
            (_, 0) => Some(entry.deadline_ms),
            (_, next) => Some(next.min(entry.deadline_ms)),
        };
        let permits = OwnedString::number(self.ctx, entry.permits)?;
        let meta = OwnedString::new(self.ctx, &meta_value(entry.token, entry.deadline_ms))?;
        let (count, meta) = if gone {
            (deleted(), deleted())
        } else {
            (permits.0, meta.0)
        };
        let used = OwnedString::number(self.ctx, used)?;
        let next = next.map(|n| OwnedString::number(self.ctx, n)).transpose()?;
        let next_raw = next.as_ref().map_or_else(deleted, |n| n.0);
        let total = match total {
            Some(total) => total,
            None => OwnedString::number(self.ctx, 0)?,
        };
        let hash_set = api!(RedisModule_HashSet);
        unsafe {
            hash_set(
                self.key,
                raw::REDISMODULE_HASH_NONE as c_int,
                total_field()?,
                total.0,
                used_field()?,
                used.0,
                entry.owner.raw,
                count,
                meta_name.0,
                meta,
                next_field()?,
                next_raw,
                ptr::null_mut::<raw::RedisModuleString>(),
            );
        }
        self.notify(raw::REDISMODULE_NOTIFY_HASH, c"hset")
    }

    /// Makes `@next` the earliest lease end of `state`'s holders, if it is not, replicated
    /// as an `HSET` (or `HDEL` when nobody holds).
    pub fn settle_sem_next(&self, state: &SemState) -> Result<(), LockError> {
        let [stored, ..] = self.get4([
            next_field()?,
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
        ]);
        let stored = stored.and_then(|s| strict_i64(s.bytes()));
        let exact = state.next_deadline();
        if stored == exact {
            return Ok(());
        }
        let hash_set = api!(RedisModule_HashSet);
        let replicate = api!(RedisModule_Replicate);
        let value = exact
            .map(|n| OwnedString::number(self.ctx, n))
            .transpose()?;
        let flags = raw::REDISMODULE_HASH_NONE as c_int;
        let end = ptr::null_mut::<raw::RedisModuleString>();
        unsafe {
            match &value {
                Some(v) => {
                    hash_set(self.key, flags, next_field()?, v.0, end);
                    let format = c"sss".as_ptr();
                    replicate(
                        self.ctx,
                        c"HSET".as_ptr(),
                        format,
                        self.name,
                        next_field()?,
                        v.0,
                    );
                }
                None => {
                    hash_set(self.key, flags, next_field()?, deleted(), end);
                    replicate(
                        self.ctx,
                        c"HDEL".as_ptr(),
                        c"ss".as_ptr(),
                        self.name,
                        next_field()?,
                    );
                }
            }
        }
        self.notify(raw::REDISMODULE_NOTIFY_HASH, c"hset")
    }

    /// Sets the total (creating the semaphore), replicated as the command being run.
    pub fn set_sem_total(&self, total: i64) -> Result<(), LockError> {
        let hash_set = api!(RedisModule_HashSet);
        let total = OwnedString::number(self.ctx, total)?;
        let zero = OwnedString::number(self.ctx, 0)?;
        unsafe {
            hash_set(
                self.key,
                raw::REDISMODULE_HASH_NONE as c_int,
                total_field()?,
                total.0,
                ptr::null_mut::<raw::RedisModuleString>(),
            );
            hash_set(
                self.key,
                raw::REDISMODULE_HASH_NX as c_int,
                used_field()?,
                zero.0,
                ptr::null_mut::<raw::RedisModuleString>(),
            );
        }
        self.notify(raw::REDISMODULE_NOTIFY_HASH, c"hset")?;
        let verbatim = api!(RedisModule_ReplicateVerbatim);
        unsafe { verbatim(self.ctx) };
        Ok(())
    }

    /// Ends every holding, the total kept, replicated as the command being run.
    pub fn clear_sem(&self, total: i64) -> Result<(), LockError> {
        let delete_key = api!(RedisModule_DeleteKey);
        unsafe { delete_key(self.key) };
        self.set_sem_total(total)
    }
}

fn deleted() -> *mut raw::RedisModuleString {
    raw::REDISMODULE_HASH_DELETE.cast_mut()
}

fn total_field() -> Result<*mut raw::RedisModuleString, LockError> {
    static FIELD: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(ptr::null_mut());
    kept(&FIELD, TOTAL_FIELD)
}

fn next_field() -> Result<*mut raw::RedisModuleString, LockError> {
    static FIELD: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(ptr::null_mut());
    kept(&FIELD, NEXT_FIELD)
}

fn used_field() -> Result<*mut raw::RedisModuleString, LockError> {
    static FIELD: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(ptr::null_mut());
    kept(&FIELD, USED_FIELD)
}

/// The entry of `holder` for its owner's name.
pub fn sem_entry<'a>(owner: Name<'a>, holder: &SemHolder) -> SemEntry<'a> {
    SemEntry {
        owner,
        permits: holder.permits,
        token: holder.token,
        deadline_ms: holder.deadline_ms,
    }
}
