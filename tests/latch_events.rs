//! A countdown latch shared with Redisson's `RCountDownLatch`, changed behind the module's
//! back (a `DEL`, an expiry, Redisson's own scripts), replicated, and released for many
//! waits at once.

#[path = "tickets/receiver.rs"]
#[allow(dead_code)]
mod receiver;
mod support;
#[path = "latch/waits.rs"]
#[allow(dead_code)]
mod waits;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use receiver::Receiver;
use redis::Value;
use support::{int, raw, wait_until, Server, Subscriber};
use waits::{awaiter, pair, queued, released, LIMIT};

/// Redisson's `trySetCount` and `countDown` scripts (RedissonCountDownLatch.java).
const TRY_SET_COUNT: &str = "if redis.call('exists', KEYS[1]) == 0 then redis.call('set', KEYS[1], ARGV[2]); redis.call(ARGV[3], KEYS[2], ARGV[1]); return 1; else return 0; end";
const COUNT_DOWN: &str = "local v = redis.call('decr', KEYS[1]); if v <= 0 then redis.call('del', KEYS[1]) end; if v == 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end;";

fn channel(key: &str) -> String {
    format!("redisson_countdownlatch__channel__{{{key}}}")
}

fn redisson_count_down(con: &mut redis::Connection, key: &str) {
    let ch = channel(key);
    raw(con, &["EVAL", COUNT_DOWN, "2", key, &ch, "0", "publish"]);
}

#[test]
fn a_deleted_or_expired_latch_releases_its_waits() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LATCH.SET", "k", "5"]);
    let rx = awaiter(&server, "k");
    queued(&mut con, 1);
    raw(&mut con, &["DEL", "k"]);
    assert_eq!(released(&rx), Value::Int(1));
    int(&mut con, &["LATCH.SET", "e", "5"]);
    let rx = awaiter(&server, "e");
    queued(&mut con, 1);
    raw(&mut con, &["PEXPIRE", "e", "100"]);
    assert_eq!(released(&rx), Value::Int(1));
    queued(&mut con, 0);
}

#[test]
fn a_flushed_or_evicted_latch_releases_its_waits() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LATCH.SET", "f", "5"]);
    let rx = awaiter(&server, "f");
    queued(&mut con, 1);
    raw(&mut con, &["FLUSHDB"]);
    assert_eq!(released(&rx), Value::Int(1));
    int(&mut con, &["LATCH.SET", "v", "5"]);
    let rx = awaiter(&server, "v");
    queued(&mut con, 1);
    raw(
        &mut con,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-random"],
    );
    raw(&mut con, &["CONFIG", "SET", "maxmemory", "1"]);
    // The next write evicts every key it can, the latch's among them.
    raw(&mut con, &["SET", "x", "1"]);
    raw(&mut con, &["CONFIG", "SET", "maxmemory", "0"]);
    assert_eq!(released(&rx), Value::Int(1));
    queued(&mut con, 0);
}

#[test]
fn redisson_and_rlock_count_down_the_same_latch() {
    let server = Server::start();
    let mut con = server.conn();
    let ch = channel("k");
    let set = ["EVAL", TRY_SET_COUNT, "2", "k", &ch, "1", "2", "publish"];
    assert_eq!(int(&mut con, &set), 1);
    assert_eq!(int(&mut con, &["LATCH.SET", "k", "9"]), 0);
    assert_eq!(int(&mut con, &["LATCH.COUNT", "k"]), 2);
    let rx = awaiter(&server, "k");
    queued(&mut con, 1);
    redisson_count_down(&mut con, "k");
    assert_eq!(int(&mut con, &["LATCH.COUNT", "k"]), 1);
    redisson_count_down(&mut con, "k");
    assert_eq!(released(&rx), Value::Int(1));
    // And a Redisson waiter (a subscriber of the channel) hears rlock's count down.
    assert_eq!(int(&mut con, &set), 1);
    let mut sub = Subscriber::plain(&server, ch.as_bytes());
    assert_eq!(int(&mut con, &["LATCH.COUNTDOWN", "k"]), 1);
    assert_eq!(int(&mut con, &["LATCH.COUNTDOWN", "k"]), 0);
    assert_eq!(sub.next().payload, b"0");
    assert_eq!(raw(&mut con, &["GET", "k"]), Value::Nil);
}

#[test]
fn a_replica_holds_what_its_master_holds() {
    let master = Server::start();
    let replica = master.replica();
    let mut con = master.conn();
    let mut rep = replica.conn();
    int(&mut con, &["LATCH.SET", "k", "3"]);
    int(&mut con, &["LATCH.COUNTDOWN", "k"]);
    raw(&mut con, &["PEXPIRE", "k", "600000"]);
    int(&mut con, &["LATCH.COUNTDOWN", "k"]);
    int(&mut con, &["LATCH.SET", "gone", "1"]);
    int(&mut con, &["LATCH.COUNTDOWN", "gone"]);
    raw(&mut con, &["SET", "end", "1"]);
    assert!(wait_until(LIMIT, || raw(&mut rep, &["GET", "end"]) != Value::Nil));
    assert_eq!(
        raw(&mut rep, &["GET", "k"]),
        Value::BulkString(b"1".to_vec())
    );
    // The count down keeps the key's time to live, as Redisson's DECR does.
    assert!(int(&mut rep, &["PTTL", "k"]) > 0);
    assert_eq!(int(&mut rep, &["LATCH.COUNT", "k"]), 1);
    // Reading it changed nothing there, not even how the number is stored.
    let encoding = raw(&mut rep, &["OBJECT", "ENCODING", "k"]);
    assert_eq!(encoding, Value::BulkString(b"int".to_vec()));
    assert_eq!(raw(&mut rep, &["EXISTS", "gone"]), Value::Int(0));
    assert!(int(&mut con, &["PTTL", "k"]) > 0);
}

#[test]
fn ten_thousand_waits_released_at_zero_leave_the_server_answering() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LATCH.SET", "k", "1"]);
    let n = 10_000;
    let mut r = Receiver::push(&server);
    for _ in 0..n {
        r.send(&["LATCH.WAIT", "k"]);
    }
    let ids: Vec<i64> = (0..n).map(|_| pair(&r.reply()).1).collect();
    queued(&mut con, n);
    // A PING every few milliseconds while the latch opens: the slowest answer is measured.
    let stop = Arc::new(AtomicBool::new(false));
    let mut pinger = server.conn();
    let flag = Arc::clone(&stop);
    let pings = thread::spawn(move || {
        let mut slowest = Duration::ZERO;
        while !flag.load(Ordering::Relaxed) {
            let start = Instant::now();
            raw(&mut pinger, &["PING"]);
            slowest = slowest.max(start.elapsed());
            thread::sleep(Duration::from_millis(2));
        }
        slowest
    });
    thread::sleep(Duration::from_millis(50));
    assert_eq!(int(&mut con, &["LATCH.COUNTDOWN", "k"]), 0);
    for id in ids {
        assert_eq!(r.outcome(), (id, "1".to_owned()));
    }
    thread::sleep(Duration::from_millis(50));
    stop.store(true, Ordering::Relaxed);
    let slowest = pings.join().expect("pinger");
    eprintln!("slowest PING while 10000 waits were released: {slowest:?}");
    assert!(slowest < Duration::from_millis(100), "{slowest:?}");
    queued(&mut con, 0);
}
