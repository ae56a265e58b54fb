//! Reading and writing a lock's hash, its TTL, and the replication of every write.
//!
//! Writes go through the module key API, which replicates nothing by itself: each write
//! here also replicates its effect (`HSET`, `PEXPIREAT` with an absolute deadline, `DEL`),
//! so a replica or an AOF replays exactly what the master did, whatever time it is there.
//! Redis wraps the effects of one command (or timer callback) in `MULTI`/`EXEC`.

use std::ffi::{c_char, c_int, c_longlong, c_void, CStr};
use std::ptr;

use redis_module::raw;

use crate::error::LockError;
use crate::lock::{Holding, TOKEN_FIELD};

/// Fetches a function pointer of the module API, or fails with an error naming it when
/// this server does not export it.
macro_rules! api {
    ($name:ident) => {
        match unsafe { raw::$name } {
            Some(f) => f,
            None => return Err(LockError::MissingApi(stringify!($name))),
        }
    };
}
pub(crate) use api;

const TOKEN_CFIELD: &CStr = c"@token";

/// The (field, value) pairs of a hash.
type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// Makes Redis signal a key as modified (for `WATCH` and client-side caching) only when
/// the module writes it, not whenever a command opened it for writing.
pub fn signal_writes_explicitly(ctx: *mut raw::RedisModuleCtx) {
    if let Some(set_options) = unsafe { raw::RedisModule_SetModuleOptions } {
        let options = raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED as c_int;
        unsafe { set_options(ctx, options) };
    }
}

/// A lock key opened for one command.
pub struct LockKey {
    ctx: *mut raw::RedisModuleCtx,
    key: *mut raw::RedisModuleKey,
    name: *mut raw::RedisModuleString,
}

impl LockKey {
    /// Opens `name` for reading and writing. The key handle is closed on drop.
    pub fn open(
        ctx: *mut raw::RedisModuleCtx,
        name: *mut raw::RedisModuleString,
        write: bool,
    ) -> Result<LockKey, LockError> {
        let open = api!(RedisModule_OpenKey);
        let mode = raw::REDISMODULE_READ | if write { raw::REDISMODULE_WRITE } else { 0 };
        let key = unsafe { open(ctx, name, mode as c_int) };
        Ok(LockKey { ctx, key, name })
    }

    pub fn ctx(&self) -> *mut raw::RedisModuleCtx {
        self.ctx
    }

    pub fn name(&self) -> &[u8] {
        redis_module::RedisString::string_as_slice(self.name)
    }

    /// Reads the lock: `None` when the key does not exist, an error when it is not a lock.
    pub fn read(&self) -> Result<Option<Holding>, LockError> {
        let key_type = api!(RedisModule_KeyType);
        let value_length = api!(RedisModule_ValueLength);
        if self.key.is_null() {
            return Ok(None);
        }
        match unsafe { key_type(self.key) } as isize {
            raw::REDISMODULE_KEYTYPE_EMPTY => Ok(None),
            raw::REDISMODULE_KEYTYPE_HASH => {
                // A lock has one owner field and maybe a token: never scan a big hash.
                if unsafe { value_length(self.key) } > 2 {
                    return Err(LockError::NotALock);
                }
                let fields = self.scan_fields()?;
                Holding::from_fields(&fields)
                    .map(Some)
                    .map_err(|_| LockError::NotALock)
            }
            _ => Err(LockError::WrongType),
        }
    }

    /// Reads the lock knowing who asks: when `owner` holds it, two field lookups replace
    /// the scan of the hash.
    pub fn read_as(&self, owner: &[u8]) -> Result<Option<Holding>, LockError> {
        let key_type = api!(RedisModule_KeyType);
        let value_length = api!(RedisModule_ValueLength);
        let hash_get = api!(RedisModule_HashGet);
        let free = api!(RedisModule_FreeString);
        if self.key.is_null() {
            return Ok(None);
        }
        match unsafe { key_type(self.key) } as isize {
            raw::REDISMODULE_KEYTYPE_EMPTY => return Ok(None),
            raw::REDISMODULE_KEYTYPE_HASH => {}
            _ => return Err(LockError::WrongType),
        }
        let len = unsafe { value_length(self.key) };
        if owner.first() == Some(&b'@') || !(1..=2).contains(&len) {
            return self.read();
        }
        let field = self.string(owner)?;
        let token_field = self.string(TOKEN_FIELD)?;
        let mut count: *mut raw::RedisModuleString = ptr::null_mut();
        let mut token: *mut raw::RedisModuleString = ptr::null_mut();
        unsafe {
            hash_get(
                self.key,
                raw::REDISMODULE_HASH_NONE as c_int,
                field.0,
                &mut count as *mut _,
                token_field.0,
                &mut token as *mut _,
                ptr::null_mut::<raw::RedisModuleString>(),
            );
        }
        let text = |s: *mut raw::RedisModuleString| {
            (!s.is_null()).then(|| redis_module::RedisString::string_as_slice(s).to_vec())
        };
        let (count_text, token_text) = (text(count), text(token));
        for s in [count, token] {
            if !s.is_null() {
                unsafe { free(self.ctx, s) };
            }
        }
        let fields: Fields = match (count_text, token_text, len) {
            (Some(c), None, 1) => vec![(owner.to_vec(), c)],
            (Some(c), Some(t), 2) => vec![(owner.to_vec(), c), (TOKEN_FIELD.to_vec(), t)],
            _ => return self.read(),
        };
        Holding::from_fields(&fields)
            .map(Some)
            .map_err(|_| LockError::NotALock)
    }

    fn scan_fields(&self) -> Result<Fields, LockError> {
        let create = api!(RedisModule_ScanCursorCreate);
        let destroy = api!(RedisModule_ScanCursorDestroy);
        let scan = api!(RedisModule_ScanKey);
        let mut fields: Fields = Vec::with_capacity(2);
        let cursor = unsafe { create() };
        // A two-field hash is a listpack, scanned whole in one call; the bound only guards
        // against a server that would behave otherwise.
        for _ in 0..8 {
            let more = unsafe {
                scan(
                    self.key,
                    cursor,
                    Some(collect_field),
                    (&mut fields as *mut Fields).cast::<c_void>(),
                )
            };
            if more == 0 || fields.len() > 2 {
                break;
            }
        }
        unsafe { destroy(cursor) };
        Ok(fields)
    }

    /// Milliseconds left on the lease, or -1 when the key has no TTL.
    pub fn ttl_ms(&self) -> Result<i64, LockError> {
        let get_expire = api!(RedisModule_GetExpire);
        let ttl = unsafe { get_expire(self.key) };
        Ok(if ttl < 0 { -1 } else { ttl })
    }

    /// Writes a fresh holding: the owner with count 1, its token, and its deadline.
    /// The key must be empty.
    pub fn write_fresh(&self, owner: &[u8], token: i64, deadline_ms: i64) -> Result<(), LockError> {
        self.hset(owner, 1, Some(token))?;
        self.set_deadline(deadline_ms)
    }

    /// Sets the reentry count of the current owner.
    pub fn write_count(&self, owner: &[u8], count: i64) -> Result<(), LockError> {
        self.hset(owner, count, None)
    }

    fn hset(&self, owner: &[u8], count: i64, token: Option<i64>) -> Result<(), LockError> {
        let hash_set = api!(RedisModule_HashSet);
        let replicate = api!(RedisModule_Replicate);
        let field = self.string(owner)?;
        let count_str = self.string(count.to_string().as_bytes())?;
        let flags = raw::REDISMODULE_HASH_NONE as c_int;
        match token {
            Some(token) => {
                let token_field = self.string(TOKEN_FIELD)?;
                let token_str = self.string(token.to_string().as_bytes())?;
                unsafe {
                    hash_set(
                        self.key,
                        flags,
                        field.0,
                        count_str.0,
                        token_field.0,
                        token_str.0,
                        ptr::null_mut::<raw::RedisModuleString>(),
                    );
                    replicate(
                        self.ctx,
                        c"HSET".as_ptr(),
                        c"sblcl".as_ptr(),
                        self.name,
                        owner.as_ptr().cast::<c_char>(),
                        owner.len(),
                        count as c_longlong,
                        TOKEN_CFIELD.as_ptr(),
                        token as c_longlong,
                    );
                }
            }
            None => unsafe {
                hash_set(
                    self.key,
                    flags,
                    field.0,
                    count_str.0,
                    ptr::null_mut::<raw::RedisModuleString>(),
                );
                replicate(
                    self.ctx,
                    c"HSET".as_ptr(),
                    c"sbl".as_ptr(),
                    self.name,
                    owner.as_ptr().cast::<c_char>(),
                    owner.len(),
                    count as c_longlong,
                );
            },
        }
        self.notify(raw::REDISMODULE_NOTIFY_HASH, c"hset")
    }

    /// Sets the lease to end at `deadline_ms` (Unix time in ms), replicated as `PEXPIREAT`.
    pub fn set_deadline(&self, deadline_ms: i64) -> Result<(), LockError> {
        let set_abs_expire = api!(RedisModule_SetAbsExpire);
        let replicate = api!(RedisModule_Replicate);
        unsafe {
            set_abs_expire(self.key, deadline_ms);
            replicate(
                self.ctx,
                c"PEXPIREAT".as_ptr(),
                c"sl".as_ptr(),
                self.name,
                deadline_ms as c_longlong,
            );
        }
        crate::expiry::deadline_changed(self.ctx, self.name(), deadline_ms);
        self.notify(raw::REDISMODULE_NOTIFY_GENERIC, c"expire")
    }

    /// Deletes the lock, replicated as `DEL`.
    pub fn delete(&self) -> Result<(), LockError> {
        let delete_key = api!(RedisModule_DeleteKey);
        let replicate = api!(RedisModule_Replicate);
        unsafe {
            delete_key(self.key);
            replicate(self.ctx, c"DEL".as_ptr(), c"s".as_ptr(), self.name);
        }
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

    fn string(&self, bytes: &[u8]) -> Result<OwnedString, LockError> {
        OwnedString::new(self.ctx, bytes)
    }
}

impl Drop for LockKey {
    fn drop(&mut self) {
        if let (Some(close), false) = (unsafe { raw::RedisModule_CloseKey }, self.key.is_null()) {
            unsafe { close(self.key) };
        }
    }
}

/// A module string freed on drop.
pub struct OwnedString(pub *mut raw::RedisModuleString, *mut raw::RedisModuleCtx);

impl OwnedString {
    pub fn new(ctx: *mut raw::RedisModuleCtx, bytes: &[u8]) -> Result<OwnedString, LockError> {
        let create = api!(RedisModule_CreateString);
        let s = unsafe { create(ctx, bytes.as_ptr().cast::<c_char>(), bytes.len()) };
        Ok(OwnedString(s, ctx))
    }
}

impl Drop for OwnedString {
    fn drop(&mut self) {
        if let Some(free) = unsafe { raw::RedisModule_FreeString } {
            unsafe { free(self.1, self.0) };
        }
    }
}

unsafe extern "C" fn collect_field(
    _key: *mut raw::RedisModuleKey,
    field: *mut raw::RedisModuleString,
    value: *mut raw::RedisModuleString,
    privdata: *mut c_void,
) {
    // Runs inside ScanKey, called from `scan_fields` with a live `Vec` behind privdata.
    let fields = unsafe { &mut *privdata.cast::<Fields>() };
    let field = redis_module::RedisString::string_as_slice(field).to_vec();
    let value = redis_module::RedisString::string_as_slice(value).to_vec();
    fields.push((field, value));
}
