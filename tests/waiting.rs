//! SPEC.md §3: server-side waiting. `LOCK.ACQUIRE ... WAIT` queues the client in FIFO
//! order; a release, a lease running out, or a write behind the module's back hands the
//! lock directly to the first waiter.
//!
//! Waiters are bare RESP connections ([`wire::Wire`]) so that a test can hold many of
//! them blocked at once; each is known to be queued (by `LOCK.INFO`'s `waiters`) before
//! the next is sent, which makes arrival order exact.

#[path = "waiting/foreign.rs"]
mod foreign;
#[path = "waiting/load.rs"]
mod load;
mod support;
#[path = "waiting/wire.rs"]
mod wire;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis::Value;
use support::{field, info_field, int, pairs, raw, text_of, Server};
use wire::{poll, Reply, Wire};

/// How long a waiter may take to show up in its queue.
const QUEUE_LIMIT: Duration = Duration::from_secs(10);

/// `LOCK.INFO key`'s `waiters` (0 when the lock is absent).
fn queued(con: &mut redis::Connection, key: &str) -> i64 {
    match raw(con, &["LOCK.INFO", key]) {
        Value::Nil => 0,
        reply => match field(&pairs(&reply), "waiters") {
            Some(Value::Int(n)) => *n,
            other => panic!("LOCK.INFO waiters: {other:?}"),
        },
    }
}

/// `LOCK.INFO key`'s `owner`, or `None` when the lock is absent.
fn owner(con: &mut redis::Connection, key: &str) -> Option<String> {
    match raw(con, &["LOCK.INFO", key]) {
        Value::Nil => None,
        reply => field(&pairs(&reply), "owner").and_then(text_of),
    }
}

/// An `INFO rlock` field, without its `rlock_` prefix.
fn stat(con: &mut redis::Connection, name: &str) -> i64 {
    info_field(con, "rlock", &format!("rlock_{name}"))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("INFO rlock has no rlock_{name}"))
}

/// Polls until `key` has `n` waiters; fails the test if it never does.
fn expect_queued(con: &mut redis::Connection, key: &str, n: i64) {
    let reached = poll(QUEUE_LIMIT, || queued(con, key) == n);
    assert!(reached, "{key} never had {n} waiters");
}

/// A new connection that sends `LOCK.ACQUIRE key owner <options>` and is queued.
fn enqueue(server: &Server, con: &mut redis::Connection, key: &str, args: &[&str]) -> Wire {
    let before = queued(con, key);
    let mut waiter = Wire::connect(server);
    let mut command = vec!["LOCK.ACQUIRE", key];
    command.extend_from_slice(args);
    waiter.send(&command);
    expect_queued(con, key, before + 1);
    waiter
}

/// A token reply, failing the test on anything else.
#[track_caller]
fn token(reply: Reply) -> i64 {
    match reply {
        Reply::Int(t) => t,
        other => panic!("expected a token, got {other:?}"),
    }
}

fn unix_ms() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock");
    i64::try_from(since.as_millis()).expect("ms fit in i64")
}

#[test]
fn waiters_get_the_lock_in_arrival_order() {
    let server = Server::start();
    let mut con = server.conn();
    let first = int(&mut con, &["LOCK.ACQUIRE", "k", "holder"]);
    let owners = ["w1", "w2", "w3", "w4", "w5"];
    let mut waiters: Vec<Wire> = owners
        .iter()
        .map(|o| enqueue(&server, &mut con, "k", &[o, "WAIT", "0"]))
        .collect();
    assert_eq!(stat(&mut con, "waiters"), 5);
    assert_eq!(stat(&mut con, "locks_with_waiters"), 1);

    assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", "holder"]), 0);
    let mut last = first;
    for i in 0..owners.len() {
        let t = token(waiters[i].reply());
        assert!(t > last, "waiter {i}: token {t} after {last}");
        last = t;
        assert_eq!(owner(&mut con, "k").as_deref(), Some(owners[i]));
        assert_eq!(queued(&mut con, "k"), (owners.len() - 1 - i) as i64);
        assert!(waiters[i + 1..].iter_mut().all(|w| !w.has_pending()));
        let released = waiters[i].call(&["LOCK.RELEASE", "k", owners[i]]);
        assert_eq!(released, Reply::Int(0));
    }
    assert_eq!(owner(&mut con, "k"), None);
    assert_eq!(stat(&mut con, "handoffs"), 5);
    assert_eq!(stat(&mut con, "waiters"), 0);
    assert_eq!(stat(&mut con, "locks_with_waiters"), 0);
}

#[test]
fn wait_times_out_with_nil() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "holder"]);
    let mut waiter = Wire::connect(&server);
    let started = Instant::now();
    let reply = waiter.call(&["LOCK.ACQUIRE", "k", "w", "WAIT", "200"]);
    let waited = started.elapsed();
    assert_eq!(reply, Reply::Nil);
    assert!(
        waited >= Duration::from_millis(200),
        "gave up after {waited:?}"
    );
    assert!(
        waited < Duration::from_millis(1200),
        "gave up after {waited:?}"
    );
    assert_eq!(stat(&mut con, "wait_timeouts"), 1);
    assert_eq!(queued(&mut con, "k"), 0);
    assert_eq!(stat(&mut con, "waiters"), 0);
    assert_eq!(owner(&mut con, "k").as_deref(), Some("holder"));
}

#[test]
fn a_disconnected_waiter_is_skipped() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "holder"]);
    let gone = enqueue(&server, &mut con, "k", &["w1", "WAIT", "0"]);
    let mut next = enqueue(&server, &mut con, "k", &["w2", "WAIT", "0"]);
    drop(gone);
    let left = poll(QUEUE_LIMIT, || stat(&mut con, "waiters") == 1);
    assert!(left, "the disconnected waiter never left the queue");

    assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", "holder"]), 0);
    token(next.reply());
    assert_eq!(owner(&mut con, "k").as_deref(), Some("w2"));
    assert_eq!(stat(&mut con, "handoffs"), 1);
    assert_eq!(stat(&mut con, "wait_timeouts"), 0);
}

#[test]
fn wait_zero_waits_until_a_release() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "holder", "LEASE", "60000"]);
    let mut waiter = enqueue(&server, &mut con, "k", &["w", "WAIT", "0"]);
    assert_eq!(waiter.reply_within(Duration::from_millis(300)), None);
    assert_eq!(queued(&mut con, "k"), 1);
    assert_eq!(stat(&mut con, "wait_timeouts"), 0);

    assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", "holder"]), 0);
    token(waiter.reply());
    assert_eq!(owner(&mut con, "k").as_deref(), Some("w"));
}

#[test]
fn an_expired_lease_goes_to_the_waiter_soon_after_the_deadline() {
    let server = Server::start();
    let mut con = server.conn();
    let first = int(&mut con, &["LOCK.ACQUIRE", "k", "holder", "LEASE", "300"]);
    let deadline = int(&mut con, &["PEXPIRETIME", "k"]);
    let mut waiter = enqueue(&server, &mut con, "k", &["w", "LEASE", "5000", "WAIT", "0"]);

    let t = token(waiter.reply());
    let got_at = unix_ms();
    assert!(t > first);
    assert!(got_at >= deadline, "handed {} ms early", deadline - got_at);
    assert!(
        got_at - deadline < 250,
        "handed {} ms after the deadline",
        got_at - deadline
    );
    assert_eq!(owner(&mut con, "k").as_deref(), Some("w"));
    assert_eq!(stat(&mut con, "expiry_handoffs"), 1);
    let lease_end = int(&mut con, &["PEXPIRETIME", "k"]);
    let lease = lease_end - got_at;
    assert!(
        (4000..=5000).contains(&lease),
        "the waiter's lease is {lease} ms"
    );
}

#[test]
fn wait_does_not_block_inside_multi_or_a_script() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "holder"]);
    let mut other = server.conn();

    let started = Instant::now();
    let mut pipe = redis::pipe();
    pipe.atomic()
        .cmd("LOCK.ACQUIRE")
        .arg("k")
        .arg("w")
        .arg("WAIT")
        .arg("0");
    let replies: Vec<Value> = pipe.query(&mut other).expect("MULTI/EXEC");
    assert_eq!(replies, [Value::Nil]);

    let script = "return redis.call('LOCK.ACQUIRE', KEYS[1], ARGV[1], 'WAIT', '0')";
    let reply = raw(&mut other, &["EVAL", script, "1", "k", "w"]);
    assert_eq!(reply, Value::Nil);
    // A wait would last as long as the holder, forever: any bound far above a reply tells.
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(stat(&mut con, "waiters"), 0);
    assert_eq!(owner(&mut con, "k").as_deref(), Some("holder"));
}

#[test]
fn a_reentering_holder_is_never_queued() {
    let server = Server::start();
    let mut con = server.conn();
    let first = int(&mut con, &["LOCK.ACQUIRE", "k", "holder"]);
    let mut holder = Wire::connect(&server);
    let reply = holder.call(&["LOCK.ACQUIRE", "k", "holder", "WAIT", "0"]);
    assert_eq!(reply, Reply::Int(first));
    let info = pairs(&raw(&mut con, &["LOCK.INFO", "k"]));
    assert_eq!(field(&info, "holds"), Some(&Value::Int(2)));
    assert_eq!(field(&info, "waiters"), Some(&Value::Int(0)));
    assert_eq!(stat(&mut con, "reentered"), 1);
}

/// A release that lands around a waiter's `WAIT` deadline: the waiter always gets an
/// answer, its token or nil, and a token means it holds the lock.
#[test]
fn a_release_crossing_the_wait_deadline_always_answers() {
    let server = Server::start();
    let mut con = server.conn();
    let (mut granted, mut timed_out) = (0, 0);
    for trial in 0..40u64 {
        int(&mut con, &["LOCK.ACQUIRE", "k", "holder", "LEASE", "60000"]);
        let owner = format!("w{trial}");
        let mut waiter = enqueue(&server, &mut con, "k", &[&owner, "WAIT", "30"]);
        // From 10 ms before the deadline to 10 ms after it, in 0.5 ms steps.
        std::thread::sleep(Duration::from_micros(20_000 + trial * 500));
        int(&mut con, &["LOCK.RELEASE", "k", "holder"]);
        match waiter.reply_within(Duration::from_secs(2)) {
            Some(Reply::Int(t)) => {
                granted += 1;
                let info = pairs(&raw(&mut con, &["LOCK.INFO", "k"]));
                assert_eq!(field(&info, "token"), Some(&Value::Int(t)));
                int(&mut con, &["LOCK.RELEASE", "k", &owner]);
            }
            Some(Reply::Nil) => {
                timed_out += 1;
                int(&mut con, &["LOCK.FORCERELEASE", "k"]);
            }
            other => panic!("trial {trial}: the waiter got {other:?}"),
        }
        assert_eq!(
            int(&mut con, &["EXISTS", "k"]),
            0,
            "trial {trial}: a hold is left"
        );
    }
    assert!(
        granted > 0 && timed_out > 0,
        "{granted} granted, {timed_out} timed out"
    );
}

/// `CLIENT UNBLOCK` cannot interrupt a wait (a lost reply in Redis 7.0 otherwise); closing
/// the connection does.
#[test]
fn client_unblock_does_not_interrupt_a_wait() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "holder", "LEASE", "60000"]);
    let mut waiter = enqueue(&server, &mut con, "k", &["w", "WAIT", "0"]);
    let list = text_of(&raw(&mut con, &["CLIENT", "LIST"])).unwrap_or_default();
    let id = list
        .lines()
        .find(|line| line.contains("cmd=lock.acquire"))
        .and_then(|line| line.split(' ').find_map(|f| f.strip_prefix("id=")))
        .expect("the waiter is in CLIENT LIST")
        .to_owned();
    assert_eq!(int(&mut con, &["CLIENT", "UNBLOCK", &id]), 0);
    assert_eq!(queued(&mut con, "k"), 1);
    int(&mut con, &["LOCK.RELEASE", "k", "holder"]);
    token(waiter.reply());
}
