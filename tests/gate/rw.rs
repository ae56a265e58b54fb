//! Read-write locks pass the same gate: a promoted replica holds their fresh holdings back
//! for the failover delay, and a read-write lock evicted with waiters is not handed on.

use std::time::{Duration, Instant};

use redis::Value;

use super::memory::evicted_with_five_waiters;
use super::support::proxy::Proxy;
use super::support::{int, raw, Server};
use super::wire::Reply;
use super::{enqueue_command, replica_through};

const DELAY_MS: u64 = 3000;

#[test]
fn a_promoted_replica_grants_no_read_write_holding_before_the_failover_delay_ends() {
    let master = Server::start_with(&["--repl-diskless-sync-delay", "0"]);
    let replica = master.replica();
    let mut m = master.conn();
    int(
        &mut m,
        &["RWLOCK.ACQUIRE", "L", "r", "READ", "LEASE", "300"],
    );
    assert_eq!(int(&mut m, &["WAIT", "1", "5000"]), 1);
    master.signal("KILL");
    let mut r = replica.conn();
    let delay = DELAY_MS.to_string();
    let set = ["CONFIG", "SET", "rlock.failover-delay", &delay];
    assert_eq!(raw(&mut r, &set), Value::Okay);
    assert_eq!(raw(&mut r, &["REPLICAOF", "NO", "ONE"]), Value::Okay);
    let at = Instant::now();
    // A free key: nothing fresh during the delay.
    let nil = raw(&mut r, &["RWLOCK.ACQUIRE", "free", "x", "READ"]);
    assert_eq!(nil, Value::Nil);
    let mut w = enqueue_command(
        &replica,
        &["RWLOCK.ACQUIRE", "L", "w", "WRITE", "WAIT", "20000"],
    );
    // r's lease ends after 300 ms; the writer waits for the delay all the same.
    let quiet = Duration::from_millis(DELAY_MS - 300).saturating_sub(at.elapsed());
    assert_eq!(
        w.reply_within(quiet),
        None,
        "granted during the failover delay"
    );
    match w.reply() {
        Reply::Int(t) => assert!(t > 0),
        other => panic!("w got {other:?}"),
    }
    assert!(at.elapsed() >= Duration::from_millis(DELAY_MS - 100));
}

#[test]
fn a_read_write_lock_evicted_with_waiters_is_not_handed_on() {
    let server = Server::start_with(&["--maxmemory-policy", "volatile-ttl"]);
    let mut con = server.conn();
    int(
        &mut con,
        &["RWLOCK.ACQUIRE", "L", "w", "WRITE", "LEASE", "60000"],
    );
    evicted_with_five_waiters(&server, |i| {
        let owner = format!("r{i}");
        ["RWLOCK.ACQUIRE", "L", &owner, "READ", "WAIT", "0"]
            .map(str::to_owned)
            .to_vec()
    });
}

/// As for a plain lock: a read hold released on the old master and handed to a writer there
/// in writes that died with it; the promoted replica still has the reader. The reader's
/// acquisition must not reenter that copy during the delay.
#[test]
fn a_reentry_of_a_stale_read_hold_during_the_delay_is_refused() {
    let master = Server::start();
    let proxy = Proxy::start(master.port());
    let replica = replica_through(&master, proxy.port());
    let mut m = master.conn();
    int(
        &mut m,
        &["RWLOCK.ACQUIRE", "L", "r", "READ", "LEASE", "60000"],
    );
    assert_eq!(int(&mut m, &["WAIT", "1", "5000"]), 1);
    let mut w = enqueue_command(&master, &["RWLOCK.ACQUIRE", "L", "w", "WRITE", "WAIT", "0"]);
    proxy.cut();
    assert_eq!(int(&mut m, &["RWLOCK.RELEASE", "L", "r", "READ"]), 0);
    assert!(
        matches!(w.reply(), Reply::Int(_)),
        "the writer got the lock on the old master"
    );
    master.signal("KILL");
    let mut r = replica.conn();
    let delay = DELAY_MS.to_string();
    let set = ["CONFIG", "SET", "rlock.failover-delay", &delay];
    assert_eq!(raw(&mut r, &set), Value::Okay);
    assert_eq!(raw(&mut r, &["REPLICAOF", "NO", "ONE"]), Value::Okay);
    let reply = raw(&mut r, &["RWLOCK.ACQUIRE", "L", "r", "READ"]);
    let text = super::support::error_text(&reply).unwrap_or_default();
    assert!(
        text.starts_with("TRYAGAIN rlock: this node was promoted"),
        "the reader reentered its stale holding: {reply:?}"
    );
    assert_eq!(super::support::hget(&mut r, "L", "r").as_deref(), Some("1"));
}
