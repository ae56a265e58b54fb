//! rlock: native, server-side reentrant locks for Redis.
//!
//! A lock is an ordinary hash in Redisson's layout (`<owner>` → reentry count, `@token` →
//! fencing token, the key's TTL as the lease), so persistence, replication and Redisson
//! clients keep working. The module adds what scripts cannot: blocking in a FIFO queue on
//! the server with direct handoff, exact lease expiry, and fencing tokens.
//!
//! Layout, in layers whose imports only point down (top first; `tests/layering.rs` checks
//! it):
//! - `lib.rs` — this table: configs, init; `register.rs` hands the command table to Redis;
//!   `events.rs` — keyspace events, `FLUSHDB`, role changes, the end of loading.
//! - `commands/` — `mod.rs`: the one table of every command (flags, arity, keys, docs);
//!   one file per command: synopsis, args with a pure `parse`, and a thin `run`.
//! - `info.rs` — the `INFO rlock` section; `dispatch.rs` — how Redis calls a command.
//! - `waiting.rs` — a client's wait: queued, disconnected, a grant it never got revoked.
//! - `expiry.rs` — lease timers and checks for locks with waiters.
//! - `handoff.rs` — a holding ends: hand the lock to the first waiter, or free it.
//! - `blocked.rs` — blocking a client, its `WAIT` deadline, unblocking it, its reply.
//! - `waiters.rs` — the node's waiter registry; `store/` — the lock's hash, its TTL, and
//!   the replication of every write; `publish.rs` — the release message; `persist.rs` —
//!   the token counter in the RDB.
//! - `node.rs` — clock, database, context flags; `ffi.rs` — module API pointers and
//!   strings; `guard.rs` — panic containment; `config.rs` — the `rlock.*` configs.
//! - Pure, without Redis: `registry.rs` (FIFO queues, grants, checks), `lock.rs` (the state
//!   machine), `args.rs`, `error.rs` (every error text), `token.rs`, `channel.rs`,
//!   `counters.rs`, `reply.rs`, `spec.rs`.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
// Unit-test builds leave out the registration table (`module` below), and with it the
// only users of the callbacks it names.
#![cfg_attr(test, allow(dead_code))]

pub mod args;
mod blocked;
pub mod channel;
pub mod cluster;
pub mod commands;
pub mod config;
mod counters;
mod dispatch;
pub mod error;
mod events;
mod expiry;
mod ffi;
mod gate;
mod guard;
mod handoff;
mod info;
pub mod lock;
mod node;
mod persist;
mod publish;
mod register;
pub mod registry;
pub mod reply;
pub mod spec;
mod store;
pub mod token;
mod waiters;
mod waiting;

#[cfg(not(test))]
mod module {
    use redis_module::configuration::ConfigurationFlags;
    use redis_module::{redis_module, Context, RedisString, Status};

    use crate::config::{self, PublishMode};
    use crate::persist::TOKEN_AUX;
    use crate::{commands, events, guard, register};

    fn init(ctx: &Context, args: &[RedisString]) -> Status {
        if !args.is_empty() {
            ctx.log_warning(
                "rlock: the module takes no arguments; set rlock.* configs in redis.conf \
                 (after the loadmodule line), as --rlock.<name> flags, or with CONFIG SET",
            );
            return Status::Err;
        }
        guard::install_panic_hook();
        crate::info::register(ctx.ctx);
        crate::store::signal_writes_explicitly(ctx.ctx);
        let setup = register::register(ctx.ctx, &commands::COMMANDS)
            .and_then(|()| events::subscribe(ctx.ctx));
        match setup {
            Ok(()) => Status::Ok,
            Err(e) => {
                ctx.log_warning(&format!("rlock: cannot load: {e}"));
                Status::Err
            }
        }
    }

    redis_module! {
        name: "rlock",
        version: 1,
        allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
        data_types: [TOKEN_AUX],
        init: init,
        // Registered by `init` from `commands::COMMANDS`, with raw calls: no argument copies
        // per call.
        commands: [],
        configurations: [
            i64: [
                ["default-lease", &config::DEFAULT_LEASE, config::DEFAULT_LEASE_MS, 1, config::MAX_LEASE_MS, ConfigurationFlags::DEFAULT, None],
                ["token-gap", &config::TOKEN_GAP, config::DEFAULT_TOKEN_GAP, 0, config::MAX_TOKEN_GAP, ConfigurationFlags::DEFAULT, None],
                ["failover-delay", &config::FAILOVER_DELAY, config::DEFAULT_FAILOVER_DELAY_MS, 0, config::MAX_LEASE_MS, ConfigurationFlags::DEFAULT, None],
            ],
            string: [
                ["channel-prefix", &config::CHANNEL_PREFIX, config::DEFAULT_CHANNEL_PREFIX, ConfigurationFlags::DEFAULT, None],
            ],
            bool: [],
            enum: [
                ["publish", &config::PUBLISH, PublishMode::publish, ConfigurationFlags::DEFAULT, None],
            ],
            // redis-module 2.0.8 would apply module arguments without the configs' bounds:
            // configs come from CONFIG SET, redis.conf lines and --rlock.* flags only.
            module_args_as_configuration: false,
        ]
    }
}
