//! A read-write lock's hash: reading its holders, and writing one holder at a time, each
//! write replicated as one `RWLOCK.APPLY key owner reads writes token unix-ms`, which makes
//! that holder exactly so (0 and 0: gone) on a replica or in an AOF, whatever time it is
//! there. A write that leaves no holder deletes the key. The key's TTL never falls below a
//! holder's lease: it is raised to each new deadline, and stays when a holder leaves.

use std::ffi::c_int;
use std::ptr;
use std::sync::atomic::AtomicPtr;

use redis_module::raw;

use super::{LockKey, Name};
use crate::host::config;
use crate::host::ffi::{api, kept, OwnedString};
use crate::host::node;
use rlock_core::error::LockError;
use rlock_core::rwlock::{
    meta_value, RwHolder, RwState, HOLDER_PREFIX, MAX_FIELDS, MODE_FIELD, MODE_VALUE, WRITE_SUFFIX,
};
use rlock_core::token::TOKENS;

/// One holder as it is written: `reads` and `writes` both 0 take it out.
pub struct RwEntry<'a> {
    pub owner: Name<'a>,
    pub reads: i64,
    pub writes: i64,
    pub token: i64,
    pub deadline_ms: i64,
}

impl LockKey {
    /// Reads the read-write lock: `None` when the key does not exist; `WRONGTYPE` when it
    /// is not a hash, or a hash of another shape (a plain lock). The token counter learns
    /// every holder's token.
    pub fn read_rw(&self) -> Result<Option<RwState>, LockError> {
        let key_type = api!(RedisModule_KeyType);
        let value_length = api!(RedisModule_ValueLength);
        if self.key.is_null() {
            return Ok(None);
        }
        match unsafe { key_type(self.key) } as isize {
            raw::REDISMODULE_KEYTYPE_EMPTY => return Ok(None),
            raw::REDISMODULE_KEYTYPE_HASH => {}
            _ => return Err(LockError::WrongType),
        }
        let len = unsafe { value_length(self.key) };
        if len > MAX_FIELDS {
            return Err(LockError::NotARwLock);
        }
        let fields = self.scan_fields(len)?;
        let state = RwState::from_fields(&fields).map_err(|_| LockError::NotARwLock)?;
        for holder in &state.holders {
            TOKENS.learn(holder.token, config::token_gap());
        }
        Ok(Some(state))
    }

    /// Makes `entry` the holding of its owner (or takes the owner out), replicated as one
    /// `RWLOCK.APPLY`; deletes the key when no holder is left. Returns whether the key
    /// still exists.
    pub fn apply_rw(&self, entry: &RwEntry<'_>) -> Result<bool, LockError> {
        let exists = self.set_holder(entry)?;
        let replicate = api!(RedisModule_Replicate);
        let numbers = [entry.reads, entry.writes, entry.token, entry.deadline_ms]
            .map(|n| OwnedString::number(self.ctx, n));
        let [reads, writes, token, deadline] = numbers;
        let (reads, writes, token, deadline) = (reads?, writes?, token?, deadline?);
        unsafe {
            replicate(
                self.ctx,
                c"RWLOCK.APPLY".as_ptr(),
                c"ssssss".as_ptr(),
                self.name,
                entry.owner.raw,
                reads.0,
                writes.0,
                token.0,
                deadline.0,
            );
        }
        Ok(exists)
    }

    /// The local write of [`apply_rw`](Self::apply_rw), also what a replayed
    /// `RWLOCK.APPLY` does.
    pub fn set_holder(&self, entry: &RwEntry<'_>) -> Result<bool, LockError> {
        let hash_set = api!(RedisModule_HashSet);
        let value_length = api!(RedisModule_ValueLength);
        let gone = entry.reads == 0 && entry.writes == 0;
        let owner = entry.owner.bytes;
        let write_field = OwnedString::new(self.ctx, &[owner, WRITE_SUFFIX].concat())?;
        let meta_field = OwnedString::new(self.ctx, &[HOLDER_PREFIX, owner].concat())?;
        let meta = OwnedString::new(self.ctx, &meta_value(entry.token, entry.deadline_ms))?;
        let reads = count_or_delete(self.ctx, entry.reads)?;
        let writes = count_or_delete(self.ctx, entry.writes)?;
        let meta_raw = if gone { deleted() } else { meta.0 };
        let flags = raw::REDISMODULE_HASH_NONE as c_int;
        unsafe {
            hash_set(
                self.key,
                flags,
                mode_field()?,
                mode_value()?,
                entry.owner.raw,
                reads.raw(),
                write_field.0,
                writes.raw(),
                meta_field.0,
                meta_raw,
                ptr::null_mut::<raw::RedisModuleString>(),
            );
        }
        if unsafe { value_length(self.key) } <= 1 {
            self.delete_locally()?;
            return Ok(false);
        }
        if !gone {
            self.raise_ttl(entry.deadline_ms)?;
        }
        self.notify(raw::REDISMODULE_NOTIFY_HASH, c"hset")?;
        Ok(true)
    }

    /// Raises the key's TTL to end no earlier than `deadline_ms`.
    fn raise_ttl(&self, deadline_ms: i64) -> Result<(), LockError> {
        let ttl = self.ttl_ms()?;
        let now = node::now_ms();
        if ttl < 0 || now.saturating_add(ttl) < deadline_ms {
            let set_abs_expire = api!(RedisModule_SetAbsExpire);
            unsafe { set_abs_expire(self.key, deadline_ms) };
            self.notify(raw::REDISMODULE_NOTIFY_GENERIC, c"expire")?;
        }
        Ok(())
    }

    /// Deletes the read-write lock, replicated as the command being run (`RWLOCK.FORCERELEASE`).
    pub fn delete_rw(&self) -> Result<(), LockError> {
        self.delete_locally()?;
        let verbatim = api!(RedisModule_ReplicateVerbatim);
        unsafe { verbatim(self.ctx) };
        Ok(())
    }
}

/// A count to write, or the marker that deletes its field.
enum Count {
    Set(OwnedString),
    Delete,
}

impl Count {
    fn raw(&self) -> *mut raw::RedisModuleString {
        match self {
            Count::Set(s) => s.0,
            Count::Delete => deleted(),
        }
    }
}

fn count_or_delete(ctx: *mut raw::RedisModuleCtx, n: i64) -> Result<Count, LockError> {
    Ok(if n > 0 {
        Count::Set(OwnedString::number(ctx, n)?)
    } else {
        Count::Delete
    })
}

fn deleted() -> *mut raw::RedisModuleString {
    raw::REDISMODULE_HASH_DELETE.cast_mut()
}

fn mode_field() -> Result<*mut raw::RedisModuleString, LockError> {
    static FIELD: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(ptr::null_mut());
    kept(&FIELD, MODE_FIELD)
}

fn mode_value() -> Result<*mut raw::RedisModuleString, LockError> {
    static VALUE: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(ptr::null_mut());
    kept(&VALUE, MODE_VALUE)
}

/// The holder `owner` would be after its own change: a helper for the callers' entries.
pub fn entry_of<'a>(owner: Name<'a>, holder: &RwHolder) -> RwEntry<'a> {
    RwEntry {
        owner,
        reads: holder.reads,
        writes: holder.writes,
        token: holder.token,
        deadline_ms: holder.deadline_ms.unwrap_or(0),
    }
}
