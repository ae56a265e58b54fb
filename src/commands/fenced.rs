/* LOCK.FENCED key owner token command [arg ...] */

//! Runs `command` only while `owner` holds the lock `key` with the holding of `token`: the
//! check and the command are one atomic step, so a holder paused past its lease cannot
//! write. The command runs through `host/call.rs`, with the caller's ACL permissions, and is
//! replicated as its effects.

use std::ffi::c_int;

use redis_module::raw;

use crate::commands::dispatch::{dispatch, Args};
use crate::host::{call, gate, guard, node};
use crate::store::{LockKey, Mode};
use rlock_core::error::LockError;
use rlock_core::fence::{self, InnerKey, INNER};
use rlock_core::reply::Reply;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let parsed = fence::parse(args.bytes())?;
    let command = args.strings().get(INNER..).unwrap_or_default();
    let in_script = node::flags(ctx) & raw::REDISMODULE_CTX_FLAGS_LUA != 0;
    fence::check_command(args.bytes().get(INNER..).unwrap_or_default(), in_script)?;
    // As a renewal would be: not on a (writable) replica, not while writes are paused, and
    // not while a stalled node may have been failed over behind its back.
    gate::client_writes(ctx)?;
    gate::renewals(node::now_ms())?;
    let key = LockKey::open(ctx, args.key()?, Mode::Read)?;
    let positions = call::keys_of(ctx, command)?;
    let keys: Vec<InnerKey<'_>> = positions
        .iter()
        .filter_map(|&(at, read_only)| {
            let name = args.bytes().get(INNER + at)?;
            Some(InnerKey { name, read_only })
        })
        .collect();
    fence::check_keys(key.name(), parsed.command, &keys, node::is_cluster(ctx))?;
    let holding = match key.read_as(&args.name(2)?) {
        // A read-write lock: its writer may write through the fence.
        // A semaphore, or any other hash: not a lock.
        Err(LockError::NotALock) => match key.read_rw() {
            Ok(Some(state)) => fence::rw_holding(&state, key.name(), parsed.owner, node::now_ms())?,
            Ok(None) => None,
            Err(LockError::NotARwLock) => return Err(LockError::NotALock),
            Err(e) => return Err(e),
        },
        read => read?,
    };
    fence::check_holding(holding.as_ref(), key.name(), parsed.owner, parsed.token)?;
    // The key handle is closed before the command runs: the command may write near it.
    drop(key);
    call::call_and_reply(ctx, command, in_script)?;
    Ok(Reply::Sent)
}

/// The C function of `LOCK.FENCED`: a command, or (`getkeys-api`) a question about its
/// keys.
pub(super) unsafe extern "C" fn call(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    let ok = raw::REDISMODULE_OK as c_int;
    guard::entry("LOCK.FENCED", ok, || {
        if call::is_keys_request(ctx) {
            let strings = match usize::try_from(argc) {
                // Redis passes argc live strings in argv.
                Ok(n) if !argv.is_null() => unsafe { std::slice::from_raw_parts(argv, n) },
                _ => &[],
            };
            call::report_keys(ctx, strings, INNER);
            return ok;
        }
        // Redis passes argc live strings in argv.
        unsafe { dispatch(ctx, argv, argc, "LOCK.FENCED", run) }
    })
}
