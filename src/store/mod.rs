//! The lock's state in Redis: reading a lock's hash and its TTL here (`read_own.rs`: as its
//! holder asks); `write.rs` writes
//! them and replicates every write; `publish.rs` sends the release message; `persist.rs`
//! keeps the token counter in the RDB; `slot_keys.rs` learns the tokens of slots a
//! migration brought. A leaf over Redis's key API: it arms no timer and serves no waiter.
//! May use: `host/`, `rlock_core`.

use std::ffi::{c_int, c_void};
use std::mem::ManuallyDrop;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use redis_module::raw;

use crate::host::config;
use crate::host::ffi::{api, kept, OwnedString};
use rlock_core::error::LockError;
use rlock_core::lock::{Holding, TOKEN_FIELD};
use rlock_core::token::TOKENS;

pub mod latch;
pub mod persist;
pub mod publish;
mod read_own;
mod rw;
mod rw_live;
mod sem;
pub mod slot_keys;
mod write;

pub use read_own::Read;
pub use rw::{entry_of, RwEntry};
pub use sem::{sem_entry, SemEntry};
pub use write::{LockEntry, Over, Replicate};

/// How a key is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Read,
    Write,
}

/// Set while the module sends keyspace events for its own writes, so that the module's own
/// event subscriber ignores them. Read on every keyspace event of the server: one load.
static SELF_NOTIFYING: AtomicBool = AtomicBool::new(false);

/// Whether the module is sending events for its own writes.
pub fn self_notifying() -> bool {
    SELF_NOTIFYING.load(Ordering::Relaxed)
}

/// Runs `f` (which emits keyspace events for the module's own writes) so that those events
/// are known as the module's own.
pub fn while_self_notifying(f: impl FnOnce()) {
    let before = SELF_NOTIFYING.swap(true, Ordering::Relaxed);
    f();
    SELF_NOTIFYING.store(before, Ordering::Relaxed);
}

/// Most `ScanKey` calls for one lock: a hashtable of 2^24 buckets (a hash that once had
/// millions of fields) is still read whole.
const MAX_SCAN_CALLS: usize = 1 << 24;

/// The (field, value) pairs of a hash.
type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// Makes Redis signal a key as modified (for `WATCH` and client-side caching) only when
/// the module writes it, not whenever a command opened it for writing. The call sets every
/// option at once, so it also carries Valkey 9's atomic slot migration bit, where it applies.
pub fn signal_writes_explicitly(ctx: *mut raw::RedisModuleCtx) {
    if let Some(set_options) = unsafe { raw::RedisModule_SetModuleOptions } {
        let options = raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED as c_int
            | crate::host::valkey::module_options();
        unsafe { set_options(ctx, options) };
    }
}

/// A lock key opened for one command.
pub struct LockKey {
    ctx: *mut raw::RedisModuleCtx,
    key: *mut raw::RedisModuleKey,
    name: *mut raw::RedisModuleString,
    /// The bytes of `name`, asked of Redis once: (start, length).
    bytes: (*const u8, usize),
}

impl LockKey {
    /// Opens `name`. The key handle is closed on drop.
    pub fn open(
        ctx: *mut raw::RedisModuleCtx,
        name: *mut raw::RedisModuleString,
        mode: Mode,
    ) -> Result<LockKey, LockError> {
        let open = api!(RedisModule_OpenKey);
        let mode = match mode {
            Mode::Read => raw::REDISMODULE_READ,
            Mode::Write => raw::REDISMODULE_READ | raw::REDISMODULE_WRITE,
        };
        let key = unsafe { open(ctx, name, mode as c_int) };
        Ok(LockKey::new(ctx, key, name))
    }

    fn new(
        ctx: *mut raw::RedisModuleCtx,
        key: *mut raw::RedisModuleKey,
        name: *mut raw::RedisModuleString,
    ) -> LockKey {
        let bytes = redis_module::RedisString::string_as_slice(name);
        let bytes = (bytes.as_ptr(), bytes.len());
        LockKey {
            ctx,
            key,
            name,
            bytes,
        }
    }

    pub fn name(&self) -> &[u8] {
        // The bytes of `name`, which outlives the key handle and is never changed.
        unsafe { std::slice::from_raw_parts(self.bytes.0, self.bytes.1) }
    }

    /// Reads the lock: `None` when the key does not exist, an error when it is not a lock.
    /// The token counter learns the token of every lock read (one that came by `RESTORE`
    /// or from a node whose counter was ahead), so no fresh holding ever gets a lower one.
    pub fn read(&self) -> Result<Option<Holding>, LockError> {
        let holding = self.read_fields()?;
        if let Some(h) = &holding {
            TOKENS.learn(h.token, config::token_gap());
        }
        Ok(holding)
    }

    fn read_fields(&self) -> Result<Option<Holding>, LockError> {
        let key_type = api!(RedisModule_KeyType);
        let value_length = api!(RedisModule_ValueLength);
        if self.key.is_null() {
            return Ok(None);
        }
        match unsafe { key_type(self.key) } as isize {
            raw::REDISMODULE_KEYTYPE_EMPTY => Ok(None),
            raw::REDISMODULE_KEYTYPE_HASH => {
                // A lock has one owner field and maybe a token: never scan a big hash.
                let len = unsafe { value_length(self.key) };
                if len > 2 {
                    return Err(LockError::NotALock);
                }
                let fields = self.scan_fields(len)?;
                Holding::from_fields(&fields)
                    .map(Some)
                    .map_err(|_| LockError::NotALock)
            }
            _ => Err(LockError::WrongType),
        }
    }

    /// The number of fields of the hash at the key: `None` when there is no key,
    /// `WRONGTYPE` when it is not a hash.
    pub(super) fn hash_len(&self) -> Result<Option<usize>, LockError> {
        let key_type = api!(RedisModule_KeyType);
        let value_length = api!(RedisModule_ValueLength);
        if self.key.is_null() {
            return Ok(None);
        }
        match unsafe { key_type(self.key) } as isize {
            raw::REDISMODULE_KEYTYPE_EMPTY => Ok(None),
            raw::REDISMODULE_KEYTYPE_HASH => Ok(Some(unsafe { value_length(self.key) })),
            _ => Err(LockError::WrongType),
        }
    }

    /// Takes ownership of a string the module API returned (null: none).
    pub(super) fn adopt(&self, s: *mut raw::RedisModuleString) -> Option<OwnedString> {
        (!s.is_null()).then(|| OwnedString::adopt(self.ctx, s))
    }

    /// The `len` fields of a hash of at most two. A listpack is scanned whole in one call;
    /// a hashtable (a hash that once had many fields, or a field or value too long for a
    /// listpack) one bucket or so per call, and it may have many empty buckets left (it is
    /// not shrunk while a fork runs, nor until its next delete): the scan goes on until it
    /// has the fields, bounded by [`MAX_SCAN_CALLS`] buckets.
    fn scan_fields(&self, len: usize) -> Result<Fields, LockError> {
        let create = api!(RedisModule_ScanCursorCreate);
        let destroy = api!(RedisModule_ScanCursorDestroy);
        let scan = api!(RedisModule_ScanKey);
        let mut fields: Fields = Vec::with_capacity(2);
        let cursor = unsafe { create() };
        for _ in 0..MAX_SCAN_CALLS {
            let more = unsafe {
                scan(
                    self.key,
                    cursor,
                    Some(collect_field),
                    (&mut fields as *mut Fields).cast::<c_void>(),
                )
            };
            if more == 0 || fields.len() >= len {
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

/// Teaches the token counter the token of the lock at `name`, if it is a lock (after a
/// `RESTORE` put it there).
pub fn learn_token(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
) -> Result<(), LockError> {
    learned(&LockKey::open(ctx, name, Mode::Read)?)
}

/// [`learn_token`] through a key Redis opened (a keyspace scan's): it stays open.
pub fn learn_token_of(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    key: *mut raw::RedisModuleKey,
) -> Result<(), LockError> {
    let key = ManuallyDrop::new(LockKey::new(ctx, key, name));
    learned(&key)
}

/// The counter learns the tokens of the key, whatever its kind: a plain lock's, or every
/// holder's of a semaphore or a read-write lock (whose commands mostly read only the
/// caller's own fields, so they would not see them). A key that is none of them teaches
/// nothing (a hash is read whole only when its shape says it is one), and is no error.
fn learned(key: &LockKey) -> Result<(), LockError> {
    let found = |read: Result<bool, LockError>| match read {
        Err(LockError::MissingApi(api)) => Err(LockError::MissingApi(api)),
        Ok(found) => Ok(found),
        Err(_) => Ok(false),
    };
    if found(key.read().map(|h| h.is_some()))? || found(key.read_sem().map(|s| s.is_some()))? {
        return Ok(());
    }
    if found(key.rw_marked())? {
        found(key.read_rw().map(|s| s.is_some()))?;
    }
    Ok(())
}

/// The `@token` field name.
pub fn token_field() -> Result<*mut raw::RedisModuleString, LockError> {
    static FIELD: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(ptr::null_mut());
    kept(&FIELD, TOKEN_FIELD)
}

unsafe extern "C" fn collect_field(
    _key: *mut raw::RedisModuleKey,
    field: *mut raw::RedisModuleString,
    value: *mut raw::RedisModuleString,
    privdata: *mut c_void,
) {
    crate::host::guard::entry("reading a lock's fields", (), || {
        // Runs inside ScanKey, called from `scan_fields` with a live `Vec` behind privdata.
        let fields = unsafe { &mut *privdata.cast::<Fields>() };
        let field = redis_module::RedisString::string_as_slice(field).to_vec();
        let value = redis_module::RedisString::string_as_slice(value).to_vec();
        fields.push((field, value));
    });
}
