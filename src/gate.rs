//! Whether the module may write now, outside a client's command: in a timer, or on an event.
//!
//! A client's write command is checked by Redis itself (read-only replica, paused writes,
//! `min-replicas-to-write`, cluster redirection). The module's own writes are not, so every
//! timer or event that would write asks here first:
//! - a node that is not a master never writes: its master's writes arrive by replication;
//! - while writes are paused (`CLIENT PAUSE WRITE`, `FAILOVER`, a cluster manual failover)
//!   nothing is written: Redis 7.0 aborts on a propagated write then, and keys that expire
//!   during a pause stay in the keyspace; the check comes back after the pause;
//! - with `min-replicas-to-write`, nothing is granted while fewer good replicas are there
//!   than it asks: a master cut off from its replicas grants no lock it could lose;
//! - in a cluster, a key is created only on the node that serves it (`cluster.rs`);
//! - after a promotion, no fresh holding of a lock the node does not have is granted for
//!   `rlock.failover-delay` ms (the failover delay).

use std::ffi::{c_char, CStr};
use std::sync::atomic::{AtomicI64, Ordering};

use redis_module::raw;

use crate::cluster::{self, Endpoint, Route};
use crate::{config, node};

/// How often a check comes back while writes are paused or the node is loading (ms).
pub const PAUSED_RETRY_MS: i64 = 10;
/// How often a check comes back while too few replicas are connected (ms).
pub const REPLICAS_RETRY_MS: i64 = 100;

/// The error a waiter gets when the node it waits on is no longer a master.
pub const DEMOTED: &str =
    "READONLY rlock: this node became a replica while the client waited; acquire on the master";

/// What a timer or an event may do now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Go,
    /// Not now: come back in this many ms.
    Later(i64),
    /// Never on this node: the waiters get this error.
    Refuse(&'static str),
}

/// Whether a timer or an event may write now.
pub fn writes(ctx: *mut raw::RedisModuleCtx) -> Verdict {
    match node_writes(ctx) {
        Verdict::Go if !replicas_suffice(ctx) => Verdict::Later(REPLICAS_RETRY_MS),
        verdict => verdict,
    }
}

/// Whether this node may write now, replicas aside (cheap: context flags and the pause).
pub fn node_writes(ctx: *mut raw::RedisModuleCtx) -> Verdict {
    let flags = node::flags(ctx);
    if flags & raw::REDISMODULE_CTX_FLAGS_LOADING != 0 {
        return Verdict::Later(PAUSED_RETRY_MS);
    }
    if flags & raw::REDISMODULE_CTX_FLAGS_SLAVE != 0
        || flags & raw::REDISMODULE_CTX_FLAGS_MASTER == 0
    {
        return Verdict::Refuse(DEMOTED);
    }
    if writes_paused() {
        return Verdict::Later(PAUSED_RETRY_MS);
    }
    Verdict::Go
}

/// Whether clients' writes are paused (`CLIENT PAUSE`, `FAILOVER`): Redis asks modules to
/// avoid replica traffic then, on every version that has the call.
fn writes_paused() -> bool {
    unsafe { raw::RedisModule_AvoidReplicaTraffic.is_some_and(|f| f() != 0) }
}

/// Whether `min-replicas-to-write`, if set, is met (a `CONFIG GET`, and an `INFO` when it
/// is set: ask only before a write).
pub fn replicas_suffice(ctx: *mut raw::RedisModuleCtx) -> bool {
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
pub fn route(ctx: *mut raw::RedisModuleCtx, name: &[u8], key_here: bool) -> Route {
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
