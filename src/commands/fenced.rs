/* LOCK.FENCED key owner token command [arg ...] */

//! Runs `command` only while `owner` holds the lock `key` with the holding of `token`: the
//! check and the command are one atomic step, so a holder paused past its lease cannot
//! write. The command runs through `host/call.rs`, with the caller's ACL permissions, and is
//! replicated as its effects.

use std::ffi::c_int;

use redis_module::raw;

use crate::commands::dispatch::{dispatch, Args};
use crate::host::{call, gate, guard, node};
use crate::store::{LockKey, Mode, Read};
use rlock_core::error::LockError;
use rlock_core::fence::{self, InnerKey, INNER};
use rlock_core::lock::Holding;
use rlock_core::reply::Reply;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let parsed = fence::parse(args.bytes())?;
    let command = args.strings().get(INNER..).unwrap_or_default();
    let flags = node::flags(ctx);
    let in_script = flags & raw::REDISMODULE_CTX_FLAGS_LUA != 0;
    fence::check_command(args.bytes().get(INNER..).unwrap_or_default(), in_script)?;
    // As a renewal would be: not on a (writable) replica, not while writes are paused, and
    // not while a stalled node may have been failed over behind its back.
    gate::client_writes(ctx)?;
    gate::renewals(node::now_ms())?;
    let key = LockKey::open(ctx, args.key()?, Mode::Read)?;
    // Up to INLINE_KEYS keys on the stack; more in a Vec.
    let mut inline = [InnerKey {
        name: &[],
        read_only: false,
    }; INLINE_KEYS];
    let (mut found, mut spilled) = (0, Vec::new());
    call::keys_of(ctx, command, |at, read_only| {
        let Some(&name) = args.bytes().get(INNER + at) else {
            return;
        };
        let key = InnerKey { name, read_only };
        match inline.get_mut(found) {
            Some(slot) => *slot = key,
            None => {
                if spilled.is_empty() {
                    spilled.extend_from_slice(&inline);
                }
                spilled.push(key);
            }
        }
        found += 1;
    })?;
    let keys = inline.get(..found).unwrap_or(&spilled);
    let cluster = flags & raw::REDISMODULE_CTX_FLAGS_CLUSTER != 0;
    fence::check_keys(key.name(), parsed.command, keys, cluster)?;
    let read = key.read_own(&args.name(2)?);
    // The owner holds the lock with this very token: the check passes, nothing is copied.
    if !matches!(read, Ok(Read::Own { token, .. }) if token == parsed.token) {
        let holding = match read {
            Ok(Read::Own { count, token }) => Some(Holding {
                owner: parsed.owner.to_vec(),
                count,
                token,
            }),
            Ok(Read::Other(holding)) => holding,
            // A read-write lock: its writer may write through the fence.
            // A semaphore, or any other hash: not a lock.
            Err(LockError::NotALock) => match key.read_rw() {
                Ok(Some(state)) => {
                    fence::rw_holding(&state, key.name(), parsed.owner, node::now_ms())?
                }
                Ok(None) => None,
                Err(LockError::NotARwLock) => return Err(LockError::NotALock),
                Err(e) => return Err(e),
            },
            Err(e) => return Err(e),
        };
        fence::check_holding(holding.as_ref(), key.name(), parsed.owner, parsed.token)?;
    }
    // The key handle is closed before the command runs: the command may write near it.
    drop(key);
    call::call_and_reply(ctx, command, in_script)?;
    Ok(Reply::Sent)
}

/// Keys of the inner command held on the stack.
const INLINE_KEYS: usize = 8;

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
