//! The few ways the module handles Redis's C API: fetching a function pointer with an error
//! when the server lacks it ([`api!`]), module strings freed on drop ([`OwnedString`]), and
//! strings kept for the module's lifetime ([`kept`]).

use std::ffi::c_char;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use redis_module::raw;

use rlock_core::error::LockError;

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

/// The ACL user name the calling client runs as; `None` when it has none (the master's
/// link, an AOF being loaded) or the server lacks the API.
pub fn current_user(ctx: *mut raw::RedisModuleCtx) -> Option<Vec<u8>> {
    let name = unsafe { raw::RedisModule_GetCurrentUserName }?;
    adopt_name(ctx, unsafe { name(ctx) })
}

/// The ACL user name the connection `id` runs as; `None` when there is no such
/// connection, it has no user, or the server lacks the API.
pub fn user_of(ctx: *mut raw::RedisModuleCtx, id: u64) -> Option<Vec<u8>> {
    let name = unsafe { raw::RedisModule_GetClientUserNameById }?;
    adopt_name(ctx, unsafe { name(ctx, id) })
}

fn adopt_name(ctx: *mut raw::RedisModuleCtx, s: *mut raw::RedisModuleString) -> Option<Vec<u8>> {
    (!s.is_null()).then(|| OwnedString::adopt(ctx, s).bytes().to_vec())
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
