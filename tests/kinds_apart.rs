//! Waits of several kinds on one key: each is ended only by an event of its own kind
//! (docs/guarantees.md). A latch at zero or gone releases the latch's waits alone; a lock,
//! read-write or semaphore wait queued on the same name stays queued and is served by its
//! own rules, never answered with the latch's `1`.

#[path = "tickets/receiver.rs"]
#[allow(dead_code)]
mod receiver;
mod support;

use std::time::Duration;

use receiver::{Queued, Receiver};
use redis::Value;
use support::{blocked, int, raw, wait_until, Server};

const LIMIT: Duration = Duration::from_secs(10);

fn queued(con: &mut redis::Connection, n: i64) {
    support::await_waiters(con, n, LIMIT);
}

/// `DEL key` and `LATCH.COUNTDOWN key` in one transaction.
fn delete_and_count_down(con: &mut redis::Connection, key: &str) {
    let (deleted, count): (i64, i64) = redis::pipe()
        .atomic()
        .cmd("DEL")
        .arg(key)
        .cmd("LATCH.COUNTDOWN")
        .arg(key)
        .query(con)
        .expect("MULTI");
    assert_eq!((deleted, count), (1, 0));
}

fn token_of(reply: Value) -> i64 {
    match reply {
        Value::Int(token) => token,
        other => panic!("expected a token, got {other:?}"),
    }
}

#[test]
fn a_latch_count_down_leaves_a_lock_waiter_queued_for_the_lock() {
    let server = Server::start();
    let mut con = server.conn();
    let first = int(&mut con, &["LOCK.ACQUIRE", "La", "x", "LEASE", "30000"]);
    let w = blocked(&server, &["LOCK.ACQUIRE", "La", "w", "WAIT", "20000"]);
    queued(&mut con, 1);
    delete_and_count_down(&mut con, "La");
    // The waiter is served by the lock's own rules: the key is free, it holds it.
    let token = token_of(w.recv_timeout(LIMIT).expect("the waiter is answered"));
    assert!(token > first, "token {token} after {first}");
    assert_eq!(
        raw(&mut con, &["LOCK.ACQUIRE", "La", "x", "LEASE", "30000"]),
        Value::Nil
    );
    assert_eq!(
        raw(&mut con, &["HGET", "La", "w"]),
        Value::BulkString(b"1".to_vec())
    );
}

#[test]
fn a_latch_count_down_leaves_a_writer_waiting_for_the_write_hold() {
    let server = Server::start();
    let mut con = server.conn();
    let args = ["RWLOCK.ACQUIRE", "La", "a", "WRITE", "LEASE", "30000"];
    let first = int(&mut con, &args);
    let w = blocked(
        &server,
        &["RWLOCK.ACQUIRE", "La", "w", "WRITE", "WAIT", "20000"],
    );
    queued(&mut con, 1);
    delete_and_count_down(&mut con, "La");
    let token = token_of(w.recv_timeout(LIMIT).expect("the writer is answered"));
    assert!(token > first, "token {token} after {first}");
    let second = ["RWLOCK.ACQUIRE", "La", "b", "WRITE", "LEASE", "30000"];
    assert_eq!(raw(&mut con, &second), Value::Nil);
}

#[test]
fn a_latch_count_down_never_answers_a_semaphore_wait() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["SEM.PERMITS", "La", "1"]);
    int(&mut con, &["SEM.ACQUIRE", "La", "a", "1", "LEASE", "30000"]);
    let w = blocked(&server, &["SEM.ACQUIRE", "La", "w", "1", "WAIT", "20000"]);
    queued(&mut con, 1);
    delete_and_count_down(&mut con, "La");
    // The semaphore is gone: its own command's answer, never the latch's 1.
    match w.recv_timeout(LIMIT).expect("the wait is answered") {
        Value::ServerError(e) => {
            let text = format!("{e:?}");
            assert!(text.contains("semaphore"), "{text}");
        }
        other => panic!("a semaphore wait answered {other:?}"),
    }
}

#[test]
fn a_latch_count_down_leaves_a_ticket_queued_for_the_lock() {
    let server = Server::start();
    let mut con = server.conn();
    let first = int(&mut con, &["LOCK.ACQUIRE", "La", "x", "LEASE", "30000"]);
    let mut r = Receiver::push(&server);
    let Queued::Queued(id) = r.wait("La", "w", &["WAIT", "20000"]) else {
        panic!("the ticket was not queued");
    };
    delete_and_count_down(&mut con, "La");
    let (got, outcome) = r.outcome();
    assert_eq!(got, id);
    let token: i64 = outcome.parse().expect("a token");
    assert!(token > first, "token {token} after {first}");
    assert_eq!(
        raw(&mut con, &["HGET", "La", "w"]),
        Value::BulkString(b"1".to_vec())
    );
}

#[test]
fn a_latch_wait_and_a_writer_on_one_name_are_each_served_by_their_own_kind() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LATCH.SET", "L", "1"]);
    let latch = blocked(&server, &["LATCH.AWAIT", "L", "WAIT", "20000"]);
    queued(&mut con, 1);
    // The latch goes and a writer takes the name before any check runs: the latch's wait
    // stays queued (the name is not a latch); a second writer queues behind it.
    let (_, first): (i64, i64) = redis::pipe()
        .atomic()
        .cmd("DEL")
        .arg("L")
        .cmd("RWLOCK.ACQUIRE")
        .arg(&["L", "a", "WRITE", "LEASE", "30000"])
        .query(&mut con)
        .expect("MULTI");
    let w = blocked(
        &server,
        &["RWLOCK.ACQUIRE", "L", "w", "WRITE", "WAIT", "20000"],
    );
    queued(&mut con, 2);
    // Deleting the name opens the latch for its wait and frees the write hold: the
    // writer is served by the read-write lock's rules, with a fresh token.
    int(&mut con, &["DEL", "L"]);
    assert_eq!(latch.recv_timeout(LIMIT).expect("released"), Value::Int(1));
    let token = token_of(w.recv_timeout(LIMIT).expect("the writer is answered"));
    assert!(token > first, "token {token} after {first}");
    let info = raw(&mut con, &["RWLOCK.INFO", "L"]);
    assert!(format!("{info:?}").contains('w'), "{info:?}");
}

#[test]
fn a_count_down_on_a_lock_name_held_back_by_the_gate_ends_no_lock_wait() {
    let master = Server::start();
    let replica = master.replica();
    let mut con = replica.conn();
    // Just promoted, with a failover delay: the gate holds every grant back, so the
    // waiter queues on a free key.
    let delay = ["CONFIG", "SET", "rlock.failover-delay", "1500"];
    assert_eq!(raw(&mut con, &delay), Value::Okay);
    assert_eq!(raw(&mut con, &["REPLICAOF", "NO", "ONE"]), Value::Okay);
    let w = blocked(&replica, &["LOCK.ACQUIRE", "La", "w", "WAIT", "20000"]);
    queued(&mut con, 1);
    assert_eq!(raw(&mut con, &["LATCH.COUNTDOWN", "La"]), Value::Int(0));
    assert!(
        w.recv_timeout(Duration::from_millis(300)).is_err(),
        "answered"
    );
    assert_eq!(support::waiters(&mut con), 1);
    // The delay over, the lock's own rules serve it.
    let token = token_of(w.recv_timeout(LIMIT).expect("the waiter is served"));
    assert!(token > 1, "token {token}");
    assert_eq!(
        raw(&mut con, &["HGET", "La", "w"]),
        Value::BulkString(b"1".to_vec())
    );
}

#[test]
fn an_evicted_key_refuses_its_lock_waits_and_releases_its_latch_waits() {
    let server = Server::start_with(&["--maxmemory-policy", "volatile-ttl"]);
    let mut con = server.conn();
    int(&mut con, &["LATCH.SET", "L", "1"]);
    let latch = blocked(&server, &["LATCH.AWAIT", "L", "WAIT", "20000"]);
    queued(&mut con, 1);
    // The name becomes a held lock (with a lease, so a key `volatile-ttl` evicts) before
    // any check runs; a lock waiter queues behind the latch's wait.
    let _: (i64, i64) = redis::pipe()
        .atomic()
        .cmd("DEL")
        .arg("L")
        .cmd("LOCK.ACQUIRE")
        .arg(&["L", "a", "LEASE", "60000"])
        .query(&mut con)
        .expect("MULTI");
    let w = blocked(&server, &["LOCK.ACQUIRE", "L", "w", "WAIT", "20000"]);
    queued(&mut con, 2);
    let used: i64 = support::info_field(&mut con, "memory", "used_memory")
        .and_then(|v| v.parse().ok())
        .expect("used_memory");
    let limit = (used - 100_000).to_string();
    assert_eq!(
        raw(&mut con, &["CONFIG", "SET", "maxmemory", &limit]),
        Value::Okay
    );
    // Each command makes Redis evict while memory is over the limit.
    let mut answers = (None, None);
    assert!(wait_until(LIMIT, || {
        raw(&mut con, &["PING"]);
        answers.0 = answers.0.take().or_else(|| latch.try_recv().ok());
        answers.1 = answers.1.take().or_else(|| w.try_recv().ok());
        answers.0.is_some() && answers.1.is_some()
    }));
    assert_eq!(
        raw(&mut con, &["CONFIG", "SET", "maxmemory", "0"]),
        Value::Okay
    );
    assert_eq!(answers.0, Some(Value::Int(1)));
    match answers.1 {
        Some(Value::ServerError(e)) => assert!(format!("{e:?}").contains("OOM"), "{e:?}"),
        other => panic!("the lock waiter of an evicted lock got {other:?}"),
    }
}
