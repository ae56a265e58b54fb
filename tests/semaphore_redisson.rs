//! A Redisson `RSemaphore` is a string counter (`GET`, `DECRBY`, `INCRBY` in scripts); an
//! rlock semaphore is a hash, so Redisson's scripts on it fail with `WRONGTYPE` and change
//! nothing (docs/commands/sem.acquire.md says so). So do the `RPermitExpirableSemaphore`
//! scripts that the benchmark runs (`support/redisson_semaphore.rs`), which take an ended
//! lease's permit back only when one of them runs.

mod support;

#[path = "support/redisson_semaphore.rs"]
mod expirable;

use redis::Value;
use support::{error_text, hgetall, int, raw, Server};

/// Redisson's `RSemaphore.tryAcquire(permits)` script.
const TRY_ACQUIRE: &str = "local value = redis.call('get', KEYS[1]); \
    if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then \
    local val = redis.call('decrby', KEYS[1], ARGV[1]); return 1; end; return 0;";
/// Redisson's `RSemaphore.trySetPermits(permits)` script.
const TRY_SET: &str = "local value = redis.call('get', KEYS[1]); \
    if (value == false) then redis.call('set', KEYS[1], ARGV[1]); \
    redis.call('publish', KEYS[2], ARGV[1]); return 1; end; return 0;";
/// Redisson's `RSemaphore.release(permits)` script.
const RELEASE: &str = "local value = redis.call('incrby', KEYS[1], ARGV[1]); \
    redis.call('publish', KEYS[2], value);";

#[test]
fn redisson_semaphore_scripts_get_wrongtype_on_an_rlock_semaphore() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["SEM.PERMITS", "s", "3"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "a", "1"]);
    let before = hgetall(&mut con, b"s");
    let channel = "redisson_sc:{s}";
    for script in [TRY_ACQUIRE, TRY_SET, RELEASE] {
        let reply = raw(&mut con, &["EVAL", script, "2", "s", channel, "1"]);
        let text = error_text(&reply).unwrap_or_default();
        assert!(text.contains("WRONGTYPE"), "{script}: {reply:?}");
    }
    assert_eq!(hgetall(&mut con, b"s"), before);
    // And an RSemaphore's string is not an rlock semaphore.
    raw(&mut con, &["SET", "r", "3"]);
    let reply = raw(&mut con, &["SEM.ACQUIRE", "r", "a", "1"]);
    assert_eq!(
        error_text(&reply).as_deref(),
        Some("WRONGTYPE key is not a semaphore")
    );
}

fn load(con: &mut redis::Connection, body: &str) -> String {
    redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(body)
        .query(con)
        .expect("SCRIPT LOAD")
}

#[test]
fn expirable_semaphore_scripts_take_an_ended_lease_back_on_the_next_call() {
    let server = Server::start();
    let mut con = server.conn();
    let take = load(&mut con, expirable::TRY_ACQUIRE);
    let give = load(&mut con, expirable::TRY_RELEASE);
    raw(&mut con, &["SET", "s", "1"]);
    let acquire = |con: &mut redis::Connection, id: &str, lease_end: u64, now: u64| -> Value {
        expirable::acquire(&take, "s", id, lease_end, now)
            .query(con)
            .expect("tryAcquire")
    };
    let ok = Value::BulkString(b"OK".to_vec());
    assert_eq!(acquire(&mut con, "a", 5_000, 1_000), ok);
    // Taken: the reply is the earliest lease end, and nothing changes.
    let nearest = Value::BulkString(b":5000".to_vec());
    assert_eq!(acquire(&mut con, "b", 9_000, 4_999), nearest);
    // The next call at or past the lease end takes the permit back and is given it.
    assert_eq!(acquire(&mut con, "b", 9_000, 5_000), ok);
    let members: Vec<String> = redis::cmd("ZRANGE")
        .arg("{s}:timeout")
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .expect("ZRANGE");
    assert_eq!(members, ["b"]);
    let release = |con: &mut redis::Connection, id: &str, now: u64| -> i64 {
        expirable::release(&give, "s", id, now)
            .query(con)
            .expect("tryRelease")
    };
    assert_eq!(
        release(&mut con, "a", 6_000),
        0,
        "a's permit was taken back"
    );
    assert_eq!(release(&mut con, "b", 6_000), 1);
    assert_eq!(int(&mut con, &["INCRBY", "s", "0"]), 1);
    // On an rlock semaphore they change nothing.
    int(&mut con, &["SEM.PERMITS", "r", "1"]);
    let before = hgetall(&mut con, b"r");
    let reply = expirable::acquire(&take, "r", "c", 5_000, 1_000).query::<Value>(&mut con);
    let text = reply.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains("WRONGTYPE"), "{text}");
    assert_eq!(hgetall(&mut con, b"r"), before);
}
