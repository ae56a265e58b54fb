//! The gate of a client's lock write: a writable replica refuses it (the master would
//! silently overwrite what it wrote), a write pause refuses it before its key is opened,
//! and a replica tells its own subscribers of every release the master replicates.

use std::time::Duration;

use redis::Value;

use super::support::{
    channel, error_text, int, raw, wait_until, Server, Subscriber, DEFAULT_PREFIX,
};
use super::wire::{Reply, Wire};
use super::{assert_alive, owner, rlock_info, SETTLE};

const REPLICA_WRITE: &str =
    "READONLY rlock: this node is a replica; lock commands that write run on its master";

#[test]
fn a_writable_replica_refuses_lock_writes_and_never_queues_a_waiter() {
    let master = Server::start();
    let replica = master.replica();
    let mut r = replica.conn();
    assert_eq!(
        raw(&mut r, &["CONFIG", "SET", "replica-read-only", "no"]),
        Value::Okay
    );
    let mut m = master.conn();
    int(&mut m, &["LOCK.ACQUIRE", "held", "a", "LEASE", "60000"]);
    assert_eq!(int(&mut m, &["WAIT", "1", "5000"]), 1);
    let writes: [&[&str]; 5] = [
        &["LOCK.ACQUIRE", "free", "x"],
        &["LOCK.ACQUIRE", "held", "a"],
        &["LOCK.RENEW", "held", "a"],
        &["LOCK.RELEASE", "held", "a"],
        &["LOCK.FORCERELEASE", "held"],
    ];
    for command in writes {
        let reply = raw(&mut r, command);
        assert_eq!(
            error_text(&reply).as_deref(),
            Some(REPLICA_WRITE),
            "{command:?}"
        );
    }
    // A waiter is refused at once, instead of hanging until a demotion error.
    let mut waiter = Wire::connect(&replica);
    waiter.send(&["LOCK.ACQUIRE", "held", "b", "WAIT", "0"]);
    match waiter.reply_within(SETTLE) {
        Some(Reply::Error(e)) => assert_eq!(e, REPLICA_WRITE),
        other => panic!("the waiter on a writable replica got {other:?}"),
    }
    assert_eq!(owner(&mut r, "free"), None);
    assert_eq!(owner(&mut r, "held").as_deref(), Some("a"));
    // The replica's copy is its master's: the same fields and the same absolute expiry (a
    // TTL read on each would differ by the milliseconds between the two reads).
    for command in [&["HGETALL", "held"][..], &["PEXPIRETIME", "held"][..]] {
        assert_eq!(raw(&mut r, command), raw(&mut m, command), "{command:?}");
    }
}

#[test]
fn a_lock_write_inside_a_write_pause_is_refused_before_its_key_is_opened() {
    let mut server = Server::start_with(&["--enable-debug-command", "yes"]);
    let mut con = server.conn();
    // An expired lock: opening it for writing during the pause would expire it, which
    // Redis 7.0 aborts on.
    int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "1"]);
    assert_eq!(
        raw(&mut con, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]),
        Value::Okay
    );
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(raw(&mut con, &["MULTI"]), Value::Okay);
    raw(&mut con, &["CLIENT", "PAUSE", "2000", "WRITE"]);
    raw(&mut con, &["LOCK.ACQUIRE", "k", "o"]);
    let replies = match raw(&mut con, &["EXEC"]) {
        Value::Array(replies) => replies,
        other => panic!("EXEC answered {other:?}"),
    };
    match error_text(&replies[1]) {
        Some(e) => assert!(e.starts_with("TRYAGAIN rlock: writes are paused"), "{e}"),
        None => panic!("a lock write ran inside a pause: {replies:?}"),
    }
    assert_eq!(raw(&mut con, &["CLIENT", "UNPAUSE"]), Value::Okay);
    assert_alive(&mut server);
    assert!(int(&mut con, &["LOCK.ACQUIRE", "k", "o"]) > 0);
}

#[test]
fn a_replica_publishes_every_release_its_master_replicates() {
    let master = Server::start();
    let replica = master.replica();
    let mut m = master.conn();
    let mut heard = Subscriber::plain(&replica, &channel(DEFAULT_PREFIX, b"k"));
    int(&mut m, &["LOCK.ACQUIRE", "k", "a"]);
    assert_eq!(int(&mut m, &["LOCK.RELEASE", "k", "a"]), 0);
    int(&mut m, &["LOCK.ACQUIRE", "k", "a"]);
    assert_eq!(int(&mut m, &["LOCK.FORCERELEASE", "k"]), 1);
    revoke_a_grant(&master, &mut m);
    assert_eq!(int(&mut m, &["WAIT", "1", "5000"]), 1);
    let payloads: Vec<Vec<u8>> = (0..3).map(|_| heard.next().payload).collect();
    assert_eq!(payloads, [b"0".to_vec(), b"0".to_vec(), b"0".to_vec()]);
    assert_eq!(owner(&mut replica.conn(), "k"), None);
}

/// `k` is handed to a waiter that is gone before its reply: the grant is taken back.
fn revoke_a_grant(master: &Server, m: &mut redis::Connection) {
    int(m, &["LOCK.ACQUIRE", "k", "a"]);
    let mut waiter = Wire::connect(master);
    let Reply::Int(id) = waiter.call(&["CLIENT", "ID"]) else {
        panic!("CLIENT ID is an integer");
    };
    waiter.send(&["LOCK.ACQUIRE", "k", "b", "WAIT", "0"]);
    let queued = wait_until(SETTLE, || rlock_info(m, "rlock_waiters") == 1);
    assert!(queued, "b never queued");
    let mut both = redis::pipe();
    both.atomic()
        .cmd("LOCK.RELEASE")
        .arg("k")
        .arg("a")
        .cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(id);
    let (released, killed): (i64, i64) = both.query(m).expect("MULTI/EXEC");
    assert_eq!((released, killed), (0, 1));
    let revoked = wait_until(SETTLE, || rlock_info(m, "rlock_revoked_grants") == 1);
    assert!(revoked, "the grant was not taken back");
}
