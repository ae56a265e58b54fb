//! rlock: native, server-side reentrant locks for Redis.
//!
//! A lock is an ordinary hash in Redisson's layout (`<owner>` → reentry count, `@token` →
//! fencing token, the key's TTL as the lease), so persistence, replication and Redisson
//! clients keep working. The module adds what scripts cannot: blocking in a FIFO queue on
//! the server with direct handoff, exact lease expiry, and fencing tokens.
//!
//! Layout: one folder per layer, whose imports only point down (top first;
//! `tests/layering.rs` checks it, docs/architecture.md draws it):
//! - `lib.rs` — `RedisModule_OnLoad`: the API check, the configs table, init.
//! - `commands/` — the one table of every command, one thin file per command, and
//!   `dispatch.rs` (how Redis calls a command); `hooks/` — what Redis calls outside
//!   commands: keyspace and server events, the `INFO rlock` section.
//! - `handoff/` — the one door of every fresh holding and a holding's end (`door.rs`),
//!   taking a lock (`take.rs`), lease expiry, the heartbeat, a blocked client's wait and a
//!   ticket's life.
//! - `waits/` — blocked clients and tickets: the node's waiter queues, blocking and
//!   unblocking, tickets and their receivers, how a wait ends.
//! - `store/` — the lock's hash and TTL, the replication of every write, the release
//!   message, the token counter in the RDB.
//! - `host/` — the module API: pointers and strings, the API check, panic containment,
//!   clock and context, the `rlock.*` configs, what Redis is told of each command, the
//!   gate's facts, the command `LOCK.FENCED` runs.
//! - Below them all, the crate `rlock-core` (`core/`): everything without Redis types (the
//!   lock state machine, FIFO queues, tokens, the gate's rules, the stall clock, argument
//!   parsing, error texts, replies as values), unit-tested alone.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
// Unit-test builds leave out the registration table (`module` below), and with it the
// only users of the callbacks it names.
#![cfg_attr(test, allow(dead_code))]

pub mod commands;
mod handoff;
mod hooks;
mod host;
mod store;
mod waits;

#[cfg(not(test))]
mod module {
    use std::ffi::c_int;
    use std::sync::atomic::AtomicI64;

    use redis_module::raw;

    use crate::commands;
    use crate::hooks::events;
    use crate::host::config;
    use crate::host::{apis, config_hooks, declare, guard};
    use crate::store::persist::TOKEN_AUX;

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
        crate::hooks::info_section::register(ctx);
        crate::host::valkey::detect(ctx);
        crate::store::signal_writes_explicitly(ctx);
        declare::register(ctx, &commands::COMMANDS)
            .and_then(|()| declare::register(ctx, &commands::RW_COMMANDS))
            .and_then(|()| declare::register(ctx, &commands::LATCH_COMMANDS))
            .and_then(|()| declare::register(ctx, &commands::SEM_COMMANDS))
            .and_then(|()| events::subscribe(ctx))
            .and_then(|()| crate::hooks::migration::subscribe(ctx))
            .map_err(|e| format!("cannot load: {e}"))
    }

    /// The numeric configs: name, variable, default, min, max.
    #[rustfmt::skip]
    const NUMBERS: [(&str, &AtomicI64, i64, i64, i64); 6] = [
        ("default-lease", &config::DEFAULT_LEASE, config::DEFAULT_LEASE_MS, 1, config::MAX_LEASE_MS),
        ("token-gap", &config::TOKEN_GAP, config::DEFAULT_TOKEN_GAP, 1, config::MAX_TOKEN_GAP),
        ("failover-delay", &config::FAILOVER_DELAY, config::DEFAULT_FAILOVER_DELAY_MS, 0, config::MAX_LEASE_MS),
        ("max-waiters", &config::MAX_WAITERS, 0, 0, config::MAX_WAITERS_LIMIT),
        ("max-waiters-per-key", &config::MAX_WAITERS_PER_KEY, 0, 0, config::MAX_WAITERS_LIMIT),
        ("script-turn", &config::SCRIPT_TURN, config::DEFAULT_SCRIPT_TURN_MS, 0, config::MAX_SCRIPT_TURN_MS),
    ];

    /// Every `rlock.*` config, then Redis applies the values it was given for them
    /// (`rlock.*` lines of redis.conf, `--rlock.*` flags).
    fn register_configs(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
        for (name, value, default, min, max) in NUMBERS {
            config_hooks::register_number(ctx, name, value, (default, min, max))?;
        }
        if !config::register_channel_prefix(ctx) {
            return Err("cannot register rlock.channel-prefix".to_owned());
        }
        config_hooks::register_publish(ctx)?;
        let load_configs = unsafe { raw::RedisModule_LoadConfigs }.ok_or("no LoadConfigs")?;
        if unsafe { load_configs(ctx) } == ERR {
            return Err("a rlock.* config has a bad value".to_owned());
        }
        Ok(())
    }
}
