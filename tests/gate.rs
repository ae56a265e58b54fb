//! The one door of every fresh holding, against real servers: whatever frees a lock (a
//! release, a force release, a lease, an eviction), the gate decides whether a waiter may
//! have it now. Each test here reproduces a way a deployment had two holders, or a grant
//! nobody held, before the gate was asked on every path.
//!
//! - `gate/failover_delay.rs` — a stale holding released on a promoted replica;
//! - `gate/memory.rs` — eviction and `maxmemory`;
//! - `gate/stall.rs` — a master that did not run for a while;
//! - `gate/roles.rs` — writable replicas, write pauses, release messages;
//! - `gate/rw.rs` — the same door for read-write locks: the failover delay, eviction;
//! - `gate/sem.rs` — and for semaphores: eviction, a stall.

#[path = "gate/failover_delay.rs"]
mod failover_delay;
#[path = "gate/memory.rs"]
mod memory;
#[path = "gate/roles.rs"]
mod roles;
#[path = "gate/rw.rs"]
mod rw;
#[path = "gate/sem.rs"]
mod sem;
#[path = "gate/stall.rs"]
mod stall;
mod support;
#[allow(dead_code)]
#[path = "waiting/wire.rs"]
mod wire;

use std::time::Duration;

use redis::Value;
use support::{info_field, pairs, raw, text_of, wait_until, Server};
use wire::Wire;

/// How long replication or a role change may take.
const SETTLE: Duration = Duration::from_secs(10);

/// `LOCK.INFO key`'s owner, or `None` when the lock is absent.
fn owner(con: &mut redis::Connection, key: &str) -> Option<String> {
    match raw(con, &["LOCK.INFO", key]) {
        Value::Nil => None,
        reply => support::field(&pairs(&reply), "owner").and_then(text_of),
    }
}

/// An `INFO rlock` number.
fn rlock_info(con: &mut redis::Connection, name: &str) -> i64 {
    info_field(con, "rlock", name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("INFO rlock has no {name}"))
}

/// A connection of its own that sends `LOCK.ACQUIRE key <args>` and is queued.
fn enqueue(server: &Server, key: &str, args: &[&str]) -> Wire {
    let mut command = vec!["LOCK.ACQUIRE", key];
    command.extend_from_slice(args);
    enqueue_command(server, &command)
}

/// A connection of its own that sends `command` (a blocking wait) and is queued.
fn enqueue_command(server: &Server, command: &[&str]) -> Wire {
    let mut con = server.conn();
    let before = rlock_info(&mut con, "rlock_waiters");
    let mut waiter = Wire::connect(server);
    let args = command;
    let key = command.get(1).copied().unwrap_or_default();
    waiter.send(command);
    let in_queue = wait_until(SETTLE, || {
        rlock_info(&mut con, "rlock_waiters") == before + 1
    });
    assert!(in_queue, "{args:?} never queued on {key}");
    waiter
}

/// Sets `owner`'s lease of `key` (a `family` lock: `LOCK`, `SEM`) to end `lease_ms` from now,
/// right before the node is stopped: it then ends while the node stands still, however long
/// the setup took (a lease that ended before the stop would hand the lock on, rightly, while
/// the node still ran).
fn lease_ends_in_the_stall(
    con: &mut redis::Connection,
    family: &str,
    (key, owner): (&str, &str),
    lease_ms: u64,
) {
    let renew = format!("{family}.RENEW");
    let lease = lease_ms.to_string();
    let renewed = support::int(con, &[&renew, key, owner, "LEASE", &lease]);
    assert_eq!(renewed, 1, "{owner} no longer held {key} before the stop");
}

/// Fails the test if the server aborted or logged an assertion.
fn assert_alive(server: &mut Server) {
    assert!(server.is_running(), "the server died:\n{}", server.log());
    let log = server.log();
    assert!(
        !log.contains("ASSERTION FAILED") && !log.contains("crashed by signal"),
        "the server logged a crash:\n{log}"
    );
}

/// A replica of `master` that syncs through `port` (a proxy), once its link is up.
fn replica_through(master: &Server, port: u16) -> Server {
    let replica = Server::builder()
        .args(["--replicaof", "127.0.0.1", &port.to_string()])
        .start();
    let up = wait_until(SETTLE, || {
        info_field(&mut replica.conn(), "replication", "master_link_status").as_deref()
            == Some("up")
    });
    assert!(up, "the replica did not sync:\n{}", replica.log());
    let mut m = master.conn();
    let attached = wait_until(SETTLE, || {
        info_field(&mut m, "replication", "connected_slaves").as_deref() == Some("1")
    });
    assert!(attached, "the master does not list its replica");
    replica
}
