//! The command that `LOCK.FENCED` runs inside it, through Redis's module API: its keys
//! (`RedisModule_GetCommandKeysWithFlags`), the keys Redis is told for ACL and Cluster
//! routing (the `getkeys-api` callback), and the call itself (`RedisModule_Call`), whose
//! reply is passed to the client as it is.
//!
//! The call's flags: `!` replicates the command's effects (never `LOCK.FENCED` itself),
//! `C` checks the caller's ACL for the command and its keys, `M` refuses it when
//! `maxmemory` is reached and it may use memory, `0` answers in the caller's protocol.
//! Not `E` (errors before the command runs as error replies): its texts differ between
//! servers (Redis 7.0 answers an ACL denial with `ERR acl verification failed`), and
//! clients match the `NOPERM` code, so the module answers those errors itself, from
//! `errno`, the same on every server. `S` (script mode: commands a script may not run are
//! refused) only when `LOCK.FENCED` itself runs in a script or a function: there it stops
//! a script inside a script, which Redis cannot run (it asserts), whatever the command is
//! named (`rename-command`). Elsewhere `S` would refuse `EVAL` and `FCALL`, which
//! `LOCK.FENCED` exists to run; what it would refuse besides (blocking and transaction
//! commands) `fence.rs` refuses by name, and `LOCK.FENCED` is itself a `write` command, so
//! Redis refuses it where a script's writes would be refused.

use std::ffi::{c_int, c_void, CStr, CString};
use std::io;
use std::ptr;

use redis_module::raw;

use crate::host::ffi::api;
use rlock_core::error::{clip, FenceError, LockError, Refusal};
use rlock_core::fence;

/// The module string arguments of a command, its name first.
pub type Argv<'a> = &'a [*mut raw::RedisModuleString];

/// Calls `each` with the position (into `argv`) of every key of the command `argv`, and
/// whether it only reads it: no call for a command without keys. Nothing is allocated
/// here: the positions are read from Redis's own arrays.
pub fn keys_of(
    ctx: *mut raw::RedisModuleCtx,
    argv: Argv<'_>,
    mut each: impl FnMut(usize, bool),
) -> Result<(), LockError> {
    let get_keys = api!(RedisModule_GetCommandKeysWithFlags);
    let free = api!(RedisModule_Free);
    let argc = c_int::try_from(argv.len()).map_err(|_| LockError::WrongArity)?;
    let (mut count, mut flags): (c_int, *mut c_int) = (0, ptr::null_mut());
    // Redis only reads the arguments.
    let positions =
        unsafe { get_keys(ctx, argv.as_ptr().cast_mut(), argc, &mut count, &mut flags) };
    let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
    if positions.is_null() {
        let command = || clip(name_of(argv));
        return match errno {
            0 => Ok(()),
            ENOENT => Err(LockError::Fence(FenceError::Unknown { command: command() })),
            _ => Err(LockError::Fence(FenceError::Arity { command: command() })),
        };
    }
    for i in 0..usize::try_from(count).unwrap_or(0) {
        // Redis returned `count` positions, and as many flags when `flags` is set.
        let at = usize::try_from(unsafe { *positions.add(i) }).unwrap_or(0);
        let read_only = !flags.is_null() && is_read_only(unsafe { *flags.add(i) });
        each(at, read_only);
    }
    unsafe { free(positions.cast::<c_void>()) };
    if !flags.is_null() {
        unsafe { free(flags.cast::<c_void>()) };
    }
    Ok(())
}

/// Command names shorter than this are made into C strings on the stack.
const SHORT_NAME: usize = 64;

const ENOENT: i32 = 2;
const EACCES: i32 = 13;
const ENOSPC: i32 = 28;
const ESPIPE: i32 = 29;

fn is_read_only(flags: c_int) -> bool {
    let writes = raw::REDISMODULE_CMD_KEY_RW
        | raw::REDISMODULE_CMD_KEY_OW
        | raw::REDISMODULE_CMD_KEY_RM
        | raw::REDISMODULE_CMD_KEY_INSERT
        | raw::REDISMODULE_CMD_KEY_DELETE
        | raw::REDISMODULE_CMD_KEY_UPDATE;
    flags as u32 & raw::REDISMODULE_CMD_KEY_RO != 0 && flags as u32 & writes == 0
}

/// The bytes of a command's name.
pub fn name_of(argv: Argv<'_>) -> &[u8] {
    argv.first()
        .map_or(&[][..], |s| redis_module::RedisString::string_as_slice(*s))
}

/// Whether Redis calls the command only to learn its keys (`getkeys-api`).
pub fn is_keys_request(ctx: *mut raw::RedisModuleCtx) -> bool {
    unsafe { raw::RedisModule_IsKeysPositionRequest.is_some_and(|f| f(ctx) != 0) }
}

/// Tells Redis the keys of `LOCK.FENCED argv`: the lock's key (read) at 1, then the inner
/// command's keys, with the inner command's flags, from position `inner` on.
pub fn report_keys(ctx: *mut raw::RedisModuleCtx, argv: Argv<'_>, inner: usize) {
    let Some(key_at) = (unsafe { raw::RedisModule_KeyAtPosWithFlags }) else {
        return;
    };
    if argv.len() > 1 {
        let read = raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS;
        unsafe { key_at(ctx, 1, read as c_int) };
    }
    let Some(command) = argv.get(inner..).filter(|a| !a.is_empty()) else {
        return;
    };
    if fence::is_lock_command(name_of(command)) {
        // Refused when it runs; looking its keys up would recurse once per nesting.
        return;
    }
    // A command Redis cannot find the keys of reports none.
    let _ = keys_of(ctx, command, |at, read_only| {
        let flags = if read_only {
            raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS
        } else {
            raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS
        };
        if let Ok(pos) = c_int::try_from(inner + at) {
            unsafe { key_at(ctx, pos, flags as c_int) };
        }
    });
}

/// Runs the command `argv` (its name first) and sends its reply to the client;
/// `in_script`: `LOCK.FENCED` runs inside a script or a function.
pub fn call_and_reply(
    ctx: *mut raw::RedisModuleCtx,
    argv: Argv<'_>,
    in_script: bool,
) -> Result<(), LockError> {
    let call = api!(RedisModule_Call);
    let forward = api!(RedisModule_ReplyWithCallReply);
    let free = api!(RedisModule_FreeCallReply);
    let name_bytes = name_of(argv);
    let command = || clip(name_bytes);
    let unknown = || LockError::Fence(FenceError::Unknown { command: command() });
    // The name with its NUL: on the stack when it is short, as command names are.
    let mut short = [0u8; SHORT_NAME];
    let long: CString;
    let name: &CStr = match short.get_mut(..name_bytes.len()) {
        Some(head) if name_bytes.len() < SHORT_NAME && !name_bytes.contains(&0) => {
            head.copy_from_slice(name_bytes);
            CStr::from_bytes_until_nul(&short).map_err(|_| unknown())?
        }
        _ => {
            long = CString::new(name_bytes).map_err(|_| unknown())?;
            &long
        }
    };
    let args = argv.get(1..).unwrap_or_default();
    if in_script && refused_in_scripts(ctx, argv)? {
        return Err(LockError::Fence(FenceError::Refused {
            command: command(),
            why: Refusal::InScript,
        }));
    }
    let reply = unsafe {
        call(
            ctx,
            name.as_ptr(),
            if in_script { c"!CMS0v" } else { c"!CM0v" }.as_ptr(),
            args.as_ptr(),
            args.len(),
        )
    };
    if reply.is_null() {
        let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
        return Err(LockError::Fence(match errno {
            ENOENT => FenceError::Unknown { command: command() },
            EACCES => FenceError::NoPerm { command: command() },
            ESPIPE => FenceError::Refused {
                command: command(),
                why: Refusal::InScript,
            },
            ENOSPC => FenceError::Oom,
            errno => FenceError::NotRun {
                command: command(),
                errno,
            },
        }));
    }
    unsafe {
        forward(ctx, reply);
        free(reply);
    }
    Ok(())
}

/// Whether the command `argv` may not run in a script (its `noscript` flag, as `COMMAND
/// INFO` tells it, whatever it is named): asked before the call inside a script, since a
/// server may run such a command nested under `S` instead of refusing it (Valkey 9 runs a
/// renamed `FCALL` inside the script, and crashes).
fn refused_in_scripts(ctx: *mut raw::RedisModuleCtx, argv: Argv<'_>) -> Result<bool, LockError> {
    let (call, free) = (api!(RedisModule_Call), api!(RedisModule_FreeCallReply));
    let (element, text) = (
        api!(RedisModule_CallReplyArrayElement),
        api!(RedisModule_CallReplyStringPtr),
    );
    let Some(&name) = argv.first() else {
        return Ok(false);
    };
    let reply = unsafe {
        call(
            ctx,
            c"COMMAND".as_ptr(),
            c"cs".as_ptr(),
            c"INFO".as_ptr(),
            name,
        )
    };
    if reply.is_null() {
        return Ok(false);
    }
    // [[name, arity, [flag, ...], ...]]; an unknown command's entry is nil.
    let entry = unsafe { element(reply, 0) };
    let flags = if entry.is_null() {
        ptr::null_mut()
    } else {
        unsafe { element(entry, 2) }
    };
    let mut refused = false;
    let mut i = 0;
    while !flags.is_null() {
        let flag = unsafe { element(flags, i) };
        if flag.is_null() {
            break;
        }
        let mut len = 0usize;
        let bytes = unsafe { text(flag, &mut len) };
        // The reply owns these bytes until it is freed, below.
        if !bytes.is_null()
            && unsafe { std::slice::from_raw_parts(bytes.cast::<u8>(), len) } == b"noscript"
        {
            refused = true;
            break;
        }
        i += 1;
    }
    unsafe { free(reply) };
    Ok(refused)
}
