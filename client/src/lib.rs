//! Client for rlock: native, server-side reentrant locks for Redis (the `LOCK.*` commands of
//! the rlock module), held safely from Rust.
//!
//! What it does for you, the way Redisson's `RLock` does and then some:
//!
//! - **Waiting without polling**: a busy lock is waited for with `LOCK.ACQUIRE ... WAIT` on a
//!   connection of its own; the server hands the lock to waiters in FIFO order.
//! - **Cancellation safety**: dropping an `acquire` future (or a `tokio::time::timeout`
//!   around it) never leaks a hold, even when the grant and the cancellation cross.
//! - **A watchdog**: by default a lock has a 30 s lease that one background task per client
//!   renews every 10 s, in one pipelined round trip for all locks, until the guard is
//!   released. An explicit lease turns it off.
//! - **Loss detection**: when a renewal is refused or the lease runs out unrenewed,
//!   [`Guard::lost`] resolves and [`Guard::release`] says [`Error::Lost`].
//! - **Fencing tokens**: every holding has a token ([`Guard::token`]) that grows with every
//!   new holding, to make the protected resources refuse a stale holder.
//! - **Reentrancy**: through an [`Owner`] handle in async code, or per thread with the
//!   [`blocking`] API.
//!
//! # Example
//!
//! With a server running the module (`redis-server --loadmodule target/release/librlock.so`):
//!
//! ```no_run
//! use std::time::Duration;
//! use rlock_client::{Client, LockOptions};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), rlock_client::Error> {
//!     let client = Client::open("redis://127.0.0.1:6379/").await?;
//!
//!     // Waits as long as needed; the watchdog keeps the lock until release.
//!     let guard = client.lock("lock:order:42").acquire().await?;
//!     println!("holding {} with fencing token {}", guard.key(), guard.token());
//!     guard.release().await?;
//!
//!     // Waits at most 2 s; a fixed 10 s lease, no watchdog.
//!     let lock = client
//!         .lock("lock:report")
//!         .options(LockOptions::new().lease(Duration::from_secs(10)));
//!     match lock.try_acquire(Duration::from_secs(2)).await? {
//!         Some(guard) => drop(guard), // released in the background
//!         None => println!("busy"),
//!     }
//!
//!     // Reentrancy goes through an owner handle.
//!     let me = client.owner();
//!     let outer = me.lock("lock:tree").acquire().await?;
//!     let inner = me.lock("lock:tree").acquire().await?;
//!     assert_eq!(inner.release().await?, 1);
//!     assert_eq!(outer.release().await?, 0);
//!     Ok(())
//! }
//! ```
//!
//! `cargo run -p rlock-client --example basic -- redis://127.0.0.1:6379/` runs a longer tour;
//! the `fencing` example shows a resource refusing a paused former holder's stale token.
//! The `rlock` binary runs a command while holding a lock (`rlock run KEY -- CMD ARGS...`).
//!
//! # Limits
//!
//! - A hold whose reply is lost to a broken connection (the command reached the server, the
//!   answer did not) cannot be told apart from no grant: it ends with its lease. (A waiter's
//!   grant whose reply had not left the server when its connection closed is taken back by
//!   the server.)
//! - A cancelled wait is ended with `CLIENT KILL ID` on its connection (the server does not
//!   let `CLIENT UNBLOCK` end a wait). Without the ACL right to `CLIENT KILL`, the client can
//!   only close its end, and the server drops the waiter when it notices the close.
//! - A wait whose reply has not come 2 s after its deadline (a dead server or connection)
//!   is abandoned as a cancelled one is, and fails.
//! - [`LockOptions::min_replicas`] confirms a grant on replicas with Redis's `WAIT`;
//!   replication stays asynchronous otherwise (renewals and releases are not confirmed).
//! - A guard dropped after its client's runtime shut down cannot be released: it ends with
//!   its lease.
//! - One server (or one Redis Cluster node per key through a proxy); the client does not
//!   follow `MOVED`/`ASK` redirections yet.
//!
//! # Layout
//!
//! - `client.rs` — [`Client`] and [`Owner`]: the shared connection, owner ids, `LOCK.INFO`.
//! - `lock.rs`, `wait.rs` — [`Lock`], the cancellation-safe acquisition task, and waiting on
//!   a connection of its own.
//! - `replicas.rs` — confirming a grant on replicas ([`LockOptions::min_replicas`]).
//! - `guard.rs` — [`Guard`]: token, loss signal, release and drop.
//! - `watchdog.rs`, `registry.rs` — the renewal task and its bookkeeping.
//! - `options.rs`, `error.rs`, `info.rs`, `pool.rs` (wait connections), [`blocking`].

#![warn(missing_docs)]

pub mod blocking;
mod client;
mod error;
mod guard;
mod info;
mod lock;
mod options;
mod pool;
mod registry;
mod replicas;
mod router;
mod slots;
mod wait;
mod watchdog;

pub use client::{Client, Owner};
pub use error::{Error, LossReason, Result};
pub use guard::Guard;
pub use info::LockInfo;
pub use lock::Lock;
pub use options::{LockOptions, DEFAULT_LEASE};
pub use watchdog::WatchdogStats;
