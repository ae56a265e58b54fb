//! Reading a lock knowing who asks: when the caller holds it, two field lookups (its
//! count and the token) instead of a scan of the hash, and no copy of its name.

use std::ffi::c_int;
use std::ptr;

use redis_module::raw;

use super::{token_field, LockKey, Name};
use crate::host::config;
use crate::host::ffi::{api, OwnedString};
use rlock_core::args::strict_i64;
use rlock_core::error::LockError;
use rlock_core::lock::Holding;
use rlock_core::token::TOKENS;

/// A lock as [`LockKey::read_own`] found it.
pub enum Read {
    /// Held by the owner who asked: its count (≥ 1) and token.
    Own { count: i64, token: i64 },
    /// Anything else, as [`LockKey::read`] reads it.
    Other(Option<Holding>),
}

impl LockKey {
    /// Reads the lock knowing who asks: when `owner` holds it, two field lookups replace
    /// the scan of the hash.
    pub fn read_as(&self, owner: &Name<'_>) -> Result<Option<Holding>, LockError> {
        Ok(match self.read_own(owner)? {
            Read::Own { count, token } => Some(Holding {
                owner: owner.bytes.to_vec(),
                count,
                token,
            }),
            Read::Other(holding) => holding,
        })
    }

    /// [`LockKey::read_as`] knowing whom the lock was last handed to (`hint`, a waiter's
    /// read): when that owner holds it, two field lookups (its count and the token) replace
    /// the scan of the hash. Whatever else the key holds (the asker's own holding included)
    /// is read in full, as [`LockKey::read`] reads it.
    pub fn read_as_hinted(
        &self,
        owner: &Name<'_>,
        hint: &[u8],
    ) -> Result<Option<Holding>, LockError> {
        if hint == owner.bytes || hint.first().is_none_or(|b| *b == b'@') {
            return self.read_as(owner);
        }
        let Some(len) = self.hash_len()? else {
            return Ok(None);
        };
        if !(1..=2).contains(&len) {
            return self.read();
        }
        let hinted = OwnedString::new(self.ctx, hint)?;
        match self.held_by(hinted.0, len)? {
            Some((count, token)) => Ok(Some(Holding {
                owner: hint.to_vec(),
                count,
                token,
            })),
            None => self.read(),
        }
    }

    /// [`LockKey::read_as`] without a copy of the owner's name when `owner` holds the lock.
    pub fn read_own(&self, owner: &Name<'_>) -> Result<Read, LockError> {
        let Some(len) = self.hash_len()? else {
            return Ok(Read::Other(None));
        };
        if owner.bytes.first() == Some(&b'@') || !(1..=2).contains(&len) {
            return self.read().map(Read::Other);
        }
        match self.held_by(owner.raw, len)? {
            Some((count, token)) => Ok(Read::Own { count, token }),
            // Not held by `owner`, or not a lock: the full read says which.
            None => self.read().map(Read::Other),
        }
    }

    /// The count and token of the lock of `len` fields (1 or 2) if the owner whose field is
    /// `field` holds it: two field lookups (the field and `@token`).
    #[inline]
    fn held_by(
        &self,
        field: *mut raw::RedisModuleString,
        len: usize,
    ) -> Result<Option<(i64, i64)>, LockError> {
        let hash_get = api!(RedisModule_HashGet);
        let mut count: *mut raw::RedisModuleString = ptr::null_mut();
        let mut token: *mut raw::RedisModuleString = ptr::null_mut();
        unsafe {
            hash_get(
                self.key,
                raw::REDISMODULE_HASH_NONE as c_int,
                field,
                &mut count as *mut _,
                token_field()?,
                &mut token as *mut _,
                ptr::null_mut::<raw::RedisModuleString>(),
            );
        }
        let (count, token) = (self.adopt(count), self.adopt(token));
        let held = shape(&count, &token, len);
        if let Some((_, token)) = held {
            TOKENS.learn(token, config::token_gap());
        }
        Ok(held)
    }
}

/// (count, token) of a lock of `len` fields whose owner's field holds `count` and whose
/// `@token` field holds `token`: a count alone (a script client's lock), or a count and a
/// token; `None` if they are not that.
fn shape(
    count: &Option<OwnedString>,
    token: &Option<OwnedString>,
    len: usize,
) -> Option<(i64, i64)> {
    let number = |s: &Option<OwnedString>| s.as_ref().and_then(|s| strict_i64(s.bytes()));
    match (number(count), token, number(token), len) {
        (Some(c), None, _, 1) if c > 0 => Some((c, 0)),
        (Some(c), Some(_), Some(t), 2) if c > 0 && t >= 0 => Some((c, t)),
        _ => None,
    }
}
