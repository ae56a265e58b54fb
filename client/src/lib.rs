//! Client for rlock: native, server-side reentrant locks for Redis (the `LOCK.*` commands of
//! the rlock module), held safely from Rust.
//!
//! What it does for you, the way Redisson's `RLock` does and then some:
//!
//! - **Waiting without polling**: a busy lock is waited for with a ticket (`LOCK.WAIT`) whose
//!   grant the server pushes on the client's one wait connection per server, so any number of
//!   waits take 2 connections per server; the server hands the lock to waiters in FIFO order.
//!   (In a Redis Cluster the grants are pulled with `LOCK.GRANTS` on a second connection per
//!   node; on a module without `LOCK.WAIT`, a wait is a blocking `LOCK.ACQUIRE ... WAIT` on
//!   a connection of its own.)
//! - **Cancellation safety**: dropping an `acquire` future (or a `tokio::time::timeout`
//!   around it) never leaks a hold, even when the grant and the cancellation cross, and
//!   never frees another's: the acquisitions of one [`Owner`] on one key take turns, so a
//!   cancelled wait that looks for its lost grant cannot take a concurrent acquisition's
//!   fresh hold for its own.
//! - **A watchdog**: by default a lock has a 30 s lease that one background task per client
//!   renews every 10 s, in one pipelined round trip for all locks (per node, in a Redis
//!   Cluster), until the guard is released. An explicit lease turns it off.
//! - **A safe deadline**: a holding counts only until the send time of the request that last
//!   set its lease, plus the lease, minus a margin ([`ClientOptions::margin`]).
//!   [`Guard::is_lost`] reads the clock, and [`Guard::lost`], a [`LostSignal`] (to move into
//!   spawned work) and [`Lock::with_lock`] (which cancels its work) have a timer of their
//!   own: a loss is seen by the deadline at the latest, whatever the watchdog is doing, even
//!   after the process or its runtime was paused. A renewal refused (0, `READONLY`) is a loss
//!   at once. [`Guard::release`] then says [`Error::Lost`].
//! - **Announced losses**: the server announces every end of a holding its holder did not
//!   ask for (a force release, a `DEL`, a flush, an eviction, the lease ending on the
//!   server...), and the client hears it on one listening connection per node: the loss is
//!   seen at once, as [`LossReason::Ended`] with its [`EndCause`], without waiting for a
//!   renewal (which stays the fallback for what is not announced).
//! - **No late release frees a newer holding**: releases and renewals carry the holding's
//!   token (`TOKEN t`), and none is sent once the server said the lock is not held.
//! - **Bounded waits**: every reply has a response timeout, waits a deadline and a liveness
//!   probe, all in [`ClientOptions`]; [`Client::close`] releases everything.
//! - **Fencing tokens**: every holding has a token ([`Guard::token`]) that grows with every
//!   new holding, to make the protected resources refuse a stale holder.
//! - **Reentrancy by scope**: an acquisition inside a holding's work ([`Lock::with_lock`],
//!   [`Guard::scope`]) reenters it, while every other contends as with tokio's `Mutex`,
//!   futures joined in one task included (see [`Client::lock`]); an [`Owner`] shares a
//!   holding between tasks; the [`blocking`] API is reentrant per thread.
//! - **Read-write locks**: [`Client::rw_lock`] gives an [`RwLock`] (the module's
//!   `RWLOCK.*` commands) whose [`read`](RwLock::read) and [`write`](RwLock::write) sides
//!   are [`Lock`]s with all of the above: shared read holds, an exclusive write hold, FIFO
//!   service (a queued writer is not overtaken by later readers), downgrade, and a refused
//!   upgrade ([`Error::Upgrade`]).
//! - **Semaphores**: [`Client::semaphore`] gives a [`Semaphore`] (`SEM.*`) of leased
//!   permits, each acquisition of `n` permits a [`Lock`] with all of the above.
//! - **Countdown latches**: [`Client::latch`] gives a [`Latch`] (`LATCH.*`, Redisson's
//!   `RCountDownLatch`) that tasks wait on until others count it down to zero.
//! - **Redis Cluster**: each command goes to the node that serves its key, following `MOVED`
//!   and `ASK` while slots move (see [below](#redis-cluster)).
//! - **Redis Sentinel**: opened on the sentinels of a master, the client follows the master
//!   they name after a failover (see [below](#redis-sentinel)).
//! - **Several servers**: [`MultiLock`] holds several locks all or none (taken in a
//!   canonical order, so overlapping ones never deadlock); [`RedLock`] holds one name on a
//!   majority of N independent servers, waiting on the servers, not polling.
//!
//! # Example
//!
//! With a server running the module (see [The server](#the-server)):
//!
//! ```no_run
//! use std::time::Duration;
//! use rlock_client::{Client, ClientOptions, LockOptions};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), rlock_client::Error> {
//!     let options = ClientOptions::new().response_timeout(Duration::from_secs(1));
//!     let client = Client::open_with("redis://127.0.0.1:6379/", options).await?;
//!
//!     // Runs the work while holding the lock, and cancels it if the lock is lost.
//!     let token = client
//!         .lock("lock:job")
//!         .with_lock(|held| async move { held.token() })
//!         .await?;
//!     println!("ran with fencing token {token}");
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
//!     // Reentrant inside the holding's scope.
//!     let outer = client.lock("lock:tree").acquire().await?;
//!     let inner = outer.scope(client.lock("lock:tree").acquire()).await?;
//!     assert_eq!(inner.release().await?, 1);
//!     assert_eq!(outer.release().await?, 0);
//!
//!     // Before `main` returns: a guard dropped after the runtime ends is not released.
//!     client.close().await
//! }
//! ```
//!
//! `cargo run -p rlock-client --example basic -- redis://127.0.0.1:6379/` runs a longer tour;
//! the `fencing` example shows a resource refusing a paused former holder's stale token.
//! The `rlock` tool (package `rlock-cli`) runs a command while holding a lock
//! (`rlock run KEY -- CMD ARGS...`).
//!
//! # The server
//!
//! The server needs the rlock Redis module, `librlock.so` (Linux; Redis 7.0 or newer, or
//! Valkey), loaded on every node. It is not in this crate: it comes from rlock's source (the
//! `rlock` package, beside this crate), built with Rust 1.89 or newer. `make dist` there
//! makes a tarball to copy to the servers (`librlock.so`, `redis.conf.example`, the docs,
//! checksums), and `make install` builds and installs it as
//! `/usr/local/lib/redis/modules/librlock.so` (`PREFIX=...` to move it). Then:
//!
//! ```text
//! redis-server --loadmodule /usr/local/lib/redis/modules/librlock.so
//! ```
//!
//! or that `loadmodule` line in `redis.conf`.
//!
//! # Redis Cluster
//!
//! Open the client on any node; every node must load the module. The same code then works
//! on a cluster as on one server (and so do the [`blocking`] API and the `rlock` tool):
//!
//! ```no_run
//! # async fn demo() -> Result<(), rlock_client::Error> {
//! use rlock_client::Client;
//!
//! let client = Client::open("redis://10.0.0.1:7000/").await?;
//! // On the node that serves the slot of "lock:order:42". A hash tag puts locks on one
//! // node: "{order:42}:pay" and "{order:42}:ship" share the slot of "order:42".
//! let guard = client.lock("lock:order:42").acquire().await?;
//! guard.release().await?;
//! # Ok(())
//! # }
//! ```
//!
//! When the server says `cluster_enabled:1` (`INFO cluster`), the client loads the slot map
//! (`CLUSTER SLOTS`) and sends each command to the node that serves its key's slot, on that
//! node's shared connection. A `MOVED` reply updates the map and the command goes to the
//! new node; an `ASK` reply (a slot being migrated) sends it once to the named node, after
//! `ASKING` on the same connection. A redirected command was not run, so sending it again
//! is safe; after [`Error::MAX_REDIRECTS`] redirections in a row it fails with
//! [`Error::TooManyRedirects`]. For each kind of command:
//!
//! - **Waits** are tickets queued on the node of the key (`LOCK.WAIT ... TO`), their grants
//!   pulled by one `LOCK.GRANTS` connection per node; a redirected wait is made again on the
//!   target. A cancelled wait is ended with `LOCK.CANCEL` on its own node; one refused
//!   because its slot moved queues again where the slot is. A wait answered `READONLY` (its node became a
//!   replica) or `TRYAGAIN` reloads the slot map and queues again within its wait limit.
//! - **The watchdog** sends one pipeline per node per round, to all nodes at once; renewals
//!   a node redirects are sent again one by one, following the redirection.
//! - **Releases**, `info` and `force_release` follow redirections as any command does.
//! - **[`LockOptions::min_replicas`]**: `WAIT` runs on the connection that carried the
//!   grant, so on the node that granted, and counts that node's replicas.
//!
//! After a connection error, the client reloads the slot map (`CLUSTER SLOTS`) from the
//! first node it knows that answers in time, so a replica promoted after its master died is
//! found without opening the client again: a command that could not be sent goes there at
//! once, and the watchdog's next round renews there.
//!
//! # Redis Sentinel
//!
//! Open the client with a Sentinel URL naming the sentinels and the master:
//!
//! ```no_run
//! # async fn demo() -> Result<(), rlock_client::Error> {
//! use rlock_client::Client;
//!
//! // redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/<master-name>[/db]
//! let url = "redis+sentinel://10.0.0.1:26379,10.0.0.2:26379,10.0.0.3:26379/mymaster";
//! let client = Client::open(url).await?;
//! # Ok(())
//! # }
//! ```
//!
//! Sentinels listen on port 26379 unless a port is given; the credentials and db are the
//! master's (the sentinels are asked without credentials). The client asks the sentinels in
//! turn (`SENTINEL get-master-addr-by-name`) and checks with `ROLE` that the server they
//! name is a master. When a command to the master fails with a connection error, or is
//! answered `READONLY` (the master was demoted), the client asks the sentinels again (each
//! in turn, 0.5 s to connect and 0.5 s to answer each, at most once per 100 ms however many
//! commands fail) and moves to the new master: waits, acquisitions, releases and the
//! watchdog's renewals go there. A command that was not run (its connection was refused,
//! `READONLY`, or a wait ended by `UNBLOCKED` when its master was demoted) is sent to the
//! new master at once; one whose connection broke may have run, so it fails, and the next
//! one goes to the new master. An acquisition whose master died queues again on the one the
//! sentinels promote, within its wait limit and for at most 30 s of connection errors in a
//! row. Until the sentinels have promoted a replica, other commands fail with I/O errors.
//!
//! # Limits
//!
//! - A grant whose reply is lost to a timeout or a broken connection is looked for with
//!   `LOCK.INFO` and adopted; if that check fails too, the hold ends with its lease. (A
//!   waiter's grant whose reply had not left the server when its connection closed is taken
//!   back by the server.)
//! - A cancelled ticket wait is ended with `LOCK.CANCEL` (a grant that crossed it is
//!   released). A cancelled blocking wait (a cluster, an older module) is ended with
//!   `CLIENT KILL ID` on its connection (the server does not let `CLIENT UNBLOCK` end a
//!   wait); without the ACL right to `CLIENT KILL`, the client can only close its end, and
//!   the server drops the waiter when it notices the close.
//! - A wait whose outcome has not come [`ClientOptions::wait_grace`] after its deadline is
//!   cancelled and fails with [`Error::Unresponsive`]; so do all the waits of a wait
//!   connection that stops answering the `PING` sent on it every
//!   [`ClientOptions::keepalive`] (one per connection, not per wait). A wait connection
//!   that closes fails its waits at once, and they queue again on a new one (the server
//!   drops a closed connection's tickets, so they queue at the end).
//! - Ticket waits need RESP3 and `SUBSCRIBE` rights on `__rlock__:*`; without them, waits
//!   are blocking ones.
//! - The deadline is measured with [`std::time::Instant`], which stops while the machine is
//!   suspended; the server's lease does not.
//! - [`LockOptions::min_replicas`] confirms a grant on replicas with Redis's `WAIT`;
//!   replication stays asynchronous otherwise (renewals and releases are not confirmed).
//! - A guard dropped after its client's runtime shut down cannot be released: it ends with
//!   its lease. Call [`Client::close`] before the runtime ends.
//! - In a Redis Cluster, the slot map is loaded when the client opens, corrected by each
//!   `MOVED`, and loaded again after a connection error; until the cluster has promoted a
//!   replica, the dead master's slots fail with I/O errors. Nodes are reached at the
//!   addresses the cluster announces, with the first node's credentials and TLS settings.
//! - With Sentinel, sentinels are reached without credentials or TLS, and the URL form
//!   carries no TLS settings.
//! - A waiter is queued on the node that serves its key. When the key's slot is migrated,
//!   the module answers it with `ASK`, `MOVED` or `TRYAGAIN`, and it queues again on the new
//!   owner (behind the waiters already there).
//!
//! # Features
//!
//! - `tls`: `rediss://` URLs, through rustls (ring), with the platform's root certificates.
//! - `serde`: `Serialize` and `Deserialize` for the state the server reports:
//!   [`LockInfo`], [`RwLockInfo`], [`RwHolder`], [`RwMode`], [`SemaphoreInfo`] and
//!   [`SemHolder`] (a `ttl` is a [`Duration`](std::time::Duration): `{"secs":..,"nanos":..}`
//!   in JSON).
//!
//! # Layout
//!
//! `src/` has one folder per layer, top to bottom: `several/` ([`MultiLock`], [`RedLock`]);
//! the public API beside `lib.rs` (`client.rs`, `lock.rs`, [`blocking`]); `acquire/`
//! (acquiring, waiting, recovering; [`Guard`]); `core/` (what a client's handles share, and
//! closing); `hold/` (holdings, the watchdog, announced losses); `net/` (connections,
//! routing, wait and listening connections); `pure/` (errors, options, commands, majorities; no connection). A file uses
//! only files of the layers below its own, and each folder's `mod.rs` says what it may use
//! (`tests/layering.rs` checks it; `docs/architecture.md` has the map).

#![warn(missing_docs)]

mod acquire;
pub mod blocking;
mod blocking_guard;
mod blocking_latch;
mod client;
mod core;
mod hold;
mod latch;
mod lock;
mod net;
mod pure;
mod rw_lock;
mod semaphore;
mod several;

/// The [`redis`](https://docs.rs/redis/1.8) crate this client is built on (version 1.8),
/// so that an application on another version of `redis` builds the commands it hands to
/// [`Guard::fenced`] and [`LostSignal::fenced`] with this one:
/// `rlock_client::redis::cmd("HSET")`. The types of [`Client::from_redis`] and
/// [`Error::Redis`] are this crate's too.
pub use redis;

pub use acquire::guard::Guard;
pub use client::{Client, Owner};
pub use hold::watchdog::WatchdogStats;
pub use latch::Latch;
pub use lock::Lock;
pub use pure::config::ClientOptions;
pub use pure::error::{EndCause, Error, LossReason, Result};
pub use pure::holding::LostSignal;
pub use pure::info::LockInfo;
pub use pure::options::{LockOptions, DEFAULT_LEASE};
pub use pure::rw_info::{RwHolder, RwLockInfo, RwMode};
pub use pure::sem_info::{SemHolder, SemaphoreInfo};
pub use rw_lock::RwLock;
pub use semaphore::Semaphore;
pub use several::multi::{MultiGuard, MultiLock};
pub use several::redlock::RedLock;
pub use several::redlock_guard::RedLockGuard;
pub use several::signal::GroupSignal;
