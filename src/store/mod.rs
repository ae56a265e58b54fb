//! Reading a lock's hash and its TTL; `write.rs` writes them and replicates every write.

use std::ffi::{c_char, c_int, c_void};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use redis_module::raw;

use crate::args::strict_i64;
use crate::error::LockError;
use crate::lock::{Holding, TOKEN_FIELD};

mod write;

pub use write::{Apply, Replicate};

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
    pub fn read_as(&self, owner: &Name<'_>) -> Result<Option<Holding>, LockError> {
        let key_type = api!(RedisModule_KeyType);
        let value_length = api!(RedisModule_ValueLength);
        let hash_get = api!(RedisModule_HashGet);
        if self.key.is_null() {
            return Ok(None);
        }
        match unsafe { key_type(self.key) } as isize {
            raw::REDISMODULE_KEYTYPE_EMPTY => return Ok(None),
            raw::REDISMODULE_KEYTYPE_HASH => {}
            _ => return Err(LockError::WrongType),
        }
        let len = unsafe { value_length(self.key) };
        if owner.bytes.first() == Some(&b'@') || !(1..=2).contains(&len) {
            return self.read();
        }
        let mut count: *mut raw::RedisModuleString = ptr::null_mut();
        let mut token: *mut raw::RedisModuleString = ptr::null_mut();
        unsafe {
            hash_get(
                self.key,
                raw::REDISMODULE_HASH_NONE as c_int,
                owner.raw,
                &mut count as *mut _,
                token_field()?,
                &mut token as *mut _,
                ptr::null_mut::<raw::RedisModuleString>(),
            );
        }
        let (count, token) = (self.adopt(count), self.adopt(token));
        let number = |s: &Option<OwnedString>| s.as_ref().and_then(|s| strict_i64(s.bytes()));
        let holding = match (number(&count), &token, number(&token), len) {
            (Some(c), None, _, 1) if c > 0 => Some((c, 0)),
            (Some(c), Some(_), Some(t), 2) if c > 0 && t >= 0 => Some((c, t)),
            _ => None,
        };
        match holding {
            Some((count, token)) => Ok(Some(Holding {
                owner: owner.bytes.to_vec(),
                count,
                token,
            })),
            // Not held by `owner`, or not a lock: the full read says which.
            None => self.read(),
        }
    }

    /// Takes ownership of a string the module API returned (null: none).
    fn adopt(&self, s: *mut raw::RedisModuleString) -> Option<OwnedString> {
        (!s.is_null()).then(|| OwnedString::adopt(self.ctx, s))
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
}

impl Drop for LockKey {
    fn drop(&mut self) {
        if let (Some(close), false) = (unsafe { raw::RedisModule_CloseKey }, self.key.is_null()) {
            unsafe { close(self.key) };
        }
    }
}

/// A name (an owner id) as bytes and as the module string that holds them, so that writes
/// and replication reuse the command's argument instead of copying it.
#[derive(Clone, Copy)]
pub struct Name<'a> {
    pub bytes: &'a [u8],
    pub raw: *mut raw::RedisModuleString,
}

impl<'a> Name<'a> {
    /// A string the caller keeps alive while the name is used.
    pub fn of(string: &'a OwnedString) -> Name<'a> {
        Name {
            bytes: string.bytes(),
            raw: string.0,
        }
    }
}

/// The `@token` field name.
pub fn token_field() -> Result<*mut raw::RedisModuleString, LockError> {
    static FIELD: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(ptr::null_mut());
    kept(&FIELD, TOKEN_FIELD)
}

/// The string `bytes`, made on first use into `cell` and kept for the module's lifetime
/// (commands read it, and Redis only ever adds references to it).
pub fn kept(
    cell: &AtomicPtr<raw::RedisModuleString>,
    bytes: &[u8],
) -> Result<*mut raw::RedisModuleString, LockError> {
    let cached = cell.load(Ordering::Relaxed);
    if !cached.is_null() {
        return Ok(cached);
    }
    let create = api!(RedisModule_CreateString);
    // No context: a string that is never freed automatically.
    let made = unsafe {
        create(
            ptr::null_mut(),
            bytes.as_ptr().cast::<c_char>(),
            bytes.len(),
        )
    };
    cell.store(made, Ordering::Relaxed);
    Ok(made)
}

/// A module string freed on drop.
pub struct OwnedString(pub *mut raw::RedisModuleString, *mut raw::RedisModuleCtx);

impl OwnedString {
    /// Takes ownership of a non-null string the module API returned.
    pub fn adopt(ctx: *mut raw::RedisModuleCtx, s: *mut raw::RedisModuleString) -> OwnedString {
        OwnedString(s, ctx)
    }

    /// A decimal integer as a module string.
    pub fn number(ctx: *mut raw::RedisModuleCtx, n: i64) -> Result<OwnedString, LockError> {
        let mut digits = [0; 20];
        OwnedString::new(ctx, decimal(n, &mut digits))
    }

    pub fn bytes(&self) -> &[u8] {
        redis_module::RedisString::string_as_slice(self.0)
    }

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

/// `n` in decimal, written at the end of `buf` (20 bytes hold `i64::MIN`).
fn decimal(n: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut rest = n.unsigned_abs();
    let mut start = buf.len();
    for slot in buf.iter_mut().rev() {
        *slot = b'0' + (rest % 10) as u8;
        rest /= 10;
        start -= 1;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        start -= 1;
        buf[start] = b'-';
    }
    &buf[start..]
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

#[cfg(test)]
mod tests {
    use super::decimal;

    #[test]
    fn decimal_writes_every_i64() {
        for n in [0, 1, 9, 10, -1, 1_732_000_000_123_456, i64::MAX, i64::MIN] {
            let mut buf = [0; 20];
            assert_eq!(decimal(n, &mut buf), n.to_string().as_bytes());
        }
    }
}
