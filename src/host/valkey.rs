//! What only Valkey 9 and later have, learned once at load: atomic slot migration
//! (`CLUSTER MIGRATESLOTS`). The module declares that it handles it with the module option
//! bit Valkey reads, and reads the context flags that mark the migration's clients. Both
//! bits mean something else, or nothing, on Redis: they are used only where the server is
//! Valkey 9 or later, named so by its `INFO server` (`server_name:valkey`, and
//! `RedisModule_GetServerVersion`, which Valkey answers with its own version), and where
//! `RedisModule_GetModuleOptionsAll` lists the option.

use std::ffi::{c_int, CStr};
use std::sync::atomic::{AtomicBool, Ordering};

use redis_module::raw;

/// `VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION` (valkeymodule.h).
const HANDLE_ATOMIC_SLOT_MIGRATION: c_int = 1 << 5;
/// `VALKEYMODULE_CTX_FLAGS_SLOT_IMPORT_CLIENT`: the client replaying a slot's snapshot and
/// commands on the target of a migration.
pub const SLOT_IMPORT_CLIENT: u32 = 1 << 25;
/// The first version with atomic slot migration, as `RedisModule_GetServerVersion` counts.
const VALKEY_9: c_int = 0x0009_0000;

/// Whether this server is Valkey 9 or later, with atomic slot migration.
static ATOMIC_MIGRATION: AtomicBool = AtomicBool::new(false);

/// Learns at load whether the server is Valkey 9 or later. Any API it lacks, or an answer
/// it cannot read, leaves the module as on Redis.
pub fn detect(ctx: *mut raw::RedisModuleCtx) {
    let version = unsafe { raw::RedisModule_GetServerVersion }.map_or(0, |f| unsafe { f() });
    let options = unsafe { raw::RedisModule_GetModuleOptionsAll }.map_or(0, |f| unsafe { f() });
    let valkey = version >= VALKEY_9
        && options & HANDLE_ATOMIC_SLOT_MIGRATION != 0
        && server_name(ctx).as_deref() == Some("valkey");
    ATOMIC_MIGRATION.store(valkey, Ordering::Relaxed);
}

/// Whether the server migrates slots atomically (Valkey 9 or later).
pub fn atomic_migration() -> bool {
    ATOMIC_MIGRATION.load(Ordering::Relaxed)
}

/// The server refused what atomic slot migration needs: the module does not declare it.
pub fn without_atomic_migration() {
    ATOMIC_MIGRATION.store(false, Ordering::Relaxed);
}

/// The module options to add to the module's own: the atomic slot migration bit on
/// Valkey 9 or later, none elsewhere.
pub fn module_options() -> c_int {
    if atomic_migration() {
        HANDLE_ATOMIC_SLOT_MIGRATION
    } else {
        0
    }
}

/// `server_name` of `INFO server` (Valkey 8 and later have it; Redis does not).
fn server_name(ctx: *mut raw::RedisModuleCtx) -> Option<String> {
    let (Some(get), Some(field), Some(free)) = (unsafe {
        (
            raw::RedisModule_GetServerInfo,
            raw::RedisModule_ServerInfoGetFieldC,
            raw::RedisModule_FreeServerInfo,
        )
    }) else {
        return None;
    };
    let info = unsafe { get(ctx, c"server".as_ptr()) };
    if info.is_null() {
        return None;
    }
    let value = unsafe { field(info, c"server_name".as_ptr()) };
    // The server returns a C string owned by `info`, or null when the field is missing.
    let name = (!value.is_null()).then(|| {
        unsafe { CStr::from_ptr(value) }
            .to_string_lossy()
            .into_owned()
    });
    unsafe { free(ctx, info) };
    name
}
