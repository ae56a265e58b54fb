//! `LOCK.RAISE key owner token floor`: only the holder raises the node's token counter,
//! within the learning bound; the raise reaches replicas and the AOF.

mod support;

use std::time::Duration;
use support::{expect_error, expect_nil, info_field, int, raw, wait_until, Server};

/// Tokens this node issues next (`INFO rlock`).
fn next_token(con: &mut redis::Connection) -> i64 {
    let next = info_field(con, "rlock", "rlock_next_token").expect("rlock_next_token");
    next.parse().expect("an integer")
}

/// A floor an hour of microseconds past `token`: past the learning bound.
fn an_hour_past(token: i64) -> i64 {
    token + 3_600_000_000
}

/// A floor a second of microseconds past `token`: within the learning bound (twice the
/// default `rlock.token-gap`, about 2.1 s past the clock).
fn a_second_past(token: i64) -> i64 {
    token + 1_000_000
}

#[test]
fn the_holder_raises_the_counter_and_later_tokens_are_above_the_floor() {
    let server = Server::start();
    let mut con = server.conn();
    let token = int(&mut con, &["LOCK.ACQUIRE", "k", "a:1"]);
    let floor = a_second_past(token);
    let counter = int(
        &mut con,
        &[
            "LOCK.RAISE",
            "k",
            "a:1",
            &token.to_string(),
            &floor.to_string(),
        ],
    );
    assert_eq!(counter, floor);
    assert!(int(&mut con, &["LOCK.ACQUIRE", "other", "b:1"]) > floor);
    // A lower floor changes nothing and replies the counter.
    let again = int(
        &mut con,
        &["LOCK.RAISE", "k", "a:1", &token.to_string(), "5"],
    );
    assert!(again > floor);
}

#[test]
fn only_the_holder_with_its_token_may_raise() {
    let server = Server::start();
    let mut con = server.conn();
    let token = int(&mut con, &["LOCK.ACQUIRE", "k", "a:1"]).to_string();
    let floor = an_hour_past(token.parse().unwrap()).to_string();
    let before = next_token(&mut con);
    expect_nil(&mut con, &["LOCK.RAISE", "k", "b:1", &token, &floor]);
    expect_nil(&mut con, &["LOCK.RAISE", "k", "a:1", "7", &floor]);
    expect_nil(&mut con, &["LOCK.RAISE", "free", "a:1", &token, &floor]);
    // Not raised: well short of the floor an hour ahead.
    assert!(next_token(&mut con) < before + 600_000_000);
}

#[test]
fn a_floor_past_the_learning_bound_is_not_learned() {
    let server = Server::start();
    let mut con = server.conn();
    let token = int(&mut con, &["LOCK.ACQUIRE", "k", "a:1"]);
    let too_far = i64::MAX - 1;
    let counter = int(
        &mut con,
        &[
            "LOCK.RAISE",
            "k",
            "a:1",
            &token.to_string(),
            &too_far.to_string(),
        ],
    );
    assert!(counter < too_far, "learned {counter}");
    let next = int(&mut con, &["LOCK.ACQUIRE", "other", "b:1"]);
    assert!(next > token && next < too_far);
}

#[test]
fn bad_arguments_are_refused() {
    let server = Server::start();
    let mut con = server.conn();
    let bad = "ERR LOCK.RAISE needs key owner token floor: token and floor non-negative integers";
    expect_error(&mut con, &["LOCK.RAISE", "k", "a:1", "-1", "5"], bad);
    expect_error(&mut con, &["LOCK.RAISE", "k", "a:1", "1", "x"], bad);
    expect_error(
        &mut con,
        &["LOCK.RAISE", "k", "a:1", "1"],
        "ERR wrong number of arguments for 'lock.raise' command",
    );
    let _ = raw(&mut con, &["SET", "s", "v"]);
    expect_error(
        &mut con,
        &["LOCK.RAISE", "s", "a:1", "1", "5"],
        "WRONGTYPE Operation against a key holding the wrong kind of value",
    );
}

#[test]
fn a_raise_reaches_the_replica() {
    let master = Server::start();
    let replica = master.replica();
    let mut con = master.conn();
    let token = int(&mut con, &["LOCK.ACQUIRE", "k", "a:1"]);
    let floor = a_second_past(token);
    int(
        &mut con,
        &[
            "LOCK.RAISE",
            "k",
            "a:1",
            &token.to_string(),
            &floor.to_string(),
        ],
    );
    let mut rcon = replica.conn();
    let learned = wait_until(Duration::from_secs(10), || next_token(&mut rcon) > floor);
    assert!(
        learned,
        "the replica's next token is {}",
        next_token(&mut rcon)
    );
    // A client may not raise a replica.
    let refused = raw(
        &mut rcon,
        &["LOCK.RAISE", "k", "a:1", &token.to_string(), "1"],
    );
    assert!(
        support::error_text(&refused).is_some_and(|e| e.starts_with("READONLY")),
        "{refused:?}"
    );
}
