//! Issue: one eviction drained the whole queue into phantom grants, and lease timers handed
//! locks on over `maxmemory` although `LOCK.ACQUIRE` is `deny-oom`. A lock evicted with
//! waiters is not handed on (its waiters get `-OOM`), and nothing is granted while memory is
//! at or over the limit.

use std::time::{Duration, Instant};

use redis::Value;

use super::support::{info_field, int, raw, Server};
use super::wire::Reply;
use super::{assert_alive, enqueue, owner, rlock_info};

/// Every waiter of an evicted lock gets `-OOM`, whatever its kind: the connection `con`
/// keeps the server running commands (each makes Redis evict while over the limit).
pub fn each_gets_oom(con: &mut redis::Connection, waiters: &mut [super::wire::Wire]) {
    for (i, waiter) in waiters.iter_mut().enumerate() {
        let started = Instant::now();
        let reply = loop {
            assert_eq!(raw(con, &["PING"]), Value::SimpleString("PONG".into()));
            if let Some(reply) = waiter.reply_within(Duration::from_millis(20)) {
                break reply;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "waiter {i} got no reply"
            );
        };
        match reply {
            Reply::Error(e) => assert!(e.starts_with("OOM rlock: the lock was evicted"), "{e}"),
            other => panic!("waiter {i} of an evicted lock got {other:?}"),
        }
    }
}

/// Five waiters queue with `wait(i)` (a blocking command each) on a held key, the server
/// goes over `maxmemory` and evicts it: each waiter gets `-OOM`, nothing is handed on.
pub fn evicted_with_five_waiters(server: &Server, wait: impl Fn(usize) -> Vec<String>) {
    let mut con = server.conn();
    let mut waiters: Vec<_> = (0..5)
        .map(|i| {
            let command = wait(i);
            let command: Vec<&str> = command.iter().map(String::as_str).collect();
            super::enqueue_command(server, &command)
        })
        .collect();
    squeeze(&mut con);
    each_gets_oom(&mut con, &mut waiters);
    assert_eq!(super::rlock_info(&mut con, "rlock_handoffs"), 0);
    let unlimited = raw(&mut con, &["CONFIG", "SET", "maxmemory", "0"]);
    assert_eq!(unlimited, Value::Okay);
}

/// Sets `maxmemory` to 100 kB under what the server uses now: over the limit from then on.
pub fn squeeze(con: &mut redis::Connection) {
    let used: i64 = info_field(con, "memory", "used_memory")
        .and_then(|v| v.parse().ok())
        .expect("INFO memory has used_memory");
    let limit = (used - 100_000).to_string();
    assert_eq!(
        raw(con, &["CONFIG", "SET", "maxmemory", &limit]),
        Value::Okay
    );
}

#[test]
fn a_lock_evicted_with_waiters_is_not_handed_on_and_its_waiters_get_oom() {
    let mut server = Server::start_with(&["--maxmemory-policy", "volatile-ttl"]);
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "L", "a", "LEASE", "60000"]);
    let mut waiters: Vec<_> = (0..10)
        .map(|i| {
            let owner = format!("w{i}");
            enqueue(&server, "L", &[&owner, "LEASE", "60000", "WAIT", "0"])
        })
        .collect();
    squeeze(&mut con);
    // Every command makes Redis evict while memory is over the limit: the lock, and any
    // lock handed on after it.
    each_gets_oom(&mut con, &mut waiters);
    assert_eq!(rlock_info(&mut con, "rlock_handoffs"), 0);
    assert_eq!(rlock_info(&mut con, "rlock_waiters"), 0);
    assert_eq!(
        raw(&mut con, &["CONFIG", "SET", "maxmemory", "0"]),
        Value::Okay
    );
    assert_eq!(owner(&mut con, "L"), None);
    assert_alive(&mut server);
}

#[test]
fn a_lease_ending_over_maxmemory_is_handed_on_only_below_it() {
    let mut server = Server::start_with(&["--maxmemory-policy", "noeviction"]);
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "L", "a", "LEASE", "300"]);
    let mut waiter = enqueue(&server, "L", &["b", "WAIT", "0"]);
    squeeze(&mut con);
    // The lease ends over the limit: a grant would write a lock Redis refuses to clients.
    assert_eq!(waiter.reply_within(Duration::from_millis(1000)), None);
    assert_eq!(rlock_info(&mut con, "rlock_handoffs"), 0);
    assert_eq!(
        raw(&mut con, &["CONFIG", "SET", "maxmemory", "0"]),
        Value::Okay
    );
    match waiter.reply_within(Duration::from_millis(2000)) {
        Some(Reply::Int(t)) => assert!(t > 0),
        other => panic!("the waiter was not served below the limit: {other:?}"),
    }
    assert_eq!(owner(&mut con, "L").as_deref(), Some("b"));
    assert_alive(&mut server);
}
