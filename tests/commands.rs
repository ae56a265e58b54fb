//! SPEC.md §2: replies of the five commands, and every error case with its exact text.

mod support;

use redis::Value;
use support::{
    bytes_of, expect_error, expect_nil, hash_of, hget, hgetall, int, keyspace, pairs, pexpiretime,
    pttl, raw, text_of, Server,
};

fn arity(cmd: &str) -> String {
    format!(
        "ERR wrong number of arguments for '{}' command",
        cmd.to_ascii_lowercase()
    )
}

// ---------------------------------------------------------------- LOCK.ACQUIRE

#[test]
fn acquire_of_free_lock_replies_a_token() {
    let server = Server::start();
    let mut con = server.conn();
    let token = int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    assert!(token > 0);
    assert_eq!(hget(&mut con, "k", "a").as_deref(), Some("1"));
}

#[test]
fn reentry_replies_same_token_counts_up_and_resets_lease() {
    let server = Server::start();
    let mut con = server.conn();
    let token = int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "60000"]);
    assert_eq!(
        int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "120000"]),
        token
    );
    let ttl = pttl(&mut con, b"k");
    assert!((110_000..=120_000).contains(&ttl), "lease not reset: {ttl}");
    assert_eq!(
        int(&mut con, &["LOCK.ACQUIRE", "k", "a", "lease", "5000"]),
        token
    );
    let ttl = pttl(&mut con, b"k");
    assert!((4000..=5000).contains(&ttl), "lease not reset: {ttl}");
    assert_eq!(int(&mut con, &["LOCK.ACQUIRE", "k", "a"]), token);
    let ttl = pttl(&mut con, b"k");
    assert!(
        (29_000..=30_000).contains(&ttl),
        "lease not reset to default: {ttl}"
    );
    assert_eq!(
        hgetall(&mut con, b"k"),
        hash_of(&[(b"a", b"4"), (b"@token", token.to_string().as_bytes())])
    );
}

#[test]
fn contended_acquire_without_wait_is_nil_and_changes_nothing() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "60000"]);
    let before = keyspace(&mut con);
    expect_nil(&mut con, &["LOCK.ACQUIRE", "k", "b"]);
    expect_nil(&mut con, &["LOCK.ACQUIRE", "k", "b", "LEASE", "1000"]);
    assert_eq!(keyspace(&mut con), before);
}

#[test]
fn wait_on_a_free_lock_simply_acquires() {
    let server = Server::start();
    let mut con = server.conn();
    let t1 = int(&mut con, &["LOCK.ACQUIRE", "k1", "a", "WAIT", "1000"]);
    let t2 = int(
        &mut con,
        &["LOCK.ACQUIRE", "k2", "a", "WAIT", "0", "LEASE", "5000"],
    );
    assert!(t2 > t1);
    let ttl = pttl(&mut con, b"k2");
    assert!((4000..=5000).contains(&ttl), "{ttl}");
    assert_eq!(
        int(&mut con, &["LOCK.ACQUIRE", "k1", "a", "WAIT", "10"]),
        t1
    );
    assert_eq!(hget(&mut con, "k1", "a").as_deref(), Some("2"));
}

#[test]
fn acquire_inside_multi_replies_in_exec() {
    let server = Server::start();
    let mut con = server.conn();
    raw(&mut con, &["MULTI"]);
    raw(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    raw(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    raw(&mut con, &["LOCK.ACQUIRE", "k", "b"]);
    let replies = match raw(&mut con, &["EXEC"]) {
        Value::Array(items) => items,
        other => panic!("EXEC replied {other:?}"),
    };
    assert_eq!(replies.len(), 3);
    assert!(matches!(replies[0], Value::Int(t) if t > 0));
    assert_eq!(replies[0], replies[1]);
    assert_eq!(replies[2], Value::Nil);
}

#[test]
fn contended_wait_inside_multi_or_a_script_replies_nil_at_once() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "60000"]);
    let before = keyspace(&mut con);
    raw(&mut con, &["MULTI"]);
    raw(&mut con, &["LOCK.ACQUIRE", "k", "b", "WAIT", "0"]);
    raw(
        &mut con,
        &["LOCK.ACQUIRE", "k", "b", "WAIT", "5000", "LEASE", "100"],
    );
    assert_eq!(
        raw(&mut con, &["EXEC"]),
        Value::Array(vec![Value::Nil, Value::Nil])
    );
    let script = "return redis.call('LOCK.ACQUIRE', KEYS[1], ARGV[1], 'WAIT', '0')";
    assert_eq!(raw(&mut con, &["EVAL", script, "1", "k", "b"]), Value::Nil);
    assert_eq!(keyspace(&mut con), before);
}

// ---------------------------------------------------------------- LOCK.RELEASE

#[test]
fn release_counts_down_and_keeps_the_lease_while_holds_remain() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "60000"]);
    int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "60000"]);
    int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "60000"]);
    let deadline = pexpiretime(&mut con, b"k");
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", "a"]), 2);
    assert_eq!(pexpiretime(&mut con, b"k"), deadline);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", "a"]), 1);
    assert_eq!(pexpiretime(&mut con, b"k"), deadline);
    assert_eq!(hget(&mut con, "k", "a").as_deref(), Some("1"));
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", "a"]), 0);
    assert_eq!(int(&mut con, &["EXISTS", "k"]), 0);
}

#[test]
fn release_when_not_held_is_notheld() {
    let server = Server::start();
    let mut con = server.conn();
    expect_error(
        &mut con,
        &["LOCK.RELEASE", "lock:absent", "a"],
        "NOTHELD lock 'lock:absent' is not held by 'a'",
    );
    int(&mut con, &["LOCK.ACQUIRE", "lock:1", "a", "LEASE", "60000"]);
    let before = keyspace(&mut con);
    expect_error(
        &mut con,
        &["LOCK.RELEASE", "lock:1", "b:7"],
        "NOTHELD lock 'lock:1' is not held by 'b:7'",
    );
    expect_error(
        &mut con,
        &[&b"LOCK.RELEASE"[..], b"lock:1", b"x\r\ny\x00\\"],
        "NOTHELD lock 'lock:1' is not held by 'x\\x0d\\x0ay\\x00\\x5c'",
    );
    assert_eq!(keyspace(&mut con), before);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "lock:1", "a"]), 0);
    expect_error(
        &mut con,
        &["LOCK.RELEASE", "lock:1", "a"],
        "NOTHELD lock 'lock:1' is not held by 'a'",
    );
}

// ---------------------------------------------------------------- LOCK.RENEW

#[test]
fn renew_by_holder_resets_the_lease() {
    let server = Server::start();
    let mut con = server.conn();
    let token = int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "60000"]);
    assert_eq!(
        int(&mut con, &["LOCK.RENEW", "k", "a", "LEASE", "120000"]),
        1
    );
    let ttl = pttl(&mut con, b"k");
    assert!((110_000..=120_000).contains(&ttl), "{ttl}");
    assert_eq!(int(&mut con, &["LOCK.RENEW", "k", "a"]), 1);
    let ttl = pttl(&mut con, b"k");
    assert!((29_000..=30_000).contains(&ttl), "{ttl}");
    assert_eq!(int(&mut con, &["LOCK.RENEW", "k", "a", "lease", "7000"]), 1);
    let ttl = pttl(&mut con, b"k");
    assert!((6000..=7000).contains(&ttl), "{ttl}");
    assert_eq!(
        hgetall(&mut con, b"k"),
        hash_of(&[(b"a", b"1"), (b"@token", token.to_string().as_bytes())])
    );
}

#[test]
fn renew_when_not_held_is_zero_and_changes_nothing() {
    let server = Server::start();
    let mut con = server.conn();
    assert_eq!(int(&mut con, &["LOCK.RENEW", "absent", "a"]), 0);
    assert_eq!(
        int(&mut con, &["LOCK.RENEW", "absent", "a", "LEASE", "100"]),
        0
    );
    assert_eq!(int(&mut con, &["EXISTS", "absent"]), 0);
    int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "60000"]);
    let before = keyspace(&mut con);
    assert_eq!(int(&mut con, &["LOCK.RENEW", "k", "b"]), 0);
    assert_eq!(
        int(&mut con, &["LOCK.RENEW", "k", "b", "LEASE", "100000"]),
        0
    );
    assert_eq!(keyspace(&mut con), before);
}

// ---------------------------------------------------------------- LOCK.INFO

#[test]
fn info_of_absent_lock_is_nil() {
    let server = Server::start();
    let mut con = server.conn();
    expect_nil(&mut con, &["LOCK.INFO", "absent"]);
    let mut con3 = server.conn_resp3();
    expect_nil(&mut con3, &["LOCK.INFO", "absent"]);
}

/// Checks a LOCK.INFO reply: names and order, then returns (owner, holds, ttl, token, waiters).
fn info_fields(reply: &Value) -> (Vec<u8>, i64, i64, i64, i64) {
    let pairs = pairs(reply);
    let names: Vec<String> = pairs
        .iter()
        .map(|(k, _)| text_of(k).expect("field name"))
        .collect();
    assert_eq!(names, ["owner", "holds", "ttl", "token", "waiters"]);
    let int_at = |i: usize| match &pairs[i].1 {
        Value::Int(n) => *n,
        other => panic!("field {} is not an integer: {other:?}", names[i]),
    };
    let owner = match &pairs[0].1 {
        Value::BulkString(b) => b.clone(),
        other => panic!("owner is not a bulk string: {other:?}"),
    };
    (owner, int_at(1), int_at(2), int_at(3), int_at(4))
}

#[test]
fn info_resp2_is_a_flat_array_in_spec_order() {
    let server = Server::start();
    let mut con = server.conn();
    let token = int(&mut con, &["LOCK.ACQUIRE", "k", "a:1", "LEASE", "60000"]);
    int(&mut con, &["LOCK.ACQUIRE", "k", "a:1", "LEASE", "60000"]);
    let reply = raw(&mut con, &["LOCK.INFO", "k"]);
    assert!(
        matches!(reply, Value::Array(ref items) if items.len() == 10),
        "{reply:?}"
    );
    let (owner, holds, ttl, tok, waiters) = info_fields(&reply);
    assert_eq!(owner, b"a:1");
    assert_eq!(holds, 2);
    assert!((50_000..=60_000).contains(&ttl), "{ttl}");
    assert_eq!(tok, token);
    assert_eq!(waiters, 0);
}

#[test]
fn info_resp3_is_a_map() {
    let server = Server::start();
    let mut con = server.conn_resp3();
    let token = int(&mut con, &["LOCK.ACQUIRE", "k", "a:1", "LEASE", "60000"]);
    let reply = raw(&mut con, &["LOCK.INFO", "k"]);
    assert!(
        matches!(reply, Value::Map(_)),
        "expected a RESP3 map, got {reply:?}"
    );
    let (owner, holds, ttl, tok, waiters) = info_fields(&reply);
    assert_eq!(
        (owner.as_slice(), holds, tok, waiters),
        (&b"a:1"[..], 1, token, 0)
    );
    assert!((50_000..=60_000).contains(&ttl), "{ttl}");
}

#[test]
fn info_ttl_is_minus_one_for_a_lock_without_ttl() {
    let server = Server::start();
    let mut con = server.conn();
    raw(&mut con, &["HSET", "script-lock", "r:1", "3"]);
    let (owner, holds, ttl, token, _) = info_fields(&raw(&mut con, &["LOCK.INFO", "script-lock"]));
    assert_eq!(
        (owner.as_slice(), holds, ttl, token),
        (&b"r:1"[..], 3, -1, 0)
    );

    let t = int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    raw(&mut con, &["PERSIST", "k"]);
    let (_, _, ttl, token, _) = info_fields(&raw(&mut con, &["LOCK.INFO", "k"]));
    assert_eq!((ttl, token), (-1, t));
}

#[test]
fn info_changes_nothing() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "60000"]);
    let before = keyspace(&mut con);
    raw(&mut con, &["LOCK.INFO", "k"]);
    raw(&mut con, &["LOCK.INFO", "absent"]);
    assert_eq!(keyspace(&mut con), before);
}

// ---------------------------------------------------------------- LOCK.FORCERELEASE

#[test]
fn forcerelease_removes_the_lock_whoever_holds_it() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    assert_eq!(int(&mut con, &["LOCK.FORCERELEASE", "k"]), 1);
    assert_eq!(int(&mut con, &["EXISTS", "k"]), 0);
    assert_eq!(int(&mut con, &["LOCK.FORCERELEASE", "k"]), 0);
    assert_eq!(int(&mut con, &["LOCK.FORCERELEASE", "never"]), 0);
    let token = int(&mut con, &["LOCK.ACQUIRE", "k", "b"]);
    assert!(token > 0);
    raw(&mut con, &["HSET", "script-lock", "r:1", "1"]);
    assert_eq!(int(&mut con, &["LOCK.FORCERELEASE", "script-lock"]), 1);
    assert_eq!(int(&mut con, &["EXISTS", "script-lock"]), 0);
}

// ---------------------------------------------------------------- errors

/// Runs every case against a keyspace holding a lock, and checks nothing changed.
fn assert_errors(cases: &[(&[&str], String)]) {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "60000"]);
    int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "60000"]);
    raw(&mut con, &["SET", "other", "x"]);
    let before = keyspace(&mut con);
    for (args, text) in cases {
        expect_error(&mut con, args, text);
    }
    assert_eq!(keyspace(&mut con), before, "an error changed the keyspace");
}

#[test]
fn wrong_arity_uses_redis_own_text() {
    let cases: Vec<(&[&str], String)> = vec![
        (&["LOCK.ACQUIRE"], arity("LOCK.ACQUIRE")),
        (&["LOCK.ACQUIRE", "k"], arity("LOCK.ACQUIRE")),
        (&["LOCK.RELEASE"], arity("LOCK.RELEASE")),
        (&["LOCK.RELEASE", "k"], arity("LOCK.RELEASE")),
        (&["LOCK.RELEASE", "k", "a", "b"], arity("LOCK.RELEASE")),
        (&["LOCK.RENEW"], arity("LOCK.RENEW")),
        (&["LOCK.RENEW", "k"], arity("LOCK.RENEW")),
        (&["LOCK.INFO"], arity("LOCK.INFO")),
        (&["LOCK.INFO", "k", "a"], arity("LOCK.INFO")),
        (&["LOCK.FORCERELEASE"], arity("LOCK.FORCERELEASE")),
        (&["LOCK.FORCERELEASE", "k", "a"], arity("LOCK.FORCERELEASE")),
    ];
    assert_errors(&cases);
}

#[test]
fn wrong_arity_text_matches_a_lowercase_call_too() {
    let server = Server::start();
    let mut con = server.conn();
    expect_error(&mut con, &["lock.acquire", "k"], &arity("lock.acquire"));
    expect_error(&mut con, &["Lock.Info"], &arity("lock.info"));
}

#[test]
fn option_values_that_are_not_integers_are_refused() {
    let lease = "ERR LEASE is not an integer or out of range".to_owned();
    let wait = "ERR WAIT is not an integer or out of range".to_owned();
    let cases: Vec<(&[&str], String)> = vec![
        (&["LOCK.ACQUIRE", "k", "a", "LEASE", "abc"], lease.clone()),
        (&["LOCK.ACQUIRE", "k", "a", "LEASE", "1.5"], lease.clone()),
        (&["LOCK.ACQUIRE", "k", "a", "LEASE", ""], lease.clone()),
        (&["LOCK.ACQUIRE", "k", "a", "LEASE", " 100"], lease.clone()),
        (&["LOCK.ACQUIRE", "k", "a", "LEASE", "100ms"], lease.clone()),
        (
            &["LOCK.ACQUIRE", "k", "a", "LEASE", "9223372036854775808"],
            lease.clone(),
        ),
        (
            &[
                "LOCK.ACQUIRE",
                "fresh",
                "a",
                "LEASE",
                "99999999999999999999",
            ],
            lease.clone(),
        ),
        (&["LOCK.ACQUIRE", "fresh", "a", "WAIT", "abc"], wait.clone()),
        (&["LOCK.ACQUIRE", "k", "b", "WAIT", "1e3"], wait.clone()),
        (
            &["LOCK.ACQUIRE", "k", "a", "LEASE", "100", "WAIT", "x"],
            wait.clone(),
        ),
        (&["LOCK.RENEW", "k", "a", "LEASE", "abc"], lease.clone()),
        (&["LOCK.RENEW", "k", "a", "LEASE", "-"], lease),
    ];
    assert_errors(&cases);
}

#[test]
fn lease_must_be_positive_and_wait_not_negative() {
    let lease = "ERR LEASE must be a positive integer".to_owned();
    let wait = "ERR WAIT must not be negative".to_owned();
    let cases: Vec<(&[&str], String)> = vec![
        (&["LOCK.ACQUIRE", "k", "a", "LEASE", "0"], lease.clone()),
        (
            &["LOCK.ACQUIRE", "fresh", "a", "LEASE", "-5"],
            lease.clone(),
        ),
        (
            &[
                "LOCK.ACQUIRE",
                "fresh",
                "a",
                "LEASE",
                "-9223372036854775808",
            ],
            lease.clone(),
        ),
        (&["LOCK.ACQUIRE", "k", "b", "WAIT", "-1"], wait.clone()),
        (&["LOCK.ACQUIRE", "fresh", "b", "WAIT", "-1"], wait),
        (&["LOCK.RENEW", "k", "a", "LEASE", "0"], lease.clone()),
        (&["LOCK.RENEW", "k", "a", "LEASE", "-1"], lease),
    ];
    assert_errors(&cases);
}

#[test]
fn values_that_overflow_the_clock_are_too_large() {
    let lease = "ERR LEASE is too large".to_owned();
    let wait = "ERR WAIT is too large".to_owned();
    const MAX: &str = "9223372036854775807";
    const NEAR: &str = "9223372036854775000";
    let cases: Vec<(&[&str], String)> = vec![
        (&["LOCK.ACQUIRE", "k", "a", "LEASE", MAX], lease.clone()),
        (
            &["LOCK.ACQUIRE", "fresh", "a", "LEASE", NEAR],
            lease.clone(),
        ),
        (&["LOCK.ACQUIRE", "fresh", "a", "WAIT", MAX], wait.clone()),
        (&["LOCK.ACQUIRE", "k", "b", "WAIT", MAX], wait),
        (&["LOCK.RENEW", "k", "a", "LEASE", MAX], lease),
    ];
    assert_errors(&cases);
}

#[test]
fn options_given_twice_are_refused() {
    let lease = "ERR LEASE is given more than once".to_owned();
    let wait = "ERR WAIT is given more than once".to_owned();
    let cases: Vec<(&[&str], String)> = vec![
        (
            &["LOCK.ACQUIRE", "k", "a", "LEASE", "100", "LEASE", "200"],
            lease.clone(),
        ),
        (
            &["LOCK.ACQUIRE", "fresh", "a", "lease", "100", "LEASE", "200"],
            lease.clone(),
        ),
        (
            &[
                "LOCK.ACQUIRE",
                "fresh",
                "a",
                "WAIT",
                "1",
                "LEASE",
                "5",
                "wait",
                "1",
            ],
            wait,
        ),
        (
            &["LOCK.RENEW", "k", "a", "LEASE", "100", "LEASE", "100"],
            lease,
        ),
    ];
    assert_errors(&cases);
}

#[test]
fn unknown_options_and_missing_values_are_refused() {
    let both = "expected LEASE or WAIT";
    let cases: Vec<(&[&str], String)> = vec![
        (
            &["LOCK.ACQUIRE", "k", "a", "NX"],
            format!("ERR unknown option 'NX', {both}"),
        ),
        (
            &["LOCK.ACQUIRE", "fresh", "a", "PX", "100"],
            format!("ERR unknown option 'PX', {both}"),
        ),
        (
            &["LOCK.ACQUIRE", "fresh", "a", "LEASE", "100", "100"],
            format!("ERR unknown option '100', {both}"),
        ),
        (
            &["LOCK.ACQUIRE", "fresh", "a", ""],
            format!("ERR unknown option '', {both}"),
        ),
        (
            &["LOCK.RENEW", "k", "a", "WAIT", "100"],
            "ERR unknown option 'WAIT', expected LEASE or TOKEN".to_owned(),
        ),
        (
            &["LOCK.RENEW", "k", "a", "NX"],
            "ERR unknown option 'NX', expected LEASE or TOKEN".to_owned(),
        ),
        (
            &["LOCK.ACQUIRE", "k", "a", "LEASE"],
            "ERR LEASE needs a value in milliseconds".to_owned(),
        ),
        (
            &["LOCK.ACQUIRE", "fresh", "a", "wait"],
            "ERR WAIT needs a value in milliseconds".to_owned(),
        ),
        (
            &["LOCK.ACQUIRE", "fresh", "a", "LEASE", "100", "WAIT"],
            "ERR WAIT needs a value in milliseconds".to_owned(),
        ),
        (
            &["LOCK.RENEW", "k", "a", "LEASE"],
            "ERR LEASE needs a value in milliseconds".to_owned(),
        ),
    ];
    assert_errors(&cases);
}

#[test]
fn unknown_option_with_unprintable_bytes_is_escaped() {
    let server = Server::start();
    let mut con = server.conn();
    let reply = raw(&mut con, &[&b"LOCK.ACQUIRE"[..], b"k", b"a", b"X\r\n\xff"]);
    support::assert_error(
        &reply,
        "ERR unknown option 'X\\x0d\\x0a\\xff', expected LEASE or WAIT",
    );
    assert_eq!(int(&mut con, &["EXISTS", "k"]), 0);
}

#[test]
fn command_names_are_case_insensitive() {
    let server = Server::start();
    let mut con = server.conn();
    let token = int(&mut con, &["lock.acquire", "k", "a"]);
    assert_eq!(int(&mut con, &["Lock.Acquire", "k", "a"]), token);
    assert_eq!(int(&mut con, &["lock.renew", "k", "a"]), 1);
    let reply = raw(&mut con, &["lock.info", "k"]);
    assert_eq!(bytes_of(&pairs(&reply)[0].1), Some(b"a".to_vec()));
    assert_eq!(int(&mut con, &["lock.release", "k", "a"]), 1);
    assert_eq!(int(&mut con, &["lock.forcerelease", "k"]), 1);
}

// ---------------------------------------------------------------- LOCK.APPLY

#[test]
fn apply_from_a_client_is_refused_and_changes_nothing() {
    let server = Server::start();
    let mut con = server.conn();
    let before = keyspace(&mut con);
    expect_error(
        &mut con,
        &["LOCK.APPLY", "k", "me", "1", "7", "4102444800000"],
        "ERR LOCK.APPLY only replays a master's writes (replication stream or AOF)",
    );
    expect_error(
        &mut con,
        &["LOCK.APPLY", "k", "me", "0", "7", "4102444800000"],
        "ERR LOCK.APPLY needs key owner holds token unix-ms: holds > 0, token >= 0",
    );
    expect_error(
        &mut con,
        &["LOCK.APPLY", "k", "me", "1"],
        "ERR wrong number of arguments for 'lock.apply' command",
    );
    assert_eq!(keyspace(&mut con), before);
}
