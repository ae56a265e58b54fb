//! A read-write lock freed behind the module's back goes to its queue; a Redisson client's
//! read-write lock is taken for rlock's clients until its unlock deletes it; a release that
//! frees the lock is published on Redisson's read-write channel.

#[path = "rwlock/client.rs"]
#[allow(dead_code)]
mod client;
mod support;

use client::{granted, queued, still_waiting, waiter};
use redis::Value;
use support::{channel, expect_nil, int, raw, Server, Subscriber};

#[test]
fn a_deleted_lock_goes_to_its_queue_at_once() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["RWLOCK.ACQUIRE", "k", "w", "WRITE"]);
    let r1 = waiter(&server, "k", "r1", "READ");
    queued(&mut con, "k", 1);
    let r2 = waiter(&server, "k", "r2", "READ");
    queued(&mut con, "k", 2);
    raw(&mut con, &["DEL", "k"]);
    let (t1, t2) = (granted(&r1), granted(&r2));
    assert!(t2 > t1);
}

#[test]
fn a_redisson_read_write_lock_is_taken_for_rlock_clients_until_its_unlock() {
    let server = Server::start();
    let mut con = server.conn();
    // A Redisson reader's holding: its count, its timeout key, no token.
    raw(&mut con, &["HSET", "k", "mode", "read", "uuid-1:7", "1"]);
    raw(&mut con, &["PEXPIRE", "k", "30000"]);
    raw(
        &mut con,
        &["SET", "{k}:uuid-1:7:rwlock_timeout:1", "1", "PX", "30000"],
    );
    expect_nil(&mut con, &["RWLOCK.ACQUIRE", "k", "r", "READ"]);
    expect_nil(&mut con, &["RWLOCK.ACQUIRE", "k", "w", "WRITE"]);
    let w = waiter(&server, "k", "w", "WRITE");
    queued(&mut con, "k", 1);
    // Redisson's unlock: the count goes, then the hash, then its message.
    raw(&mut con, &["HINCRBY", "k", "uuid-1:7", "-1"]);
    raw(&mut con, &["HDEL", "k", "uuid-1:7"]);
    still_waiting(&w);
    raw(&mut con, &["DEL", "k", "{k}:uuid-1:7:rwlock_timeout:1"]);
    let token = granted(&w);
    let fields = support::hgetall(&mut con, b"k");
    assert_eq!(fields[&b"w:write"[..]], b"1");
    assert!(token > 0);
}

#[test]
fn a_release_that_frees_the_lock_is_published_and_a_handoff_is_not() {
    let server = Server::start();
    let mut sub = Subscriber::plain(&server, &channel("redisson_rwlock", b"k"));
    let mut con = server.conn();
    int(&mut con, &["RWLOCK.ACQUIRE", "k", "w", "WRITE"]);
    let r = waiter(&server, "k", "r", "READ");
    queued(&mut con, "k", 1);
    int(&mut con, &["RWLOCK.RELEASE", "k", "w", "WRITE"]);
    granted(&r);
    int(&mut con, &["RWLOCK.RELEASE", "k", "r", "READ"]);
    raw(
        &mut con,
        &[
            "PUBLISH",
            &String::from_utf8_lossy(&channel("redisson_rwlock", b"k")),
            "end",
        ],
    );
    let seen = sub.until(b"end");
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].payload, b"1");
    assert_eq!(raw(&mut con, &["EXISTS", "k"]), Value::Int(0));
}
