//! The gate every fresh holding passes (SPEC.md §5): the facts about the node that the
//! rules of `verdict.rs` decide on, gathered from Redis, and the checks a client's lock
//! write passes before its key is opened.
//!
//! A client's write command is checked by Redis itself for part of this (a read-only
//! replica, `min-replicas-to-write`, cluster redirection, `deny-oom` for `LOCK.ACQUIRE`);
//! the module's own writes (a timer, an event, a handoff inside a release) are not, and a
//! writable replica, a write pause inside `MULTI` or a script, memory at a release, a stall
//! and the failover delay are never checked by Redis. So [`ask`] gathers every fact and
//! `verdict::decide` rules on them, for whatever creates the holding.

use std::ffi::{c_char, CStr};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use redis_module::raw;

use crate::host::{config, node};
use rlock_core::cluster::{self, Endpoint, Route};
use rlock_core::error::LockError;
use rlock_core::stall::STALLS;
use rlock_core::verdict::{decide, Facts};
pub use rlock_core::verdict::{Verdict, DEMOTED};

/// Who asks the gate for a fresh holding.
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    /// The lock's key.
    pub key: &'a [u8],
    /// The key is on this node (a holding that ended, a lease that ran out).
    pub key_here: bool,
    /// When the waiter to be served stops waiting (Unix ms), if it is a waiter with a limit.
    pub wait_until: Option<i64>,
    /// Asked inside a client's command (not a timer or an event): Redis has routed its key
    /// here and checked `min-replicas-to-write` before it ran.
    pub in_command: bool,
    /// When the script clients' turn on the lock ends, if one runs.
    pub scripts_until: Option<i64>,
}

/// Whether a fresh holding may be created now.
pub fn ask(ctx: *mut raw::RedisModuleCtx, ask: &Ask<'_>) -> Verdict {
    let now = node::now_ms();
    // A client's command runs on a node that has loaded, and on a replica it was refused
    // before (`client_writes`): no context flags to read on the acquire path.
    let (loading, master) = if ask.in_command {
        (false, !REPLICA.load(Ordering::Relaxed))
    } else {
        let flags = node::flags(ctx);
        let master = flags & raw::REDISMODULE_CTX_FLAGS_MASTER != 0
            && flags & raw::REDISMODULE_CTX_FLAGS_SLAVE == 0;
        (flags & raw::REDISMODULE_CTX_FLAGS_LOADING != 0, master)
    };
    let cheap = Facts {
        now,
        loading,
        master,
        paused: writes_paused(),
        wait_until: ask.wait_until,
        redirect: None,
        stalled_until: STALLS.observe(now),
        delay_until: fenced_until(now),
        scripts_until: ask.scripts_until,
        over_memory: over_memory(),
        replicas_ok: true,
    };
    // The facts that call commands are gathered only when the cheap ones let a grant go.
    if ask.in_command || decide(&cheap) != Verdict::Go {
        return decide(&cheap);
    }
    let facts = Facts {
        redirect: route(ctx, ask.key, ask.key_here).redirect(),
        replicas_ok: replicas_suffice(ctx),
        ..cheap
    };
    decide(&facts)
}

/// Whether a timer or an event may write now, for anything but a fresh holding (giving
/// back an undelivered grant): the node's role, loading and a pause.
pub fn writes(ctx: *mut raw::RedisModuleCtx) -> Verdict {
    let flags = node::flags(ctx);
    let now = node::now_ms();
    if flags & raw::REDISMODULE_CTX_FLAGS_LOADING != 0 || writes_paused() {
        return Verdict::Later(now.saturating_add(rlock_core::verdict::PAUSED_RETRY_MS));
    }
    if flags & raw::REDISMODULE_CTX_FLAGS_SLAVE != 0
        || flags & raw::REDISMODULE_CTX_FLAGS_MASTER == 0
    {
        return Verdict::Refuse(DEMOTED.to_owned());
    }
    Verdict::Go
}

/// Whether the node is a replica (read-only or writable): learned at load and on every
/// role change, so that a client's command on a master reads no context flags for it.
static REPLICA: AtomicBool = AtomicBool::new(false);

/// Learns the node's role from the context flags.
pub fn learn_role(ctx: *mut raw::RedisModuleCtx) {
    let replica = node::flags(ctx) & raw::REDISMODULE_CTX_FLAGS_SLAVE != 0;
    REPLICA.store(replica, Ordering::Relaxed);
}

/// The node became a master (`false`) or a replica (`true`).
pub fn role_changed(replica: bool) {
    REPLICA.store(replica, Ordering::Relaxed);
}

/// Whether a client's lock command that writes may run: asked before its key is opened
/// (Redis 7.0 aborts when a key opened for writing during a write pause has expired).
/// Replayed writes (the master's, an AOF's) always run.
pub fn client_writes(ctx: *mut raw::RedisModuleCtx) -> Result<(), LockError> {
    let replica = REPLICA.load(Ordering::Relaxed);
    if !replica && !writes_paused() {
        return Ok(());
    }
    if node::from_replication(ctx) {
        return Ok(());
    }
    Err(if replica {
        LockError::ReplicaWrite
    } else {
        LockError::WritesPaused
    })
}

/// Whether a holding may be renewed or reentered at `now` (both extend its lease): not
/// while the hold-back after a stall is under way.
pub fn renewals(now: i64) -> Result<(), LockError> {
    match STALLS.observe(now) {
        Some(until) => Err(LockError::Stalled(until.saturating_sub(now))),
        None => Ok(()),
    }
}

/// Whether a holding may be reentered at `now`: as a renewal, and not during the failover
/// delay of a promoted node. Its copy of the holding may be stale: the old master may have
/// ended it (a release, then a handoff) in writes that died with it, and the owner asking
/// again must not hold it beside the old master's grantee.
pub fn reentries(now: i64) -> Result<(), LockError> {
    renewals(now)?;
    match fenced_until(now) {
        Some(until) => Err(LockError::FailoverDelay(until.saturating_sub(now))),
        None => Ok(()),
    }
}

/// Whether clients' writes are paused (`CLIENT PAUSE`, `FAILOVER`): Redis asks modules to
/// avoid replica traffic then, on every version that has the call.
fn writes_paused() -> bool {
    unsafe { raw::RedisModule_AvoidReplicaTraffic.is_some_and(|f| f() != 0) }
}

/// Whether used memory is at or over `maxmemory` (never without a `maxmemory`, nor on a
/// server without the call).
fn over_memory() -> bool {
    unsafe { raw::RedisModule_GetUsedMemoryRatio.is_some_and(|f| f() >= 1.0) }
}

/// Whether `min-replicas-to-write`, if set, is met (a `CONFIG GET`, and an `INFO` when it
/// is set: ask only before a write).
fn replicas_suffice(ctx: *mut raw::RedisModuleCtx) -> bool {
    let wanted = call_text(ctx, c"CONFIG", &[c"GET", c"min-replicas-to-write"], 1)
        .and_then(|v| v.trim().parse::<i64>().ok())
        .unwrap_or(0);
    if wanted <= 0 {
        return true;
    }
    let good = call_text(ctx, c"INFO", &[c"replication"], 0).and_then(|info| {
        info.lines()
            .find_map(|l| l.strip_prefix("min_slaves_good_slaves:"))
            .and_then(|v| v.trim().parse::<i64>().ok())
    });
    // Without a lag limit Redis does not check the count either.
    good.is_none_or(|good| good >= wanted)
}

/// Where the key `name` is served in a cluster (`Here` outside a cluster).
/// In a cluster, where to send the waiters of `name`, a key that is not here (gone with
/// its slot, to another node): the redirect (`ASK`, `MOVED`, `TRYAGAIN`); `None` when this
/// node serves the key, so that it is really gone.
pub fn served_elsewhere(ctx: *mut raw::RedisModuleCtx, name: &[u8]) -> Option<String> {
    route(ctx, name, false).redirect()
}

fn route(ctx: *mut raw::RedisModuleCtx, name: &[u8], key_here: bool) -> Route {
    if !node::is_cluster(ctx) {
        return Route::Here;
    }
    let slot = cluster::key_slot(name);
    let preferred = [c"GET", c"cluster-preferred-endpoint-type"];
    let endpoint = Endpoint::from_config(call_text(ctx, c"CONFIG", &preferred, 1).as_deref());
    match call_text(ctx, c"CLUSTER", &[c"NODES"], 0) {
        Some(nodes) => cluster::route(&nodes, slot, key_here, endpoint),
        None => Route::Unknown { slot },
    }
}

/// When this node was last promoted to master (Unix ms); 0: never.
static PROMOTED_AT: AtomicI64 = AtomicI64::new(0);

/// The node was promoted to master at `now`: the failover delay starts.
pub fn promoted(now: i64) {
    PROMOTED_AT.store(now, Ordering::Relaxed);
}

/// If the failover delay is on at `now`, when it ends. The delay is read from the config
/// each time, so that `CONFIG SET rlock.failover-delay` applies to a delay under way.
pub fn fenced_until(now: i64) -> Option<i64> {
    let promoted_at = PROMOTED_AT.load(Ordering::Relaxed);
    let until = promoted_at.saturating_add(config::failover_delay());
    (promoted_at > 0 && until > now).then_some(until)
}

/// Calls a command and returns a string reply, or element `element` of an array reply, as
/// text. Only read-only commands that answer at once go through here.
fn call_text(
    ctx: *mut raw::RedisModuleCtx,
    command: &CStr,
    args: &[&CStr],
    element: usize,
) -> Option<String> {
    let (call, free) = unsafe { (raw::RedisModule_Call?, raw::RedisModule_FreeCallReply?) };
    let reply = unsafe {
        match args {
            [a] => call(ctx, command.as_ptr(), c"c".as_ptr(), a.as_ptr()),
            [a, b] => call(
                ctx,
                command.as_ptr(),
                c"cc".as_ptr(),
                a.as_ptr(),
                b.as_ptr(),
            ),
            _ => return None,
        }
    };
    if reply.is_null() {
        return None;
    }
    let text = reply_text(reply, element);
    unsafe { free(reply) };
    text
}

/// The text of a string reply, or of element `element` of an array reply.
fn reply_text(reply: *mut raw::RedisModuleCallReply, element: usize) -> Option<String> {
    let (string_ptr, array_element, reply_type) = unsafe {
        (
            raw::RedisModule_CallReplyStringPtr?,
            raw::RedisModule_CallReplyArrayElement?,
            raw::RedisModule_CallReplyType?,
        )
    };
    let value = if unsafe { reply_type(reply) } as isize == raw::REDISMODULE_REPLY_ARRAY {
        unsafe { array_element(reply, element) }
    } else {
        reply
    };
    if value.is_null() {
        return None;
    }
    let mut len = 0usize;
    let ptr: *const c_char = unsafe { string_ptr(value, &mut len) };
    if ptr.is_null() {
        return None;
    }
    // The reply owns these bytes until it is freed, after this copy.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    Some(String::from_utf8_lossy(bytes).into_owned())
}
