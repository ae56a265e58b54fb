//! The deployment changing shape under locks with waiters: write pauses (`CLIENT PAUSE`,
//! `FAILOVER`), demotion, promotion with the failover delay, `min-replicas-to-write`, and
//! (in `topology/cluster.rs`) slot migration and release messages in a cluster.
//!
//! Each test checks that the server did not abort (its log has no assertion), that every
//! waiter gets exactly one reply, and that replicas end up with their master's data.

#[path = "topology/cluster.rs"]
mod cluster;
mod support;
#[allow(dead_code)]
#[path = "waiting/wire.rs"]
mod wire;

use std::time::{Duration, Instant};

use redis::Value;
use support::{
    channel, info_field, int, keyspace, pairs, raw, text_of, wait_until, Server, Subscriber,
};
use wire::{Reply, Wire};

/// How long replication or a role change may take.
const SETTLE: Duration = Duration::from_secs(10);

/// `LOCK.INFO key`'s owner, or `None` when the lock is absent.
fn owner(con: &mut redis::Connection, key: &str) -> Option<String> {
    match raw(con, &["LOCK.INFO", key]) {
        Value::Nil => None,
        reply => support::field(&pairs(&reply), "owner").and_then(text_of),
    }
}

/// Clients queued on the server (`INFO rlock`), on locks present or not.
fn waiting(con: &mut redis::Connection) -> i64 {
    info_field(con, "rlock", "rlock_waiters")
        .and_then(|v| v.parse().ok())
        .expect("INFO rlock has rlock_waiters")
}

/// A connection of its own that sends `LOCK.ACQUIRE key <args>` and is queued.
fn enqueue(server: &Server, key: &str, args: &[&str]) -> Wire {
    let mut command = vec!["LOCK.ACQUIRE", key];
    command.extend_from_slice(args);
    enqueue_command(server, &command)
}

/// Sends `command` (a blocking wait) on a connection of its own; returns once it is queued.
fn enqueue_command(server: &Server, command: &[&str]) -> Wire {
    let mut con = server.conn();
    let before = waiting(&mut con);
    let mut waiter = Wire::connect(server);
    waiter.send(command);
    let in_queue = wait_until(SETTLE, || waiting(&mut con) == before + 1);
    assert!(in_queue, "{command:?} never queued");
    waiter
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

/// Waits until `replica` has processed everything `master` wrote, then compares them.
fn assert_same_data(master: &Server, replica: &Server) {
    let mut m = master.conn();
    assert_eq!(int(&mut m, &["WAIT", "1", "5000"]), 1, "the replica lags");
    let same = wait_until(SETTLE, || keyspace(&mut m) == keyspace(&mut replica.conn()));
    assert!(
        same,
        "replica differs: master {:?}, replica {:?}",
        keyspace(&mut m),
        keyspace(&mut replica.conn())
    );
}

fn replication_field(server: &Server, name: &str) -> Option<String> {
    info_field(&mut server.conn(), "replication", name)
}

// ---------------------------------------------------------------- write pauses

#[test]
fn a_lease_ending_during_a_write_pause_is_handed_on_after_the_pause() {
    let mut master = Server::start_with(&["--appendonly", "yes"]);
    let replica = master.replica();
    let mut con = master.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "200"]);
    let mut waiter = enqueue(&master, "k", &["b", "WAIT", "0"]);
    assert_eq!(
        raw(&mut con, &["CLIENT", "PAUSE", "1500", "WRITE"]),
        Value::Okay
    );
    // The lease ends inside the pause: nothing may be written until it is over.
    assert_eq!(waiter.reply_within(Duration::from_millis(800)), None);
    match waiter.reply() {
        Reply::Int(token) => assert!(token > 0),
        other => panic!("the waiter got {other:?}"),
    }
    assert_alive(&mut master);
    assert_eq!(owner(&mut con, "k").as_deref(), Some("b"));
    assert_same_data(&master, &replica);
}

#[test]
fn a_failover_while_a_lease_ends_demotes_cleanly_and_ends_the_wait_once() {
    let mut master = Server::start_with(&["--appendonly", "yes"]);
    let mut replica = master.replica();
    let mut con = master.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "300"]);
    let mut waiter = enqueue(&master, "k", &["b", "WAIT", "0"]);
    // A stopped replica holds FAILOVER in its write pause while the lease ends; it must be
    // online (past its first acknowledgement) for FAILOVER to take it.
    let online = wait_until(SETTLE, || {
        replication_field(&master, "slave0").is_some_and(|s| s.contains("state=online"))
    });
    assert!(online, "the replica never came online");
    replica.signal("STOP");
    let port = replica.port().to_string();
    let failover = ["FAILOVER", "TO", "127.0.0.1", &port, "TIMEOUT", "10000"];
    assert_eq!(raw(&mut con, &failover), Value::Okay);
    assert_eq!(waiter.reply_within(Duration::from_millis(800)), None);
    replica.signal("CONT");
    match waiter.reply() {
        Reply::Error(e) => assert!(e.starts_with("UNBLOCKED"), "{e}"),
        other => panic!("the waiter of a demoted master got {other:?}"),
    }
    assert!(!waiter.has_pending(), "the waiter got a second reply");
    let demoted = wait_until(SETTLE, || {
        replication_field(&master, "role").as_deref() == Some("slave")
            && replication_field(&master, "master_link_status").as_deref() == Some("up")
    });
    assert!(demoted, "the failover did not finish:\n{}", master.log());
    assert_alive(&mut master);
    assert_alive(&mut replica);
    assert_same_data(&replica, &master);
}

// ---------------------------------------------------------------- demotion

#[test]
fn a_node_demoted_with_a_grant_in_flight_neither_writes_nor_publishes() {
    let mut node = Server::start();
    let new_master = Server::start();
    let mut con = node.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "60000"]);
    let mut waiter = enqueue(&node, "k", &["b", "WAIT", "0"]);
    let mut release = Subscriber::plain(&node, &channel("redisson_lock__channel", b"k"));
    // The release hands the lock to b; the demotion, in the same read, comes before b's
    // reply goes out. Redis then ends b's wait itself, and b never learns of its grant.
    let port = new_master.port().to_string();
    let mut pipeline = redis::pipe();
    pipeline
        .cmd("LOCK.RELEASE")
        .arg("k")
        .arg("a")
        .cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(&port);
    let replies: Vec<Value> = pipeline.query(&mut con).expect("release and demote");
    assert_eq!(replies[0], Value::Int(0));
    match waiter.reply() {
        Reply::Error(e) => assert!(e.starts_with("UNBLOCKED"), "{e}"),
        Reply::Int(_) => {}
        other => panic!("the waiter got {other:?}"),
    }
    let synced = wait_until(SETTLE, || {
        replication_field(&node, "master_link_status").as_deref() == Some("up")
    });
    assert!(synced, "the demoted node did not sync:\n{}", node.log());
    // Published after everything the demotion could have sent: a release message from the
    // demoted node would arrive first.
    let done: i64 = redis::cmd("PUBLISH")
        .arg(channel("redisson_lock__channel", b"k"))
        .arg("done")
        .query(&mut con)
        .expect("publish");
    assert_eq!(done, 1);
    let messages = release.until(b"done");
    assert!(
        messages.is_empty(),
        "the demoted node published {messages:?}"
    );
    assert_alive(&mut node);
    assert_eq!(keyspace(&mut con), keyspace(&mut new_master.conn()));
}

// ---------------------------------------------------------------- failover delay

/// A master holding lock `held` for `a`, and a replica promoted with `delay_ms` of failover
/// delay; returns (master, promoted replica, when the promotion was answered).
fn promoted_with_delay(delay_ms: &str) -> (Server, Server, Instant) {
    let master = Server::start();
    let replica = master.replica();
    let mut m = master.conn();
    int(&mut m, &["LOCK.ACQUIRE", "held", "a", "LEASE", "60000"]);
    assert_eq!(int(&mut m, &["WAIT", "1", "5000"]), 1);
    let mut r = replica.conn();
    let set = ["CONFIG", "SET", "rlock.failover-delay", delay_ms];
    assert_eq!(raw(&mut r, &set), Value::Okay);
    assert_eq!(raw(&mut r, &["REPLICAOF", "NO", "ONE"]), Value::Okay);
    (master, replica, Instant::now())
}

#[test]
fn a_promoted_replica_grants_no_lock_it_does_not_have_until_the_delay_ends() {
    let (_old, promoted, at) = promoted_with_delay("1000");
    let mut con = promoted.conn();
    let remaining: i64 = info_field(&mut con, "rlock", "rlock_failover_delay_remaining")
        .and_then(|v| v.parse().ok())
        .expect("INFO rlock has the failover delay");
    assert!(remaining > 0 && remaining <= 1000, "{remaining}");
    assert_eq!(raw(&mut con, &["LOCK.ACQUIRE", "free", "c"]), Value::Nil);
    let mut waiter = enqueue(&promoted, "free", &["b", "WAIT", "10000"]);
    match waiter.reply() {
        Reply::Int(token) => assert!(token > 0),
        other => panic!("the waiter got {other:?}"),
    }
    // Served when the delay ended, not before (the promotion was answered after it began).
    assert!(
        at.elapsed() >= Duration::from_millis(900),
        "{:?}",
        at.elapsed()
    );
    assert_eq!(owner(&mut con, "free").as_deref(), Some("b"));
    assert_eq!(
        info_field(&mut con, "rlock", "rlock_failover_delay_remaining").as_deref(),
        Some("0")
    );
}

#[test]
fn during_the_delay_locks_the_node_has_are_renewed_not_reentered_and_handed_on_after_it() {
    let (_old, promoted, at) = promoted_with_delay("3000");
    let mut con = promoted.conn();
    // The holding may be stale (the old master may have ended it, and handed the lock on,
    // in writes that died with it): its owner may renew it, not reenter it.
    let reentry = raw(&mut con, &["LOCK.ACQUIRE", "held", "a"]);
    let refused = support::error_text(&reentry).unwrap_or_default();
    assert!(
        refused.starts_with("TRYAGAIN rlock: this node was promoted"),
        "{reentry:?}"
    );
    assert_eq!(int(&mut con, &["LOCK.RENEW", "held", "a"]), 1);
    let mut waiter = enqueue(&promoted, "held", &["b", "WAIT", "0"]);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "held", "a"]), 0);
    // The release frees it, and nobody gets it before the delay ends.
    assert_eq!(owner(&mut con, "held"), None);
    assert_eq!(raw(&mut con, &["LOCK.ACQUIRE", "held", "c"]), Value::Nil);
    let quiet = Duration::from_millis(2700).saturating_sub(at.elapsed());
    assert_eq!(waiter.reply_within(quiet), None);
    match waiter.reply() {
        Reply::Int(t) => assert!(t > 0),
        other => panic!("the waiter got {other:?}"),
    }
    assert!(
        at.elapsed() >= Duration::from_millis(2900),
        "{:?}",
        at.elapsed()
    );
    assert_eq!(owner(&mut con, "held").as_deref(), Some("b"));
    // After the delay, a reentry is a reentry again.
    let token = int(&mut con, &["LOCK.ACQUIRE", "held", "b"]);
    assert!(token > 0);
}

#[test]
fn setting_the_delay_to_zero_ends_it() {
    let (_old, promoted, _) = promoted_with_delay("60000");
    let mut con = promoted.conn();
    assert_eq!(raw(&mut con, &["LOCK.ACQUIRE", "free", "c"]), Value::Nil);
    let set = ["CONFIG", "SET", "rlock.failover-delay", "0"];
    assert_eq!(raw(&mut con, &set), Value::Okay);
    assert!(int(&mut con, &["LOCK.ACQUIRE", "free", "c"]) > 0);
}

// ---------------------------------------------------------------- min-replicas-to-write

#[test]
fn a_master_without_enough_replicas_hands_no_lock_on() {
    let master = Server::start_with(&[
        "--min-replicas-to-write",
        "1",
        "--min-replicas-max-lag",
        "1",
    ]);
    let replica = master.replica();
    let good = |n: &str| replication_field(&master, "min_slaves_good_slaves").as_deref() == Some(n);
    assert!(
        wait_until(SETTLE, || good("1")),
        "the replica never counted"
    );
    let mut con = master.conn();
    let lease_ms = 6000;
    int(
        &mut con,
        &["LOCK.ACQUIRE", "k", "a", "LEASE", &lease_ms.to_string()],
    );
    let acquired = Instant::now();
    let mut waiter = enqueue(&master, "k", &["b", "WAIT", "0"]);
    replica.signal("STOP");
    let lease_end = Duration::from_millis(lease_ms);
    let cut_off = wait_until(
        lease_end.saturating_sub(Duration::from_millis(1500)),
        || good("0"),
    );
    assert!(cut_off, "the master never counted its stopped replica out");
    // The lease ends with no good replica: the lock stays with nobody.
    let quiet = (lease_end + Duration::from_millis(800)).saturating_sub(acquired.elapsed());
    assert_eq!(waiter.reply_within(quiet), None);
    replica.signal("CONT");
    match waiter.reply() {
        Reply::Int(token) => assert!(token > 0),
        other => panic!("the waiter got {other:?}"),
    }
}
