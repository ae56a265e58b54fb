//! A wait on a lock with a queue reads the lock knowing whom it was last handed to. That
//! is only a shortcut: whatever the key holds by then (another owner's lock, a field edited
//! by hand, a hash that is no lock), a new acquisition is answered exactly as on a key with
//! the same fields and no queue.

mod support;

use std::sync::mpsc::Receiver;
use std::time::Duration;

use redis::Value;
use support::{blocked, int, raw, Server};

const LIMIT: Duration = Duration::from_secs(10);

fn queued(con: &mut redis::Connection, n: i64) {
    support::await_waiters(con, n, LIMIT);
}

/// `key` handed from `a` to `b`, with `c` still queued: the queue remembers `b`. Returns
/// `b`'s token and `c`'s wait (kept to the end of the test). `before`: waits queued on
/// other keys.
fn handed_to_b(
    server: &Server,
    con: &mut redis::Connection,
    key: &str,
    before: i64,
) -> (i64, Receiver<Value>) {
    int(con, &["LOCK.ACQUIRE", key, "a", "LEASE", "30000"]);
    let b = blocked(
        server,
        &["LOCK.ACQUIRE", key, "b", "LEASE", "30000", "WAIT", "20000"],
    );
    queued(con, before + 1);
    let c = blocked(
        server,
        &["LOCK.ACQUIRE", key, "c", "LEASE", "30000", "WAIT", "20000"],
    );
    queued(con, before + 2);
    assert_eq!(int(con, &["LOCK.RELEASE", key, "a"]), 0);
    let token = match b.recv_timeout(LIMIT) {
        Ok(Value::Int(t)) => t,
        other => panic!("b is handed the lock, got {other:?}"),
    };
    queued(con, before + 1);
    (token, c)
}

#[test]
fn a_new_acquisition_after_a_handoff_is_answered_as_on_a_key_without_a_queue() {
    let server = Server::start();
    let mut con = server.conn();
    // Edits of b's lock, made field by field (a key emptied by them would be deleted).
    let edits: [(&str, &[&[&str]]); 9] = [
        (
            "another owner's script lock",
            &[&["HSET", "K", "x", "1"], &["HDEL", "K", "b", "@token"]],
        ),
        ("a count that is no number", &[&["HSET", "K", "b", "abc"]]),
        (
            "a token that is no number",
            &[&["HSET", "K", "@token", "x"]],
        ),
        ("a third field", &[&["HSET", "K", "extra", "1"]]),
        ("a count of zero", &[&["HSET", "K", "b", "0"]]),
        ("a negative count", &[&["HSET", "K", "b", "-1"]]),
        ("a count with no token", &[&["HDEL", "K", "@token"]]),
        ("a token with no owner", &[&["HDEL", "K", "b"]]),
        ("b's own lock, untouched", &[]),
    ];
    let mut kept = Vec::new();
    for (i, (what, steps)) in edits.iter().enumerate() {
        let key = format!("handed:{i}");
        let copy = format!("copy:{i}");
        let before = support::waiters(&mut con);
        let (token, c) = handed_to_b(&server, &mut con, &key, before);
        for step in *steps {
            let step: Vec<&str> = step
                .iter()
                .map(|a| if *a == "K" { key.as_str() } else { *a })
                .collect();
            raw(&mut con, &step);
        }
        // The same fields on a key no one waits for.
        let fields = raw(&mut con, &["HGETALL", &key]);
        let Value::Array(fields) = fields else {
            panic!("{what}: HGETALL answered {fields:?}");
        };
        let mut hset = vec![b"HSET".to_vec(), copy.clone().into_bytes()];
        for f in fields {
            match f {
                Value::BulkString(b) => hset.push(b),
                other => panic!("{what}: a field {other:?}"),
            }
        }
        raw(&mut con, &hset);
        let before = raw(&mut con, &["HGETALL", &key]);
        let here = raw(&mut con, &["LOCK.ACQUIRE", &key, "d", "LEASE", "30000"]);
        let there = raw(&mut con, &["LOCK.ACQUIRE", &copy, "d", "LEASE", "30000"]);
        match (&here, &there) {
            // A key that reads as free is the queue's first (c's), not a newcomer's.
            (Value::Nil, Value::Int(_)) => {}
            (Value::ServerError(a), Value::ServerError(b)) => {
                assert_eq!(a.code(), b.code(), "{what}: {here:?} against {there:?}");
            }
            _ => assert_eq!(here, there, "{what}"),
        }
        if !matches!(there, Value::Int(_)) {
            // Not free: the key is left as it was, and the queue waits on.
            assert_eq!(raw(&mut con, &["HGETALL", &key]), before, "{what}");
            assert!(c.try_recv().is_err(), "{what}: c was answered");
        }
        kept.push(c);
        if steps.is_empty() {
            assert_eq!(here, Value::Nil, "b holds the lock");
            assert_eq!(
                raw(&mut con, &["HGET", &key, "@token"]),
                Value::BulkString(token.to_string().into_bytes())
            );
        }
    }
}
