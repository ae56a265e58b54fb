//! Leases of the read-write lock and the semaphore as their waiters see them: a lease made
//! shorter (a renewal, a reentry) hands the lock on at its new end; a Redisson holder's
//! lease (the key's TTL) is watched by a module timer, however many other keys carry a
//! TTL; the release of the last live hold frees the key and is published; and a countdown
//! latch brought to zero by a plain string write lets its waits go.

#[path = "tickets/receiver.rs"]
#[allow(dead_code)]
mod receiver;
#[path = "rwlock/client.rs"]
#[allow(dead_code)]
mod rw_client;
#[path = "semaphore/client.rs"]
#[allow(dead_code)]
mod sem_client;
mod support;
#[path = "latch/waits.rs"]
#[allow(dead_code)]
mod waits;

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use receiver::Receiver;
use redis::Value;
use support::{blocked, channel, int, raw, Server, Subscriber};

/// How long a waiter may take after the end of the lease it waits for: generous, as the
/// machine may be busy; without a check at the lease's end it waits its whole `WAIT`.
const HANDOFF_LIMIT: Duration = Duration::from_millis(1500);

/// The waiter got a token within `limit`.
#[track_caller]
fn granted_within(rx: &mpsc::Receiver<Value>, limit: Duration) -> i64 {
    let start = Instant::now();
    match rx.recv_timeout(limit) {
        Ok(Value::Int(token)) => token,
        other => panic!(
            "expected a token within {limit:?}, got {other:?} after {:?}",
            start.elapsed()
        ),
    }
}

/// Waits until `n` waits are queued on the node.
fn queued(con: &mut redis::Connection, n: i64) {
    waits::queued(con, n);
}

#[test]
fn a_read_write_renewal_to_a_shorter_lease_hands_on_at_its_end() {
    let server = Server::start();
    let mut con = server.conn();
    int(
        &mut con,
        &["RWLOCK.ACQUIRE", "k", "w", "WRITE", "LEASE", "30000"],
    );
    let r = blocked(
        &server,
        &["RWLOCK.ACQUIRE", "k", "r", "READ", "WAIT", "3000"],
    );
    queued(&mut con, 1);
    assert_eq!(
        int(&mut con, &["RWLOCK.RENEW", "k", "w", "LEASE", "100"]),
        1
    );
    granted_within(&r, HANDOFF_LIMIT);
}

#[test]
fn a_read_write_reentry_with_a_shorter_lease_hands_on_at_its_end() {
    let server = Server::start();
    let mut con = server.conn();
    int(
        &mut con,
        &["RWLOCK.ACQUIRE", "k", "w", "WRITE", "LEASE", "30000"],
    );
    let r = blocked(
        &server,
        &["RWLOCK.ACQUIRE", "k", "r", "READ", "WAIT", "3000"],
    );
    queued(&mut con, 1);
    int(
        &mut con,
        &["RWLOCK.ACQUIRE", "k", "w", "WRITE", "LEASE", "100"],
    );
    granted_within(&r, HANDOFF_LIMIT);
}

#[test]
fn a_semaphore_renewal_to_a_shorter_lease_hands_on_at_its_end() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["SEM.PERMITS", "s", "1"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "a", "1", "LEASE", "30000"]);
    let b = blocked(&server, &["SEM.ACQUIRE", "s", "b", "1", "WAIT", "3000"]);
    queued(&mut con, 1);
    assert_eq!(int(&mut con, &["SEM.RENEW", "s", "a", "LEASE", "100"]), 1);
    granted_within(&b, HANDOFF_LIMIT);
}

/// A Redisson writer's holding of `rk` whose lease (the key's TTL) ends in 300 ms.
fn redisson_writer(con: &mut redis::Connection) {
    raw(con, &["HSET", "rk", "mode", "write", "u:1:write", "1"]);
    raw(con, &["PEXPIRE", "rk", "300"]);
}

#[test]
fn a_redisson_holding_is_handed_on_at_its_ttl_end() {
    let server = Server::start();
    let mut con = server.conn();
    redisson_writer(&mut con);
    let m = blocked(
        &server,
        &["RWLOCK.ACQUIRE", "rk", "m", "WRITE", "WAIT", "3000"],
    );
    granted_within(&m, Duration::from_millis(300) + HANDOFF_LIMIT);
    let fields = support::hgetall(&mut con, b"rk");
    assert!(!fields.contains_key(&b"u:1:write"[..]), "{fields:?}");
}

#[test]
fn a_redisson_holding_is_handed_on_at_its_ttl_end_among_many_keys_with_a_ttl() {
    let server = Server::start();
    let mut con = server.conn();
    // Redis's own expiry samples keys with a TTL: among 50,000 it may not find this one
    // for a long time.
    for batch in 0..50 {
        let mut pipe = redis::pipe();
        for i in 0..1000 {
            pipe.cmd("SET")
                .arg(format!("other:{batch}:{i}"))
                .arg("1")
                .arg("PX")
                .arg(60_000)
                .ignore();
        }
        pipe.query::<()>(&mut con).expect("pipeline");
    }
    redisson_writer(&mut con);
    let m = blocked(
        &server,
        &["RWLOCK.ACQUIRE", "rk", "m", "WRITE", "WAIT", "3000"],
    );
    granted_within(&m, Duration::from_millis(300) + HANDOFF_LIMIT);
}

/// Every message on `channel` until a sentinel this test publishes after acting.
fn heard(con: &mut redis::Connection, sub: &mut Subscriber, channel: &[u8]) -> Vec<Vec<u8>> {
    let name = String::from_utf8_lossy(channel).into_owned();
    raw(con, &["PUBLISH", &name, "end"]);
    sub.until(b"end").into_iter().map(|m| m.payload).collect()
}

#[test]
fn the_last_live_read_hold_released_frees_the_key_and_is_published() {
    let server = Server::start();
    let ch = channel("redisson_rwlock", b"k");
    let mut sub = Subscriber::plain(&server, &ch);
    let mut con = server.conn();
    int(
        &mut con,
        &["RWLOCK.ACQUIRE", "k", "r1", "READ", "LEASE", "30000"],
    );
    int(
        &mut con,
        &["RWLOCK.ACQUIRE", "k", "r2", "READ", "LEASE", "100"],
    );
    thread::sleep(Duration::from_millis(300));
    assert_eq!(int(&mut con, &["RWLOCK.RELEASE", "k", "r1", "READ"]), 0);
    assert_eq!(raw(&mut con, &["EXISTS", "k"]), Value::Int(0));
    assert_eq!(heard(&mut con, &mut sub, &ch), vec![b"1".to_vec()]);
}

#[test]
fn a_read_hold_released_beside_a_live_one_keeps_the_key_unpublished() {
    let server = Server::start();
    let ch = channel("redisson_rwlock", b"k");
    let mut sub = Subscriber::plain(&server, &ch);
    let mut con = server.conn();
    int(
        &mut con,
        &["RWLOCK.ACQUIRE", "k", "r1", "READ", "LEASE", "30000"],
    );
    int(
        &mut con,
        &["RWLOCK.ACQUIRE", "k", "r2", "READ", "LEASE", "100"],
    );
    int(
        &mut con,
        &["RWLOCK.ACQUIRE", "k", "r3", "READ", "LEASE", "30000"],
    );
    thread::sleep(Duration::from_millis(300));
    assert_eq!(int(&mut con, &["RWLOCK.RELEASE", "k", "r1", "READ"]), 0);
    assert_eq!(raw(&mut con, &["EXISTS", "k"]), Value::Int(1));
    assert!(heard(&mut con, &mut sub, &ch).is_empty());
    let info = rw_client::rw_info(&mut con, "k");
    let owners: Vec<&str> = info.holders.iter().map(|h| h.0.as_str()).collect();
    assert_eq!(owners, ["r3"]);
}

#[test]
fn the_last_live_permit_holder_released_leaves_every_permit_free() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["SEM.PERMITS", "s", "2"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "a", "1", "LEASE", "30000"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "b", "1", "LEASE", "100"]);
    thread::sleep(Duration::from_millis(300));
    assert_eq!(int(&mut con, &["SEM.RELEASE", "s", "a"]), 0);
    let info = sem_client::sem_info(&mut con, "s").expect("the semaphore stays");
    assert_eq!((info.total, info.available), (2, 2));
    assert!(info.holders.is_empty(), "{info:?}");
    // Both permits at once, for a newcomer.
    assert!(int(&mut con, &["SEM.ACQUIRE", "s", "c", "2"]) > 0);
}

/// A latch of count 2 with one blocked `LATCH.AWAIT` and one `LATCH.WAIT` ticket, brought
/// to zero or below by `write`: both waits end with 1.
fn plain_write_opens_the_latch(write: &[&str]) {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LATCH.SET", "l", "2"]);
    let blocked = blocked(&server, &["LATCH.AWAIT", "l", "WAIT", "0"]);
    queued(&mut con, 1);
    let mut r = Receiver::push(&server);
    let (tag, id) = waits::pair(&r.call(&["LATCH.WAIT", "l"]));
    assert_eq!(tag, "queued");
    queued(&mut con, 2);
    raw(&mut con, write);
    match blocked.recv_timeout(HANDOFF_LIMIT) {
        Ok(reply) => assert_eq!(reply, Value::Int(1), "{write:?}"),
        Err(_) => panic!("{write:?}: the blocked LATCH.AWAIT was not released"),
    }
    assert_eq!(r.outcome(), (id, "1".to_owned()), "{write:?}");
    queued(&mut con, 0);
}

#[test]
fn a_latch_brought_to_zero_by_decrby_lets_its_waits_go() {
    plain_write_opens_the_latch(&["DECRBY", "l", "2"]);
}

#[test]
fn a_latch_set_to_zero_lets_its_waits_go() {
    plain_write_opens_the_latch(&["SET", "l", "0"]);
}

#[test]
fn a_latch_brought_below_zero_lets_its_waits_go() {
    plain_write_opens_the_latch(&["INCRBY", "l", "-5"]);
}

#[test]
fn a_latch_written_above_zero_keeps_its_waits() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LATCH.SET", "l", "2"]);
    let rx = blocked(&server, &["LATCH.AWAIT", "l", "WAIT", "0"]);
    queued(&mut con, 1);
    raw(&mut con, &["DECR", "l"]);
    raw(&mut con, &["SET", "l", "7"]);
    waits::still_waiting(&rx);
    assert_eq!(waits::queued_now(&mut con), 1);
    raw(&mut con, &["DEL", "l"]);
    assert_eq!(waits::released(&rx), Value::Int(1));
}
