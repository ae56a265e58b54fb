//! rlock: native, server-side reentrant locks for Redis.
//!
//! A lock is an ordinary hash in Redisson's layout (`<owner>` → reentry count, `@token` →
//! fencing token, the key's TTL as the lease), so persistence, replication and Redisson
//! clients keep working. The module adds what scripts cannot: blocking in a FIFO queue on
//! the server with direct handoff, exact lease expiry, and fencing tokens.
//!
//! Layout:
//! - `commands/` — one file per command: synopsis, args, `run`; `mod.rs` registers them
//!   with Redis and dispatches each call (no argument copies).
//! - `lock.rs` — the lock state machine, no Redis types; `args.rs` — argument parsing.
//! - `store.rs` — the hash, its TTL, and replication of every write as its effect.
//! - `waiters.rs` — FIFO queues of blocked clients and handoff; `blocked.rs` — a blocked
//!   client's life (wait deadline, reply, disconnect); `expiry.rs` — lease timers.
//! - `events.rs` — keyspace and server events; `publish.rs` / `channel.rs` — the release
//!   message; `token.rs` — fencing tokens; `config.rs`, `info.rs`, `docs.rs`,
//!   `error.rs`, `guard.rs` (panic containment), `persist.rs` (the token counter in RDB).
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
pub mod commands;
pub mod config;
mod docs;
pub mod error;
mod events;
mod expiry;
mod guard;
mod info;
pub mod lock;
pub(crate) mod persist;
mod publish;
mod store;
pub mod token;
mod waiters;

use token::TokenClock;

/// The fencing-token counter of this node.
pub static TOKENS: TokenClock = TokenClock::new();

#[cfg(not(test))]
mod module {
    use redis_module::configuration::ConfigurationFlags;
    use redis_module::{redis_module, Context, RedisString, Status};

    use crate::config::{self, PublishMode};
    use crate::persist::TOKEN_AUX;
    use crate::{commands, docs, events, guard};

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
        let setup = commands::register(ctx.ctx)
            .and_then(|()| events::subscribe(ctx.ctx))
            .and_then(|()| docs::register(ctx));
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
        // Registered by `init` (commands::register, events::subscribe), which calls Redis
        // directly: no argument copies per call.
        commands: [],
        configurations: [
            i64: [
                ["default-lease", &config::DEFAULT_LEASE, config::DEFAULT_LEASE_MS, 1, config::MAX_LEASE_MS, ConfigurationFlags::DEFAULT, None],
                ["token-gap", &config::TOKEN_GAP, config::DEFAULT_TOKEN_GAP, 0, config::MAX_TOKEN_GAP, ConfigurationFlags::DEFAULT, None],
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
