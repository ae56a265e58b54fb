//! Whether a read-write lock the module wrote still has a holder whose lease has not
//! ended: its fields are scanned until one such holder is found, so a lock whose holders
//! are mostly live answers after a few fields, whatever its size.

use std::ffi::c_void;

use redis_module::raw;

use super::{LockKey, MAX_SCAN_CALLS};
use crate::host::ffi::api;
use rlock_core::error::LockError;
use rlock_core::rwlock::{parse_meta, HOLDER_PREFIX};

/// What the scan looks for, and what it found.
struct Search {
    now_ms: i64,
    live: bool,
}

impl LockKey {
    /// Whether some holder's lease ends after `now_ms`, by the `@h:` fields of a hash the
    /// module wrote (all of whose holders have one); false when there is no key.
    pub fn rw_has_live_holder(&self, now_ms: i64) -> Result<bool, LockError> {
        if self.hash_len()?.is_none() {
            return Ok(false);
        }
        let create = api!(RedisModule_ScanCursorCreate);
        let destroy = api!(RedisModule_ScanCursorDestroy);
        let scan = api!(RedisModule_ScanKey);
        let mut search = Search {
            now_ms,
            live: false,
        };
        let cursor = unsafe { create() };
        for _ in 0..MAX_SCAN_CALLS {
            let data = (&mut search as *mut Search).cast::<c_void>();
            let more = unsafe { scan(self.key, cursor, Some(look_at_field), data) };
            if more == 0 || search.live {
                break;
            }
        }
        unsafe { destroy(cursor) };
        Ok(search.live)
    }
}

unsafe extern "C" fn look_at_field(
    _key: *mut raw::RedisModuleKey,
    field: *mut raw::RedisModuleString,
    value: *mut raw::RedisModuleString,
    privdata: *mut c_void,
) {
    crate::host::guard::entry("reading a lock's leases", (), || {
        // Runs inside ScanKey, called from `rw_has_live_holder` with a live `Search`.
        let search = unsafe { &mut *privdata.cast::<Search>() };
        let field = redis_module::RedisString::string_as_slice(field);
        if search.live || !field.starts_with(HOLDER_PREFIX) {
            return;
        }
        let value = redis_module::RedisString::string_as_slice(value);
        if parse_meta(value).is_some_and(|(_, deadline)| deadline > search.now_ms) {
            search.live = true;
        }
    });
}
