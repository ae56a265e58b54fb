//! `TOKEN t` on `LOCK.RELEASE` and `LOCK.RENEW`: a release or renewal that names the token of
//! its holding never touches a newer holding of the same owner.

mod support;

use support::{expect_error, hget, int, keyspace, pttl, Server};

#[test]
fn release_with_the_holdings_token_releases() {
    let server = Server::start();
    let mut con = server.conn();
    let token = int(&mut con, &["LOCK.ACQUIRE", "k", "a"]).to_string();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    assert_eq!(
        int(&mut con, &["LOCK.RELEASE", "k", "a", "TOKEN", &token]),
        1
    );
    assert_eq!(
        int(&mut con, &["LOCK.RELEASE", "k", "a", "token", &token]),
        0
    );
    assert_eq!(int(&mut con, &["EXISTS", "k"]), 0);
}

#[test]
fn release_with_an_older_token_is_not_held_and_changes_nothing() {
    let server = Server::start();
    let mut con = server.conn();
    let old = int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    int(&mut con, &["LOCK.RELEASE", "k", "a"]);
    // The same owner holds the lock again: a newer holding, with a newer token.
    let new = int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    assert!(new > old);
    let before = keyspace(&mut con);
    expect_error(
        &mut con,
        &["LOCK.RELEASE", "k", "a", "TOKEN", &old.to_string()],
        "NOTHELD lock 'k' is not held by 'a'",
    );
    assert_eq!(keyspace(&mut con), before);
    assert_eq!(hget(&mut con, "k", "a").as_deref(), Some("1"));
}

#[test]
fn renew_with_an_older_token_answers_zero_and_keeps_the_lease() {
    let server = Server::start();
    let mut con = server.conn();
    let old = int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    int(&mut con, &["LOCK.RELEASE", "k", "a"]);
    let new = int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "5000"]);
    assert_eq!(
        int(
            &mut con,
            &[
                "LOCK.RENEW",
                "k",
                "a",
                "TOKEN",
                &old.to_string(),
                "LEASE",
                "60000"
            ]
        ),
        0
    );
    assert!(pttl(&mut con, b"k") <= 5000);
    assert_eq!(
        int(
            &mut con,
            &[
                "LOCK.RENEW",
                "k",
                "a",
                "LEASE",
                "60000",
                "TOKEN",
                &new.to_string()
            ]
        ),
        1
    );
    assert!(pttl(&mut con, b"k") > 5000);
}

#[test]
fn a_script_made_lock_has_token_zero() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["HSET", "k", "a", "1"]);
    int(&mut con, &["PEXPIRE", "k", "60000"]);
    assert_eq!(int(&mut con, &["LOCK.RENEW", "k", "a", "TOKEN", "0"]), 1);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", "a", "TOKEN", "0"]), 0);
}

#[test]
fn bad_token_values_are_refused() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    let before = keyspace(&mut con);
    let cases: [(&[&str], &str); 6] = [
        (
            &["LOCK.RELEASE", "k", "a", "TOKEN", "x"],
            "ERR TOKEN is not an integer or out of range",
        ),
        (
            &["LOCK.RELEASE", "k", "a", "TOKEN", "-1"],
            "ERR TOKEN must not be negative",
        ),
        (
            &["LOCK.RELEASE", "k", "a", "LEASE", "1"],
            "ERR unknown option 'LEASE', expected TOKEN",
        ),
        (
            &["LOCK.RENEW", "k", "a", "TOKEN"],
            "ERR TOKEN needs a value",
        ),
        (
            &["LOCK.RENEW", "k", "a", "TOKEN", "1", "TOKEN", "1"],
            "ERR TOKEN is given more than once",
        ),
        (
            &["LOCK.ACQUIRE", "k", "a", "TOKEN", "1"],
            "ERR unknown option 'TOKEN', expected LEASE or WAIT",
        ),
    ];
    for (args, error) in cases {
        expect_error(&mut con, args, error);
    }
    assert_eq!(keyspace(&mut con), before);
}
