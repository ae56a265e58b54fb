//! A read-write lock's hash: reading its holders, and writing one holder at a time, each
//! write replicated as one `RWLOCK.APPLY key owner reads writes token unix-ms`, which makes
//! that holder exactly so (0 and 0: gone) on a replica or in an AOF, whatever time it is
//! there. A write that leaves no holder deletes the key. The key's TTL never falls below a
//! holder's lease: it is raised to each new deadline, and stays when a holder leaves. The
//! `@w` field marks the hashes the module writes and names the writer; with it, most
//! commands look up a few fields ([`LockKey::glance`]) instead of reading the whole hash.

use std::ffi::c_int;
use std::ptr;
use std::sync::atomic::AtomicPtr;

use redis_module::raw;

use super::{LockKey, Name};
use crate::host::config;
use crate::host::ffi::{api, kept, OwnedString};
use rlock_core::args::strict_i64;
use rlock_core::error::LockError;
use rlock_core::rwglance::Glance;
use rlock_core::rwlock::{
    meta_value, parse_meta, RwHolder, RwState, HOLDER_PREFIX, MAX_FIELDS, MODE_FIELD, MODE_VALUE,
    WRITER_FIELD, WRITE_SUFFIX,
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
    /// Reads the read-write lock: `None` when there is no key; `WRONGTYPE` for another
    /// value or shape. The token counter learns every holder's token.
    pub fn read_rw(&self) -> Result<Option<RwState>, LockError> {
        let Some(len) = self.hash_len()? else {
            return Ok(None);
        };
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

    /// Whether the key is a read-write lock the module wrote (its `@w` mark): one lookup.
    pub fn rw_marked(&self) -> Result<bool, LockError> {
        if self.hash_len()?.is_none() {
            return Ok(false);
        }
        let none = ptr::null_mut();
        let [w, ..] = self.get4([writer_field()?, none, none, none]);
        Ok(w.is_some())
    }

    /// The `@w` mark, `owner`'s fields, the writer's lease, in few lookups (`fields` 0: none).
    pub fn glance(&self, owner: &Name<'_>) -> Result<Glance, LockError> {
        let Some(fields) = self.hash_len()? else {
            return Ok(Glance::default());
        };
        let names = HolderFields::new(self.ctx, owner.bytes)?;
        let [w, meta, reads, writes] =
            self.get4([writer_field()?, names.meta.0, owner.raw, names.write.0]);
        let Some(w) = w else {
            return Ok(Glance {
                fields,
                ..Glance::default()
            });
        };
        let count =
            |s: &Option<OwnedString>| s.as_ref().and_then(|s| strict_i64(s.bytes())).unwrap_or(0);
        let mine = meta
            .as_ref()
            .and_then(|m| parse_meta(m.bytes()))
            .map(|(token, deadline)| RwHolder {
                owner: owner.bytes.to_vec(),
                reads: count(&reads),
                writes: count(&writes),
                token,
                deadline_ms: Some(deadline),
            });
        if let Some(h) = &mine {
            TOKENS.learn(h.token, config::token_gap());
        }
        let writer = (!w.bytes().is_empty()).then(|| w.bytes().to_vec());
        let writer_deadline = match &writer {
            Some(writer) if writer != owner.bytes => self.deadline_of(writer)?,
            _ => None,
        };
        Ok(Glance {
            fields,
            marked: true,
            writer,
            writer_deadline,
            mine,
        })
    }

    /// The lease end of `owner`'s holding, from its `@h:` field.
    fn deadline_of(&self, owner: &[u8]) -> Result<Option<i64>, LockError> {
        let meta = OwnedString::new(self.ctx, &[HOLDER_PREFIX, owner].concat())?;
        let [value, ..] = self.get4([meta.0, ptr::null_mut(), ptr::null_mut(), ptr::null_mut()]);
        Ok(value
            .and_then(|v| parse_meta(v.bytes()))
            .map(|(_, deadline)| deadline))
    }

    /// The values of up to four fields (a null name ends the list) in one lookup.
    pub(super) fn get4(&self, names: [*mut raw::RedisModuleString; 4]) -> [Option<OwnedString>; 4] {
        let mut out: [*mut raw::RedisModuleString; 4] = [ptr::null_mut(); 4];
        if let Some(hash_get) = unsafe { raw::RedisModule_HashGet } {
            let [o0, o1, o2, o3] = &mut out;
            let end = ptr::null_mut::<raw::RedisModuleString>();
            unsafe {
                match names {
                    [a, b, c, d] if !b.is_null() => hash_get(
                        self.key,
                        raw::REDISMODULE_HASH_NONE as c_int,
                        a,
                        o0 as *mut _,
                        b,
                        o1 as *mut _,
                        c,
                        o2 as *mut _,
                        d,
                        o3 as *mut _,
                        end,
                    ),
                    [a, ..] => hash_get(
                        self.key,
                        raw::REDISMODULE_HASH_NONE as c_int,
                        a,
                        o0 as *mut _,
                        end,
                    ),
                };
            }
        }
        out.map(|s| self.adopt(s))
    }

    /// Makes `entry` the holding of its owner (or takes it out), replicated as one
    /// `RWLOCK.APPLY`; no holder left deletes the key. Returns whether the key exists.
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

    /// The local write of [`apply_rw`](Self::apply_rw), and of a replayed `RWLOCK.APPLY`.
    pub fn set_holder(&self, entry: &RwEntry<'_>) -> Result<bool, LockError> {
        let hash_set = api!(RedisModule_HashSet);
        let value_length = api!(RedisModule_ValueLength);
        let gone = entry.reads == 0 && entry.writes == 0;
        let owner = entry.owner.bytes;
        let names = HolderFields::new(self.ctx, owner)?;
        let (write_field, meta_field) = (&names.write, &names.meta);
        let meta = OwnedString::new(self.ctx, &meta_value(entry.token, entry.deadline_ms))?;
        // The mark names the writer; it is left as it is unless this holder starts or stops
        // being the writer.
        let [current, ..] = self.get4([
            writer_field()?,
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
        ]);
        let current = current.as_ref().map_or(&[][..], OwnedString::bytes);
        let writer: &[u8] = match (entry.writes > 0, current == owner) {
            (true, _) => owner,
            (false, true) => &[],
            (false, false) => current,
        };
        let writer = OwnedString::new(self.ctx, writer)?;
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
                writer_field()?,
                writer.0,
                entry.owner.raw,
                reads.raw(),
                write_field.0,
                writes.raw(),
                meta_field.0,
                meta_raw,
                ptr::null_mut::<raw::RedisModuleString>(),
            );
        }
        // `mode` and `@w` alone: nobody holds it.
        if unsafe { value_length(self.key) } <= 2 {
            self.delete_locally()?;
            return Ok(false);
        }
        if !gone {
            self.raise_ttl(entry.deadline_ms)?;
        }
        self.notify(raw::REDISMODULE_NOTIFY_HASH, c"hset")?;
        Ok(true)
    }

    /// Raises the key's TTL to end no earlier than `deadline_ms`, compared as absolute times
    /// so that a replica or an AOF replay decides as the master did, whenever it runs.
    fn raise_ttl(&self, deadline_ms: i64) -> Result<(), LockError> {
        let get_abs_expire = api!(RedisModule_GetAbsExpire);
        let expire_at = unsafe { get_abs_expire(self.key) };
        if expire_at < 0 || expire_at < deadline_ms {
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

fn writer_field() -> Result<*mut raw::RedisModuleString, LockError> {
    static FIELD: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(ptr::null_mut());
    kept(&FIELD, WRITER_FIELD)
}

/// The names of a holder's `<owner>:write` and `@h:<owner>` fields.
struct HolderFields {
    write: OwnedString,
    meta: OwnedString,
}

impl HolderFields {
    fn new(ctx: *mut raw::RedisModuleCtx, owner: &[u8]) -> Result<HolderFields, LockError> {
        Ok(HolderFields {
            write: OwnedString::new(ctx, &[owner, WRITE_SUFFIX].concat())?,
            meta: OwnedString::new(ctx, &[HOLDER_PREFIX, owner].concat())?,
        })
    }
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
