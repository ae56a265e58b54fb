//! rlock: native, server-side reentrant locks for Redis.
//!
//! A lock is an ordinary hash in Redisson's layout (`<owner>` → reentry count, `@token` →
//! fencing token, the key's TTL as the lease), so persistence, replication and Redisson
//! clients keep working. The module adds what scripts cannot: blocking in a FIFO queue on
//! the server with direct handoff, exact lease expiry, and fencing tokens.
//!
//! Layout, in layers whose imports only point down (top first; `tests/layering.rs` checks
//! it):
//! - `lib.rs` — `RedisModule_OnLoad`: the API check, the configs table (`configs.rs`
//!   registers each config with callbacks of its own, contained), init;
//!   `register.rs` hands the command table to Redis; `events.rs` — keyspace events
//!   (`RESTORE`, `MOVE`), `FLUSHDB`, `SWAPDB`, role changes, the end of loading.
//! - `commands/` — `mod.rs`: the one table of every command (flags, arity, keys, docs);
//!   one file per command: synopsis, args with a pure `parse`, and a thin `run`.
//! - `info.rs` — the `INFO rlock` section; `dispatch.rs` — how Redis calls a command.
//! - `waiting.rs` — a client's wait: queued, disconnected, a grant it never got revoked.
//! - `expiry.rs` — lease timers and checks for locks with waiters; `heartbeat.rs` — the
//!   timer that notices stalls and re-arms waiters when the failover delay moves.
//! - `handoff.rs` — the one door of every fresh holding (it asks the gate), and a holding
//!   ends: hand the lock to the first waiter, or free it.
//! - `blocked.rs` — blocking a client, its `WAIT` deadline, unblocking it, its reply.
//! - `waiters.rs` — the node's waiter registry; `store/` — the lock's hash, its TTL, and
//!   the replication of every write; `publish.rs` — the release message; `persist.rs` —
//!   the token counter in the RDB.
//! - `node.rs` — clock, database, context flags, timer bounds; `ffi.rs` — module API
//!   pointers and strings; `apis.rs` — the module API checked at load; `guard.rs` — panic
//!   containment; `config.rs` — the `rlock.*` configs; `gate.rs` — the facts the gate
//!   decides on; `inner.rs` — the command `LOCK.FENCED` runs (its keys, the call);
//!   `fence.rs` — `LOCK.FENCED`'s rules.
//! - Pure, without Redis: `registry.rs` (FIFO queues, grants, checks), `receivers.rs`
//!   (tickets, mailboxes, who may cancel), `lock.rs` (the state machine), `verdict.rs` (the
//!   gate's rules), `stall.rs` (the stall clock), `args.rs`, `error.rs` (every error text;
//!   `fence_error.rs` and `echo.rs` beside it), `token.rs`, `channel.rs`, `counters.rs`,
//!   `reply.rs`, `spec.rs`.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
// Unit-test builds leave out the registration table (`module` below), and with it the
// only users of the callbacks it names.
#![cfg_attr(test, allow(dead_code))]

mod apis;
pub mod args;
mod blocked;
pub mod channel;
pub mod cluster;
pub mod commands;
pub mod config;
mod configs;
mod counters;
mod dispatch;
mod echo;
mod ending;
pub mod error;
mod events;
mod expiry;
pub mod fence;
mod fence_error;
mod ffi;
mod gate;
mod guard;
mod handoff;
mod heartbeat;
mod idhash;
mod info;
mod inner;
pub mod lock;
mod node;
mod persist;
mod publish;
mod receivers;
mod receiving;
mod register;
pub mod registry;
pub mod reply;
pub mod spec;
mod stall;
mod store;
mod tickets;
pub mod token;
mod verdict;
mod waiters;
mod waiting;

#[cfg(not(test))]
mod module {
    use std::ffi::c_int;
    use std::sync::atomic::AtomicI64;

    use redis_module::raw;

    use crate::config;
    use crate::persist::TOKEN_AUX;
    use crate::{apis, commands, configs, events, guard, register};

    #[global_allocator]
    static ALLOCATOR: redis_module::alloc::RedisAlloc = redis_module::alloc::RedisAlloc;

    const OK: c_int = raw::REDISMODULE_OK as c_int;
    const ERR: c_int = raw::REDISMODULE_ERR as c_int;

    /// What Redis calls on `loadmodule`.
    ///
    /// # Safety
    /// Redis passes its context and `argc` arguments.
    #[no_mangle]
    pub unsafe extern "C" fn RedisModule_OnLoad(
        ctx: *mut raw::RedisModuleCtx,
        _argv: *mut *mut raw::RedisModuleString,
        argc: c_int,
    ) -> c_int {
        // Nothing may allocate before this: the allocator is Redis's, reached through the
        // API that Init fills in.
        let name = c"rlock".as_ptr();
        let api = raw::REDISMODULE_APIVER_1 as c_int;
        if unsafe { raw::Export_RedisModule_Init(ctx, name, 1, api) } == ERR {
            return ERR;
        }
        guard::entry("loading", ERR, || match load(ctx, argc) {
            Ok(()) => OK,
            Err(why) => {
                raw::redis_log(ctx, &format!("rlock: {why}"));
                ERR
            }
        })
    }

    /// Checks the server, then registers the data type, the configs, the `INFO` section,
    /// the commands and the events.
    fn load(ctx: *mut raw::RedisModuleCtx, argc: c_int) -> Result<(), String> {
        if let Some(name) = apis::missing() {
            return Err(format!(
                "cannot load: this server lacks the module API function {name} (rlock needs Redis 7.0 or later, or Valkey)"
            ));
        }
        if argc > 0 {
            return Err(
                "the module takes no arguments; set rlock.* configs in redis.conf \
                 (after the loadmodule line), as --rlock.<name> flags, or with CONFIG SET"
                    .to_owned(),
            );
        }
        guard::install_panic_hook();
        TOKEN_AUX
            .create_data_type(ctx)
            .map_err(|e| format!("cannot load: {e}"))?;
        register_configs(ctx).map_err(|e| format!("cannot load: {e}"))?;
        crate::info::register(ctx);
        crate::store::signal_writes_explicitly(ctx);
        register::register(ctx, &commands::COMMANDS)
            .and_then(|()| events::subscribe(ctx))
            .map_err(|e| format!("cannot load: {e}"))
    }

    /// The numeric configs: name, variable, default, min, max.
    #[rustfmt::skip]
    const NUMBERS: [(&str, &AtomicI64, i64, i64, i64); 5] = [
        ("default-lease", &config::DEFAULT_LEASE, config::DEFAULT_LEASE_MS, 1, config::MAX_LEASE_MS),
        ("token-gap", &config::TOKEN_GAP, config::DEFAULT_TOKEN_GAP, 1, config::MAX_TOKEN_GAP),
        ("failover-delay", &config::FAILOVER_DELAY, config::DEFAULT_FAILOVER_DELAY_MS, 0, config::MAX_LEASE_MS),
        ("max-waiters", &config::MAX_WAITERS, 0, 0, config::MAX_WAITERS_LIMIT),
        ("max-waiters-per-key", &config::MAX_WAITERS_PER_KEY, 0, 0, config::MAX_WAITERS_LIMIT),
    ];

    /// Every `rlock.*` config, then Redis applies the values it was given for them
    /// (`rlock.*` lines of redis.conf, `--rlock.*` flags).
    fn register_configs(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
        for (name, value, default, min, max) in NUMBERS {
            configs::register_number(ctx, name, value, (default, min, max))?;
        }
        if !config::register_channel_prefix(ctx) {
            return Err("cannot register rlock.channel-prefix".to_owned());
        }
        configs::register_publish(ctx)?;
        let load_configs = unsafe { raw::RedisModule_LoadConfigs }.ok_or("no LoadConfigs")?;
        if unsafe { load_configs(ctx) } == ERR {
            return Err("a rlock.* config has a bad value".to_owned());
        }
        Ok(())
    }
}
