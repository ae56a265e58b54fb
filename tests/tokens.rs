//! SPEC.md §5: fencing tokens strictly increase across fresh holdings; reentry keeps the
//! token; a lock written by a script-based client reads token 0.

mod support;

use redis::Value;
use std::time::Duration;
use support::{field, hget, info_field, int, pairs, raw, wait_until, Server};

fn info_token(con: &mut redis::Connection, key: &str) -> i64 {
    let reply = raw(con, &["LOCK.INFO", key]);
    match field(&pairs(&reply), "token") {
        Some(Value::Int(t)) => *t,
        other => panic!("LOCK.INFO {key} has no integer token: {other:?}"),
    }
}

#[test]
fn tokens_strictly_increase_across_fresh_holdings_and_keys() {
    let server = Server::start();
    let mut con = server.conn();
    let mut last = 0;
    for round in 0..50 {
        let key = format!("lock:{}", round % 7);
        let owner = format!("owner:{}", round % 3);
        let token = int(&mut con, &["LOCK.ACQUIRE", &key, &owner]);
        assert!(token > last, "token {token} after {last} (round {round})");
        assert_eq!(info_token(&mut con, &key), token);
        if round % 2 == 0 {
            assert_eq!(int(&mut con, &["LOCK.RELEASE", &key, &owner]), 0);
        } else {
            assert_eq!(int(&mut con, &["LOCK.FORCERELEASE", &key]), 1);
        }
        last = token;
    }
}

#[test]
fn tokens_increase_across_concurrent_holdings() {
    let server = Server::start();
    let mut con = server.conn();
    let mut tokens = Vec::new();
    for i in 0..20 {
        tokens.push(int(&mut con, &["LOCK.ACQUIRE", &format!("k{i}"), "a"]));
    }
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
}

#[test]
fn reentry_keeps_the_token() {
    let server = Server::start();
    let mut con = server.conn();
    let token = int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    int(&mut con, &["LOCK.ACQUIRE", "other", "b"]);
    for _ in 0..5 {
        assert_eq!(int(&mut con, &["LOCK.ACQUIRE", "k", "a"]), token);
        assert_eq!(int(&mut con, &["LOCK.RENEW", "k", "a"]), 1);
    }
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", "a"]), 5);
    assert_eq!(info_token(&mut con, "k"), token);
    assert_eq!(int(&mut con, &["LOCK.ACQUIRE", "k", "a"]), token);
}

#[test]
fn token_after_lease_expiry_is_fresh_and_larger() {
    let server = Server::start();
    let mut con = server.conn();
    let first = int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "50"]);
    let gone = wait_until(Duration::from_secs(10), || {
        int(&mut con, &["EXISTS", "k"]) == 0
    });
    assert!(gone, "lease of 50 ms did not run out");
    let second = int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    assert!(second > first, "{second} after {first}");
}

#[test]
fn next_token_in_info_is_ahead_of_issued_tokens() {
    let server = Server::start();
    let mut con = server.conn();
    let token = int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    let next: i64 = info_field(&mut con, "rlock", "rlock_next_token")
        .expect("rlock_next_token in INFO rlock")
        .parse()
        .expect("rlock_next_token is an integer");
    assert!(next > token, "next_token {next} <= issued {token}");
}

#[test]
fn script_written_lock_reads_token_zero_and_reentry_replies_zero() {
    let server = Server::start();
    let mut con = server.conn();
    raw(&mut con, &["HSET", "rlock:r", "uuid-1:7", "1"]);
    raw(&mut con, &["PEXPIRE", "rlock:r", "60000"]);
    assert_eq!(info_token(&mut con, "rlock:r"), 0);
    assert_eq!(int(&mut con, &["LOCK.ACQUIRE", "rlock:r", "uuid-1:7"]), 0);
    assert_eq!(hget(&mut con, "rlock:r", "uuid-1:7").as_deref(), Some("2"));
    assert_eq!(info_token(&mut con, "rlock:r"), 0);
    let contender = raw(&mut con, &["LOCK.ACQUIRE", "rlock:r", "uuid-2:1"]);
    assert_eq!(contender, Value::Nil);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "rlock:r", "uuid-1:7"]), 1);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "rlock:r", "uuid-1:7"]), 0);
    let fresh = int(&mut con, &["LOCK.ACQUIRE", "rlock:r", "uuid-2:1"]);
    assert!(
        fresh > 0,
        "a fresh holding of a former script lock got token {fresh}"
    );
}
