//! Script clients get their turn (docs/design/script-turns.md): with `rlock.script-turn`
//! set, a release of a lock that has native waiters, while a script client (Redisson: its
//! Lua script, then a wait on the lock's channel) is subscribed to the lock's channel,
//! sometimes frees the lock and publishes its release instead of handing it to the next
//! native waiter, and holds native grants back for `rlock.script-turn` ms, in which the
//! script client can take it. Off by default: native waiters are then always served first.

mod support;

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use redis::Value;
use support::redisson::{TRY_LOCK, UNLOCK};
use support::{channel, expect_nil, info_field, int, raw, Server, Subscriber, DEFAULT_PREFIX};

const KEY: &str = "turns:k";

/// Starts a native waiter: `LOCK.ACQUIRE KEY owner WAIT 20000` on a connection of its own;
/// its token arrives on the returned channel once it is granted.
fn native_waiter(server: &Server, owner: &'static str) -> mpsc::Receiver<i64> {
    let mut con = server.conn();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let token = int(&mut con, &["LOCK.ACQUIRE", KEY, owner, "WAIT", "20000"]);
        let _ = tx.send(token);
        // The connection lives until the holding is released by the test.
        thread::sleep(Duration::from_secs(30));
    });
    rx
}

/// Waits until `n` clients wait on KEY.
fn queued(con: &mut redis::Connection, n: i64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while waiters(con) != n {
        assert!(Instant::now() < deadline, "hung: {n} waiters never queued");
        thread::sleep(Duration::from_millis(5));
    }
}

fn waiters(con: &mut redis::Connection) -> i64 {
    match raw(con, &["LOCK.INFO", KEY]) {
        Value::Array(items) | Value::Set(items) => items
            .chunks(2)
            .find(|kv| support::text_of(&kv[0]).as_deref() == Some("waiters"))
            .and_then(|kv| match kv[1] {
                Value::Int(n) => Some(n),
                _ => None,
            })
            .unwrap_or(0),
        Value::Map(pairs) => pairs
            .iter()
            .find(|(k, _)| support::text_of(k).as_deref() == Some("waiters"))
            .and_then(|(_, v)| match v {
                Value::Int(n) => Some(*n),
                _ => None,
            })
            .unwrap_or(0),
        _ => 0,
    }
}

fn script_turns(con: &mut redis::Connection) -> i64 {
    info_field(con, "rlock", "rlock_script_turns")
        .and_then(|v| v.parse().ok())
        .expect("INFO rlock has script_turns")
}

fn granted(rx: &mpsc::Receiver<i64>, within: Duration) -> Option<i64> {
    rx.recv_timeout(within).ok()
}

/// `a` holds KEY, and n1 then n2 queue behind it.
fn held_with_two_waiters(
    server: &Server,
) -> (redis::Connection, mpsc::Receiver<i64>, mpsc::Receiver<i64>) {
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", KEY, "a"]);
    let n1 = native_waiter(server, "n1");
    queued(&mut con, 1);
    let n2 = native_waiter(server, "n2");
    queued(&mut con, 2);
    (con, n1, n2)
}

/// `a` holds KEY; n1 and n2 queue behind it; a script client is subscribed to the channel.
/// `a` releases: the first native grant goes to n1 (the natives' share comes first).
fn natives_and_a_script_client(
    server: &Server,
) -> (redis::Connection, mpsc::Receiver<i64>, Subscriber) {
    let (mut con, n1, n2) = held_with_two_waiters(server);
    let ch = channel(DEFAULT_PREFIX, KEY.as_bytes());
    let sub = Subscriber::plain(server, &ch);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", KEY, "a"]), 0);
    assert!(granted(&n1, Duration::from_secs(10)).is_some(), "hung: n1");
    assert_eq!(
        script_turns(&mut con),
        0,
        "the first release serves a native"
    );
    (con, n2, sub)
}

#[test]
fn a_release_with_a_script_client_waiting_frees_the_lock_for_it_in_its_turn() {
    let server = Server::start_with(&["--rlock.script-turn", "100"]);
    let (mut con, n2, mut sub) = natives_and_a_script_client(&server);
    // n1 had the natives' share (1 native queued, 1 script client): the scripts' turn.
    assert_eq!(int(&mut con, &["LOCK.RELEASE", KEY, "n1"]), 0);
    let message = sub.next();
    assert_eq!(message.payload, b"0", "the release is published");
    assert_eq!(int(&mut con, &["EXISTS", KEY]), 0, "the lock is free");
    assert_eq!(script_turns(&mut con), 1);
    // A native newcomer does not take it during the turn, nor does the queued n2.
    expect_nil(&mut con, &["LOCK.ACQUIRE", KEY, "newcomer"]);
    assert_eq!(granted(&n2, Duration::from_millis(20)), None);
    // The script client takes it, as Redisson's tryLock does, and releases it.
    let ch = String::from_utf8(channel(DEFAULT_PREFIX, KEY.as_bytes())).expect("utf-8");
    let acquired = raw(&mut con, &["EVAL", TRY_LOCK, "1", KEY, "10000", "r:1"]);
    assert_eq!(acquired, Value::Nil, "the script client acquired");
    let released = raw(
        &mut con,
        &["EVAL", UNLOCK, "2", KEY, &ch, "0", "10000", "r:1"],
    );
    assert_eq!(released, Value::Int(1));
    // Then the natives come next: n2 is served right after the script's release.
    assert!(granted(&n2, Duration::from_secs(10)).is_some(), "hung: n2");
}

#[test]
fn a_turn_nobody_takes_ends_and_the_next_native_waiter_gets_the_lock() {
    let server = Server::start_with(&["--rlock.script-turn", "300"]);
    let (mut con, n2, _sub) = natives_and_a_script_client(&server);
    let released = Instant::now();
    assert_eq!(int(&mut con, &["LOCK.RELEASE", KEY, "n1"]), 0);
    assert!(granted(&n2, Duration::from_secs(10)).is_some(), "hung: n2");
    let waited = released.elapsed();
    assert!(
        waited >= Duration::from_millis(250),
        "n2 was served before the turn ended: {waited:?}"
    );
    assert_eq!(script_turns(&mut con), 1);
}

#[test]
fn by_default_native_waiters_are_always_served_first() {
    let server = Server::start();
    let (mut con, n2, _sub) = natives_and_a_script_client(&server);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", KEY, "n1"]), 0);
    assert!(granted(&n2, Duration::from_secs(10)).is_some(), "hung: n2");
    assert_eq!(script_turns(&mut con), 0);
}

#[test]
fn without_a_script_client_waiting_the_lock_goes_to_the_next_native_waiter() {
    let server = Server::start_with(&["--rlock.script-turn", "100"]);
    let (mut con, n1, n2) = held_with_two_waiters(&server);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", KEY, "a"]), 0);
    assert!(granted(&n1, Duration::from_secs(10)).is_some(), "hung: n1");
    assert_eq!(int(&mut con, &["LOCK.RELEASE", KEY, "n1"]), 0);
    assert!(granted(&n2, Duration::from_secs(10)).is_some(), "hung: n2");
    assert_eq!(script_turns(&mut con), 0);
}

#[test]
fn under_spublish_the_script_clients_are_those_of_the_shard_channel() {
    let server = Server::start_with(&["--rlock.script-turn", "100", "--rlock.publish", "spublish"]);
    let (mut con, n1, n2) = held_with_two_waiters(&server);
    let ch = channel(DEFAULT_PREFIX, KEY.as_bytes());
    let mut shard = Subscriber::shard(&server, &ch);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", KEY, "a"]), 0);
    assert!(granted(&n1, Duration::from_secs(10)).is_some(), "hung: n1");
    assert_eq!(int(&mut con, &["LOCK.RELEASE", KEY, "n1"]), 0);
    assert_eq!(
        shard.next().kind,
        "smessage",
        "the release is published to the shard"
    );
    assert_eq!(int(&mut con, &["EXISTS", KEY]), 0, "the lock is free");
    assert_eq!(script_turns(&mut con), 1);
    assert!(granted(&n2, Duration::from_secs(10)).is_some(), "hung: n2");
}
