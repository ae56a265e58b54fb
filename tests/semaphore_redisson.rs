//! A Redisson `RSemaphore` is a string counter (`GET`, `DECRBY`, `INCRBY` in scripts); an
//! rlock semaphore is a hash, so Redisson's scripts on it fail with `WRONGTYPE` and change
//! nothing (docs/commands/sem.acquire.md says so).

mod support;

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
