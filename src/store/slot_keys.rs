//! The keys of whole slots, as a cluster node lists them (`CLUSTER GETKEYSINSLOT`): after an
//! atomic slot migration (Valkey 9) brought them here, the token counter learns every lock's
//! token among them, as it learns a restored key's.

use std::ffi::{c_char, CString};

use redis_module::raw;

use crate::host::ffi::OwnedString;
use crate::store;
use rlock_core::error::LockError;

/// The counter learns the tokens of every key in the slots `first..=last` of each range
/// (the slots must be this node's). Its cost is that of the keys it reads: no more than
/// the migration that brought them. A key that is no lock teaches nothing.
pub fn learn_tokens(
    ctx: *mut raw::RedisModuleCtx,
    ranges: &[(u16, u16)],
) -> Result<usize, LockError> {
    let mut learned = 0;
    for &(first, last) in ranges {
        for slot in first..=last.min(16383) {
            for name in keys_in_slot(ctx, slot) {
                let name = OwnedString::new(ctx, &name)?;
                store::learn_token(ctx, name.0)?;
                learned += 1;
            }
        }
    }
    Ok(learned)
}

/// The names of the keys of `slot` on this node (none when the server cannot say).
fn keys_in_slot(ctx: *mut raw::RedisModuleCtx, slot: u16) -> Vec<Vec<u8>> {
    let Some(count) = call(ctx, &["COUNTKEYSINSLOT", &slot.to_string()], |reply| {
        Some(unsafe { raw::RedisModule_CallReplyInteger?(reply) })
    }) else {
        return Vec::new();
    };
    if count <= 0 {
        return Vec::new();
    }
    let listed = call(
        ctx,
        &["GETKEYSINSLOT", &slot.to_string(), &count.to_string()],
        |reply| Some(names(reply)),
    );
    listed.unwrap_or_default()
}

/// The strings of an array reply.
fn names(reply: *mut raw::RedisModuleCallReply) -> Vec<Vec<u8>> {
    let (Some(element), Some(string_ptr)) = (unsafe {
        (
            raw::RedisModule_CallReplyArrayElement,
            raw::RedisModule_CallReplyStringPtr,
        )
    }) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    // The server answers null past the array's end (or for a reply that is no array).
    for at in 0.. {
        let value = unsafe { element(reply, at) };
        if value.is_null() {
            break;
        }
        let mut len = 0usize;
        let ptr: *const c_char = unsafe { string_ptr(value, &mut len) };
        if !ptr.is_null() {
            // The reply owns these bytes until it is freed, after this copy.
            names.push(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) }.to_vec());
        }
    }
    names
}

/// `CLUSTER <args>` (two or three arguments), its reply read by `read` before it is freed.
fn call<T>(
    ctx: *mut raw::RedisModuleCtx,
    args: &[&str],
    read: impl FnOnce(*mut raw::RedisModuleCallReply) -> Option<T>,
) -> Option<T> {
    let (call, free) = unsafe { (raw::RedisModule_Call?, raw::RedisModule_FreeCallReply?) };
    let args: Vec<CString> = args.iter().filter_map(|a| CString::new(*a).ok()).collect();
    let reply = unsafe {
        match args.as_slice() {
            [a, b] => call(
                ctx,
                c"CLUSTER".as_ptr(),
                c"cc".as_ptr(),
                a.as_ptr(),
                b.as_ptr(),
            ),
            [a, b, c] => call(
                ctx,
                c"CLUSTER".as_ptr(),
                c"ccc".as_ptr(),
                a.as_ptr(),
                b.as_ptr(),
                c.as_ptr(),
            ),
            _ => return None,
        }
    };
    if reply.is_null() {
        return None;
    }
    let value = read(reply);
    unsafe { free(reply) };
    value
}
