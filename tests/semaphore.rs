//! The semaphore (`SEM.*`; docs/commands/sem.acquire.md): a total of permits shared by
//! holders, each with its own token and lease, one FIFO queue served in order without
//! barging (a large request at the head is served first; smaller ones behind it wait).

#[allow(dead_code)]
#[path = "semaphore/client.rs"]
mod client;
mod support;

use std::time::{Duration, Instant};

use client::{granted, held, queued, sem_info, waiter};
use redis::Value;
use support::{expect_error, expect_nil, hgetall, int, raw, Server};

#[test]
fn permits_are_shared_until_exhausted_and_released_some_or_all() {
    let server = Server::start();
    let mut con = server.conn();
    assert_eq!(int(&mut con, &["SEM.PERMITS", "s", "3"]), 3);
    let a = int(&mut con, &["SEM.ACQUIRE", "s", "a", "2"]);
    let b = int(&mut con, &["SEM.ACQUIRE", "s", "b", "1"]);
    assert!(b > a, "tokens go up: {a} then {b}");
    expect_nil(&mut con, &["SEM.ACQUIRE", "s", "c", "1"]);
    let info = sem_info(&mut con, "s").unwrap();
    assert_eq!((info.total, info.available), (3, 0));
    assert_eq!(held(&mut con, "s"), vec![("a".into(), 2), ("b".into(), 1)]);
    assert_eq!(int(&mut con, &["SEM.RELEASE", "s", "a", "1"]), 1);
    expect_error(
        &mut con,
        &["SEM.RELEASE", "s", "a", "2"],
        "NOTHELD lock 's' is not held by 'a'",
    );
    expect_error(
        &mut con,
        &["SEM.RELEASE", "s", "b", "TOKEN", &a.to_string()],
        "NOTHELD lock 's' is not held by 'b'",
    );
    assert_eq!(
        int(
            &mut con,
            &["SEM.RELEASE", "s", "b", "TOKEN", &b.to_string()]
        ),
        0
    );
    assert!(int(&mut con, &["SEM.ACQUIRE", "s", "c", "2"]) > b);
    assert_eq!(int(&mut con, &["SEM.RELEASE", "s", "a"]), 0);
    let fields = hgetall(&mut con, b"s");
    assert_eq!(
        fields.get(&b"@used"[..]).map(Vec::as_slice),
        Some(&b"2"[..])
    );
    assert_eq!(
        fields.get(&b"permits"[..]).map(Vec::as_slice),
        Some(&b"3"[..])
    );
    assert_eq!(
        raw(&mut con, &["PTTL", "s"]),
        Value::Int(-1),
        "no TTL on the key"
    );
}

#[test]
fn a_holder_adds_permits_keeping_its_token_and_more_than_the_total_is_refused() {
    let server = Server::start();
    let mut con = server.conn();
    expect_error(
        &mut con,
        &["SEM.ACQUIRE", "none", "a", "1"],
        "ERR rlock: asks for 1 permits; the semaphore has 0",
    );
    int(&mut con, &["SEM.PERMITS", "s", "4"]);
    let t = int(&mut con, &["SEM.ACQUIRE", "s", "a", "1"]);
    assert_eq!(
        int(&mut con, &["SEM.ACQUIRE", "s", "a", "2", "LEASE", "5000"]),
        t
    );
    assert_eq!(held(&mut con, "s"), vec![("a".into(), 3)]);
    expect_nil(&mut con, &["SEM.ACQUIRE", "s", "a", "2"]);
    expect_error(
        &mut con,
        &["SEM.ACQUIRE", "s", "a", "5", "WAIT", "100"],
        "ERR rlock: asks for 5 permits; the semaphore has 4",
    );
    assert_eq!(int(&mut con, &["SEM.RENEW", "s", "a", "LEASE", "60000"]), 1);
    assert_eq!(int(&mut con, &["SEM.RENEW", "s", "b"]), 0);
    let ttl = sem_info(&mut con, "s").unwrap().holders[0].2;
    assert!(ttl > 50_000, "renewed lease: {ttl}");
}

#[test]
fn raising_the_total_serves_waiters_and_lowering_it_takes_nothing_back() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["SEM.PERMITS", "s", "2"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "a", "2"]);
    let w = waiter(&server, "s", "w", 2);
    queued(&mut con, "s", 1);
    assert_eq!(int(&mut con, &["SEM.PERMITS", "s", "4"]), 4);
    granted(&w);
    assert_eq!(int(&mut con, &["SEM.PERMITS", "s", "1"]), 1);
    assert_eq!(held(&mut con, "s"), vec![("a".into(), 2), ("w".into(), 2)]);
    assert_eq!(sem_info(&mut con, "s").unwrap().available, 0);
    int(&mut con, &["SEM.RELEASE", "s", "a"]);
    expect_nil(&mut con, &["SEM.ACQUIRE", "s", "b", "1"]);
    int(&mut con, &["SEM.RELEASE", "s", "w"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "b", "1"]);
}

#[test]
fn a_killed_holders_lease_ends_alone_and_its_permits_go_to_the_queue_at_once() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["SEM.PERMITS", "s", "3"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "dead", "2", "LEASE", "300"]);
    int(
        &mut con,
        &["SEM.ACQUIRE", "s", "alive", "1", "LEASE", "60000"],
    );
    let dead_end = lease_end(&mut con, "s", "dead");
    let w = waiter(&server, "s", "w", 2);
    queued(&mut con, "s", 1);
    let start = Instant::now();
    granted(&w);
    let took = start.elapsed();
    // Handed on by the module's timer at the lease end, not by a later command.
    assert!(took < Duration::from_millis(2000), "took {took:?}");
    let w_end = lease_end(&mut con, "s", "w");
    let default_lease = 30_000;
    println!(
        "granted {} ms after the dead holder's lease end",
        w_end - default_lease - dead_end
    );
    assert_eq!(
        held(&mut con, "s"),
        vec![("alive".into(), 1), ("w".into(), 2)]
    );
    let info = support::info(&mut con, "rlock");
    assert!(info["rlock_expiry_handoffs"].parse::<i64>().unwrap() >= 1);
}

#[test]
fn a_lapsed_holder_without_waiters_is_taken_out_by_the_next_command() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["SEM.PERMITS", "s", "1"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "a", "1", "LEASE", "50"]);
    std::thread::sleep(Duration::from_millis(80));
    assert_eq!(sem_info(&mut con, "s").unwrap().available, 1);
    int(&mut con, &["SEM.ACQUIRE", "s", "b", "1"]);
    assert_eq!(held(&mut con, "s"), vec![("b".into(), 1)]);
    assert_eq!(int(&mut con, &["SEM.RENEW", "s", "a"]), 0);
}

#[test]
fn force_release_ends_every_holding_keeps_the_total_and_serves_the_queue() {
    let server = Server::start();
    let mut con = server.conn();
    assert_eq!(int(&mut con, &["SEM.FORCERELEASE", "s"]), 0);
    int(&mut con, &["SEM.PERMITS", "s", "2"]);
    assert_eq!(int(&mut con, &["SEM.FORCERELEASE", "s"]), 0);
    int(&mut con, &["SEM.ACQUIRE", "s", "a", "1"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "b", "1"]);
    let w = waiter(&server, "s", "w", 2);
    queued(&mut con, "s", 1);
    assert_eq!(int(&mut con, &["SEM.FORCERELEASE", "s"]), 1);
    granted(&w);
    let info = sem_info(&mut con, "s").unwrap();
    assert_eq!((info.total, info.available), (2, 0));
    assert_eq!(held(&mut con, "s"), vec![("w".into(), 2)]);
    let stats = support::info(&mut con, "rlock");
    assert_eq!(stats["rlock_sem_holdings"], "3");
    assert_eq!(stats["rlock_sem_permits_granted"], "4");
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["SEM.PERMITS", "s", "2"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "a", "1"]);
    let before = hgetall(&mut con, b"s");
    let permits = "ERR permits must be an integer from 1 to 2147483647";
    let total = "ERR the total of permits must be an integer from 0 to 2147483647";
    let cases: &[(&[&str], &str)] = &[
        (&["SEM.ACQUIRE", "s", "b", "0"], permits),
        (&["SEM.ACQUIRE", "s", "b", "x"], permits),
        (&["SEM.ACQUIRE", "s", "b", "2147483648"], permits),
        (
            &["SEM.ACQUIRE", "s", "@b", "1"],
            "ERR invalid owner: must not start with '@'",
        ),
        (
            &["SEM.ACQUIRE", "s", "b", "1", "LEASE", "0"],
            "ERR LEASE must be a positive integer",
        ),
        (&["SEM.RELEASE", "s", "a", "-1"], permits),
        (&["SEM.PERMITS", "s", "-1"], total),
        (&["SEM.PERMITS", "s", "2147483648"], total),
        (
            &["SEM.APPLY", "s", "a", "0", "1", "1"],
            "ERR SEM.APPLY only replays a master's writes (replication stream or AOF)",
        ),
        (
            &["SEM.ACQUIRE", "s"],
            "ERR wrong number of arguments for 'sem.acquire' command",
        ),
    ];
    for (args, expected) in cases {
        let reply = raw(&mut con, args);
        let text = support::error_text(&reply).unwrap_or_default();
        assert!(
            text.starts_with(&expected[..expected.len().min(20)]),
            "{args:?}: {text}"
        );
    }
    assert_eq!(hgetall(&mut con, b"s"), before);
    raw(&mut con, &["SET", "str", "1"]);
    expect_error(
        &mut con,
        &["SEM.ACQUIRE", "str", "a", "1"],
        "WRONGTYPE key is not a semaphore",
    );
    int(&mut con, &["LOCK.ACQUIRE", "lock", "a"]);
    expect_error(
        &mut con,
        &["SEM.PERMITS", "lock", "3"],
        "WRONGTYPE key is not a semaphore",
    );
    expect_error(
        &mut con,
        &["SEM.INFO", "lock"],
        "WRONGTYPE key is not a semaphore",
    );
    expect_error(
        &mut con,
        &["LOCK.FENCED", "s", "a", "1", "SET", "x", "1"],
        "WRONGTYPE key is not a lock",
    );
}

#[test]
fn holders_are_capped_at_1024_and_a_newcomer_beyond_them_waits() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["SEM.PERMITS", "s", "5000"]);
    let mut pipe = redis::pipe();
    for i in 0..1024 {
        pipe.cmd("SEM.ACQUIRE").arg("s").arg(format!("o{i}")).arg(1);
    }
    let tokens: Vec<i64> = pipe.query(&mut con).expect("1024 acquisitions");
    assert_eq!(tokens.len(), 1024);
    expect_nil(&mut con, &["SEM.ACQUIRE", "s", "late", "1"]);
    assert!(int(&mut con, &["SEM.ACQUIRE", "s", "o7", "1"]) > 0);
    let info = sem_info(&mut con, "s").unwrap();
    assert_eq!((info.holders.len(), info.available), (1024, 5000 - 1025));
    int(&mut con, &["SEM.RELEASE", "s", "o0"]);
    assert!(int(&mut con, &["SEM.ACQUIRE", "s", "late", "1"]) > 0);
}

/// The lease end of `owner`'s holding, from its `@h:` field.
fn lease_end(con: &mut redis::Connection, key: &str, owner: &str) -> i64 {
    let meta = support::hget(con, key, &format!("@h:{owner}")).expect("a holder");
    meta.split(' ')
        .nth(1)
        .and_then(|d| d.parse().ok())
        .expect("a lease end")
}

#[test]
fn next_is_never_after_a_lease_end_and_is_settled_by_a_whole_read() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["SEM.PERMITS", "s", "2"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "a", "1", "LEASE", "100"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "b", "1", "LEASE", "60000"]);
    let next = |con: &mut redis::Connection| {
        support::hget(con, "s", "@next").and_then(|n| n.parse::<i64>().ok())
    };
    assert_eq!(next(&mut con), Some(lease_end(&mut con, "s", "a")));
    int(&mut con, &["SEM.RELEASE", "s", "a"]);
    std::thread::sleep(Duration::from_millis(150));
    // Too few permits, and `@next` is past: the whole hash is read, and `@next` settled.
    expect_nil(&mut con, &["SEM.ACQUIRE", "s", "c", "2"]);
    assert_eq!(next(&mut con), Some(lease_end(&mut con, "s", "b")));
    int(&mut con, &["SEM.RELEASE", "s", "b"]);
    assert_eq!(next(&mut con), None, "nobody holds");
}

#[test]
fn force_release_of_ended_holdings_only_answers_0_and_cleans_them_up() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["SEM.PERMITS", "s", "2"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "a", "1", "LEASE", "100"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "b", "1", "LEASE", "100"]);
    std::thread::sleep(Duration::from_millis(250));
    assert!(
        hgetall(&mut con, b"s").contains_key(&b"a"[..]),
        "not yet read"
    );
    assert_eq!(int(&mut con, &["SEM.FORCERELEASE", "s"]), 0);
    let left = hgetall(&mut con, b"s");
    assert_eq!(
        left,
        support::hash_of(&[(b"permits", b"2"), (b"@used", b"0")])
    );
    int(&mut con, &["SEM.ACQUIRE", "s", "c", "1", "LEASE", "100000"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "d", "1", "LEASE", "100"]);
    std::thread::sleep(Duration::from_millis(250));
    assert_eq!(int(&mut con, &["SEM.FORCERELEASE", "s"]), 1, "c still held");
}
