//! Registers the numeric `rlock.*` configs and `rlock.publish` with callbacks of the
//! module's own, each run inside `guard::entry` as every function Redis calls is (the ones
//! `redis-module` generates catch no panic). Redis checks a numeric value against the
//! bounds given here, and an enum value against its names, before calling the setter.

use std::ffi::{c_char, c_int, c_longlong, c_uint, c_void, CString};
use std::ptr;
use std::sync::atomic::{AtomicI64, Ordering};

use redis_module::raw;

use crate::host::config::{self, PublishMode};
use crate::host::guard;

const OK: c_int = raw::REDISMODULE_OK as c_int;
const ERR: c_int = raw::REDISMODULE_ERR as c_int;

/// Registers `rlock.<name>`, an integer kept in `value`, between `min` and `max`.
pub fn register_number(
    ctx: *mut raw::RedisModuleCtx,
    name: &str,
    value: &'static AtomicI64,
    (default, min, max): (i64, i64, i64),
) -> Result<(), String> {
    let register =
        unsafe { raw::RedisModule_RegisterNumericConfig }.ok_or("no RegisterNumericConfig")?;
    let c_name = CString::new(name).map_err(|_| format!("bad config name {name}"))?;
    let flags = raw::REDISMODULE_CONFIG_DEFAULT as c_uint;
    // Redis keeps `privdata` for the server's life: the value is a static.
    let privdata = ptr::from_ref(value).cast_mut().cast::<c_void>();
    let registered = unsafe {
        register(
            ctx,
            c_name.as_ptr(),
            default,
            flags,
            min,
            max,
            Some(get_number),
            Some(set_number),
            None,
            privdata,
        )
    };
    (registered == OK)
        .then_some(())
        .ok_or_else(|| format!("cannot register rlock.{name}"))
}

extern "C" fn get_number(_name: *const c_char, privdata: *mut c_void) -> c_longlong {
    guard::entry("CONFIG GET of a numeric config", 0, || {
        number(privdata).map_or(0, |v| v.load(Ordering::Relaxed))
    })
}

extern "C" fn set_number(
    _name: *const c_char,
    value: c_longlong,
    privdata: *mut c_void,
    _err: *mut *mut raw::RedisModuleString,
) -> c_int {
    guard::entry("CONFIG SET of a numeric config", ERR, || {
        number(privdata).map_or(ERR, |v| {
            v.store(value, Ordering::Relaxed);
            OK
        })
    })
}

/// The variable behind a numeric config's `privdata` (see [`register_number`]).
fn number(privdata: *mut c_void) -> Option<&'static AtomicI64> {
    // Registered with a `&'static AtomicI64` as its privdata.
    unsafe { privdata.cast::<AtomicI64>().as_ref() }
}

/// The names and values of `rlock.publish`, in the order of [`PublishMode`].
const PUBLISH_NAMES: [&std::ffi::CStr; 3] = [c"publish", c"spublish", c"none"];
const PUBLISH_VALUES: [c_int; 3] = [
    PublishMode::publish as c_int,
    PublishMode::spublish as c_int,
    PublishMode::none as c_int,
];

/// Registers `rlock.publish`.
pub fn register_publish(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    let register = unsafe { raw::RedisModule_RegisterEnumConfig }.ok_or("no RegisterEnumConfig")?;
    // Redis copies the names.
    let mut names: Vec<*const c_char> = PUBLISH_NAMES.iter().map(|n| n.as_ptr()).collect();
    let registered = unsafe {
        register(
            ctx,
            c"publish".as_ptr(),
            PublishMode::publish as c_int,
            raw::REDISMODULE_CONFIG_DEFAULT as c_uint,
            names.as_mut_ptr(),
            PUBLISH_VALUES.as_ptr(),
            PUBLISH_VALUES.len() as c_int,
            Some(get_publish),
            Some(set_publish),
            None,
            ptr::null_mut(),
        )
    };
    (registered == OK)
        .then_some(())
        .ok_or_else(|| "cannot register rlock.publish".to_owned())
}

extern "C" fn get_publish(_name: *const c_char, _privdata: *mut c_void) -> c_int {
    guard::entry("CONFIG GET rlock.publish", 0, || {
        config::publish_mode() as c_int
    })
}

extern "C" fn set_publish(
    _name: *const c_char,
    value: c_int,
    _privdata: *mut c_void,
    _err: *mut *mut raw::RedisModuleString,
) -> c_int {
    guard::entry(
        "CONFIG SET rlock.publish",
        ERR,
        || match PublishMode::try_from(value) {
            Ok(mode) => {
                config::set_publish_mode(mode);
                OK
            }
            Err(_) => ERR,
        },
    )
}
