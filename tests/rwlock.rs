//! The read-write lock (`RWLOCK.*`; docs/commands/rwlock.acquire.md): many readers or one
//! writer, each holder reentrant with its own token and lease, one FIFO for both modes in
//! which a queued writer stops later readers and the readers at the head are granted
//! together.

#[path = "rwlock/info.rs"]
mod info;
mod support;

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use info::{holders, queue_modes, rw_info, waiters, Holder};
use redis::Value;
use support::{expect_error, expect_nil, hgetall, int, raw, wait_until, Server};

const LIMIT: Duration = Duration::from_secs(10);

/// A blocking `RWLOCK.ACQUIRE key owner mode WAIT 20000` on a connection of its own; its
/// reply arrives on the returned channel.
fn waiter(server: &Server, key: &str, owner: &str, mode: &str) -> mpsc::Receiver<Value> {
    let mut con = server.conn();
    let args: Vec<String> = ["RWLOCK.ACQUIRE", key, owner, mode, "WAIT", "20000"]
        .map(str::to_owned)
        .to_vec();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(raw(&mut con, &args));
        // Kept open: a closed connection would leave its queue or give its grant back.
        thread::sleep(Duration::from_secs(30));
    });
    rx
}

/// Waits until `n` waits are queued on `key`.
fn queued(con: &mut redis::Connection, key: &str, n: i64) {
    assert!(
        wait_until(LIMIT, || waiters(con, key) == n),
        "hung: {n} waiters never queued on {key}"
    );
}

fn granted(rx: &mpsc::Receiver<Value>) -> i64 {
    match rx.recv_timeout(LIMIT) {
        Ok(Value::Int(token)) => token,
        other => panic!("expected a token, got {other:?}"),
    }
}

fn still_waiting(rx: &mpsc::Receiver<Value>) {
    assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
}

#[test]
fn readers_share_a_writer_excludes_and_a_reader_cannot_upgrade() {
    let server = Server::start();
    let mut con = server.conn();
    let a = int(&mut con, &["RWLOCK.ACQUIRE", "k", "a", "READ"]);
    let b = int(&mut con, &["RWLOCK.ACQUIRE", "k", "b", "read"]);
    assert!(b > a, "tokens go up: {a} then {b}");
    expect_nil(&mut con, &["RWLOCK.ACQUIRE", "k", "c", "WRITE"]);
    expect_error(
        &mut con,
        &["RWLOCK.ACQUIRE", "k", "a", "WRITE", "WAIT", "100"],
        "ERR rlock: 'a' holds only read holds of this lock; release them before asking for a write hold (an upgrade deadlocks as soon as two readers try it)",
    );
    let info = rw_info(&mut con, "k");
    assert_eq!(info.mode, "read");
    assert_eq!(
        holders(&info),
        vec![("a".into(), 1, 0, a), ("b".into(), 1, 0, b)]
    );
    assert_eq!(int(&mut con, &["RWLOCK.RELEASE", "k", "a", "READ"]), 0);
    assert_eq!(int(&mut con, &["RWLOCK.RELEASE", "k", "b", "READ"]), 0);
    assert_eq!(raw(&mut con, &["EXISTS", "k"]), Value::Int(0));
    let w = int(&mut con, &["RWLOCK.ACQUIRE", "k", "c", "WRITE"]);
    assert!(w > b);
    expect_nil(&mut con, &["RWLOCK.ACQUIRE", "k", "a", "READ"]);
    expect_nil(&mut con, &["RWLOCK.ACQUIRE", "k", "d", "WRITE"]);
}

#[test]
fn the_writer_reenters_reads_and_downgrades_keeping_its_token() {
    let server = Server::start();
    let mut con = server.conn();
    let t = int(&mut con, &["RWLOCK.ACQUIRE", "k", "w", "WRITE"]);
    assert_eq!(int(&mut con, &["RWLOCK.ACQUIRE", "k", "w", "WRITE"]), t);
    assert_eq!(int(&mut con, &["RWLOCK.ACQUIRE", "k", "w", "READ"]), t);
    let info = rw_info(&mut con, "k");
    assert_eq!(
        (info.mode.as_str(), holders(&info)),
        ("write", vec![("w".into(), 1, 2, t)])
    );
    assert_eq!(int(&mut con, &["RWLOCK.RELEASE", "k", "w", "WRITE"]), 1);
    expect_nil(&mut con, &["RWLOCK.ACQUIRE", "k", "r", "READ"]);
    assert_eq!(int(&mut con, &["RWLOCK.RELEASE", "k", "w", "WRITE"]), 0);
    // Downgraded: a reader joins at once.
    let info = rw_info(&mut con, "k");
    assert_eq!(
        (info.mode.as_str(), holders(&info)),
        ("read", vec![("w".into(), 1, 0, t)])
    );
    let r = int(&mut con, &["RWLOCK.ACQUIRE", "k", "r", "READ"]);
    assert!(r > t);
    expect_error(
        &mut con,
        &["RWLOCK.RELEASE", "k", "w", "WRITE"],
        "NOTHELD lock 'k' is not held by 'w'",
    );
    expect_error(
        &mut con,
        &["RWLOCK.RELEASE", "k", "w", "READ", "TOKEN", &r.to_string()],
        "NOTHELD lock 'k' is not held by 'w'",
    );
    assert_eq!(
        int(
            &mut con,
            &["RWLOCK.RELEASE", "k", "w", "READ", "TOKEN", &t.to_string()]
        ),
        0
    );
}

#[test]
fn a_queued_writer_is_not_overtaken_and_the_readers_at_the_head_come_in_together() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["RWLOCK.ACQUIRE", "k", "r0", "READ"]);
    let w1 = waiter(&server, "k", "w1", "WRITE");
    queued(&mut con, "k", 1);
    // A reader coming after the queued writer waits behind it.
    expect_nil(&mut con, &["RWLOCK.ACQUIRE", "k", "late", "READ"]);
    // Queued one after the other, so that their order is known.
    let readers: Vec<_> = ["r1", "r2", "r3"]
        .iter()
        .zip(2..)
        .map(|(r, n)| {
            let rx = waiter(&server, "k", r, "READ");
            queued(&mut con, "k", n);
            rx
        })
        .collect();
    let w2 = waiter(&server, "k", "w2", "WRITE");
    queued(&mut con, "k", 5);
    let r4 = waiter(&server, "k", "r4", "READ");
    queued(&mut con, "k", 6);
    assert_eq!(
        queue_modes(&rw_info(&mut con, "k")),
        vec!["write", "read", "read", "read", "write", "read"]
    );
    // The reader already in may reenter past the queue.
    int(&mut con, &["RWLOCK.ACQUIRE", "k", "r0", "READ"]);
    int(&mut con, &["RWLOCK.RELEASE", "k", "r0", "READ"]);
    still_waiting(&w1);
    int(&mut con, &["RWLOCK.RELEASE", "k", "r0", "READ"]);
    let t1 = granted(&w1);
    still_waiting(&readers[0]);
    int(&mut con, &["RWLOCK.RELEASE", "k", "w1", "WRITE"]);
    let tokens: Vec<i64> = readers.iter().map(granted).collect();
    assert!(tokens.windows(2).all(|w| w[0] < w[1]) && tokens[0] > t1);
    still_waiting(&w2);
    still_waiting(&r4);
    assert_eq!(holders(&rw_info(&mut con, "k")).len(), 3);
    for r in ["r1", "r2", "r3"] {
        int(&mut con, &["RWLOCK.RELEASE", "k", r, "READ"]);
    }
    let t2 = granted(&w2);
    assert!(t2 > tokens[2]);
    still_waiting(&r4);
    int(&mut con, &["RWLOCK.RELEASE", "k", "w2", "WRITE"]);
    assert!(granted(&r4) > t2);
}

#[test]
fn a_writer_is_not_starved_by_a_stream_of_readers() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["RWLOCK.ACQUIRE", "k", "r0", "READ"]);
    let w = waiter(&server, "k", "w", "WRITE");
    queued(&mut con, "k", 1);
    // Readers keep coming and going; none gets in ahead of the writer.
    for i in 0..200 {
        let owner = format!("n{i}");
        expect_nil(&mut con, &["RWLOCK.ACQUIRE", "k", &owner, "READ"]);
    }
    int(&mut con, &["RWLOCK.RELEASE", "k", "r0", "READ"]);
    granted(&w);
}

#[test]
fn each_holder_has_its_own_lease_and_a_dead_readers_lease_ends_alone() {
    let server = Server::start();
    let mut con = server.conn();
    int(
        &mut con,
        &["RWLOCK.ACQUIRE", "k", "dead", "READ", "LEASE", "400"],
    );
    int(
        &mut con,
        &["RWLOCK.ACQUIRE", "k", "live", "READ", "LEASE", "30000"],
    );
    let ttl = support::pttl(&mut con, b"k");
    assert!(
        ttl > 29_000,
        "the key's TTL covers the longest lease: {ttl}"
    );
    let w = waiter(&server, "k", "w", "WRITE");
    queued(&mut con, "k", 1);
    // The dead reader's lease ends by itself; the live one holds on, renewed.
    assert!(wait_until(LIMIT, || holders(&rw_info(&mut con, "k")).len() == 1));
    assert_eq!(holders(&rw_info(&mut con, "k"))[0].0, "live");
    assert_eq!(
        int(&mut con, &["RWLOCK.RENEW", "k", "live", "LEASE", "30000"]),
        1
    );
    assert_eq!(int(&mut con, &["RWLOCK.RENEW", "k", "dead"]), 0);
    still_waiting(&w);
    int(&mut con, &["RWLOCK.RELEASE", "k", "live", "READ"]);
    granted(&w);
}

#[test]
fn a_queued_writer_gets_the_lock_at_the_last_readers_deadline() {
    let server = Server::start();
    let mut con = server.conn();
    int(
        &mut con,
        &["RWLOCK.ACQUIRE", "k", "r1", "READ", "LEASE", "300"],
    );
    int(
        &mut con,
        &["RWLOCK.ACQUIRE", "k", "r2", "READ", "LEASE", "600"],
    );
    let fields = hgetall(&mut con, b"k");
    let deadline = support::text_of(&Value::BulkString(fields[&b"@h:r2"[..]].clone()))
        .and_then(|m| m.split(' ').nth(1)?.parse::<i64>().ok())
        .expect("r2's lease deadline");
    let w = waiter(&server, "k", "w", "WRITE");
    queued(&mut con, "k", 1);
    let token = granted(&w);
    // A fresh token is the server's clock in microseconds when it was issued.
    let late_us = token - deadline * 1000;
    println!("the writer got the lock {late_us} µs after the last reader's deadline");
    assert!(late_us >= 0, "granted before the deadline: {late_us} µs");
    assert!(
        late_us < 1_000_000,
        "granted {late_us} µs after the deadline"
    );
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "plain", "a"]);
    int(&mut con, &["RWLOCK.ACQUIRE", "rw", "a", "READ"]);
    let before = support::keyspace(&mut con);
    let cases: &[(&[&str], &str)] = &[
        (&["RWLOCK.ACQUIRE", "rw", "b", "SHARED"], "ERR unknown mode 'SHARED', expected READ or WRITE"),
        (&["RWLOCK.ACQUIRE", "rw", "b:write", "READ"], "ERR invalid owner: must not end with ':write'"),
        (&["RWLOCK.ACQUIRE", "rw", "@b", "READ"], "ERR invalid owner: must not start with '@'"),
        (&["RWLOCK.ACQUIRE", "rw", "b"], "ERR wrong number of arguments for 'rwlock.acquire' command"),
        (&["RWLOCK.ACQUIRE", "rw", "b", "READ", "LEASE", "0"], "ERR LEASE must be a positive integer"),
        (&["RWLOCK.ACQUIRE", "plain", "b", "READ"], "WRONGTYPE key is not a read-write lock"),
        (&["LOCK.ACQUIRE", "rw", "b"], "WRONGTYPE key is not a lock"),
        (&["RWLOCK.RELEASE", "plain", "a", "WRITE"], "WRONGTYPE key is not a read-write lock"),
        (&["RWLOCK.RELEASE", "rw", "b", "READ"], "NOTHELD lock 'rw' is not held by 'b'"),
        (&["RWLOCK.APPLY", "rw", "b", "1", "0", "5", "4102444800000"], "ERR RWLOCK.APPLY only replays a master's writes (replication stream or AOF)"),
        (&["RWLOCK.APPLY", "rw", "b", "-1", "0", "5", "1"], "ERR RWLOCK.APPLY needs key owner reads writes token unix-ms: reads, writes and token >= 0"),
        (&["LOCK.FENCED", "rw", "a", "1", "SET", "{rw}x", "1"], "NOTHELD lock 'rw' is not held for writing by 'a'"),
    ];
    for (args, error) in cases {
        expect_error(&mut con, args, error);
    }
    raw(&mut con, &["SET", "str", "x"]);
    expect_error(
        &mut con,
        &["RWLOCK.ACQUIRE", "str", "a", "READ"],
        "WRONGTYPE Operation against a key holding the wrong kind of value",
    );
    raw(&mut con, &["DEL", "str"]);
    assert_eq!(support::keyspace(&mut con), before);
}

#[test]
fn the_writer_writes_through_the_fence_with_its_token() {
    let server = Server::start();
    let mut con = server.conn();
    let t = int(&mut con, &["RWLOCK.ACQUIRE", "rw", "w", "WRITE"]);
    let ok = raw(
        &mut con,
        &["LOCK.FENCED", "rw", "w", &t.to_string(), "SET", "x", "1"],
    );
    assert_eq!(ok, Value::Okay);
    expect_error(
        &mut con,
        &[
            "LOCK.FENCED",
            "rw",
            "other",
            &t.to_string(),
            "SET",
            "x",
            "2",
        ],
        "NOTHELD lock 'rw' is not held by 'other'",
    );
    int(&mut con, &["RWLOCK.RELEASE", "rw", "w", "WRITE"]);
    expect_error(
        &mut con,
        &["LOCK.FENCED", "rw", "w", &t.to_string(), "SET", "x", "3"],
        "NOTHELD lock 'rw' is not held by 'w'",
    );
    assert_eq!(
        raw(&mut con, &["GET", "x"]),
        Value::BulkString(b"1".to_vec())
    );
}

#[test]
fn a_wait_that_runs_out_gets_nil_and_a_closed_waiter_leaves_the_queue() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["RWLOCK.ACQUIRE", "k", "w", "WRITE"]);
    expect_nil(
        &mut con,
        &["RWLOCK.ACQUIRE", "k", "r", "READ", "WAIT", "50"],
    );
    assert_eq!(waiters(&mut con, "k"), 0);
    // A reader's blocking wait, then its connection closes before the release.
    let mut closing = server.conn();
    closing
        .send_packed_command(
            &redis::cmd("RWLOCK.ACQUIRE")
                .arg(&["k", "c", "READ", "WAIT", "0"])
                .get_packed_command(),
        )
        .unwrap();
    queued(&mut con, "k", 1);
    drop(closing);
    queued(&mut con, "k", 0);
    int(&mut con, &["RWLOCK.RELEASE", "k", "w", "WRITE"]);
    assert_eq!(raw(&mut con, &["EXISTS", "k"]), Value::Int(0));
}

#[test]
fn the_hash_is_redissons_layout_with_mode_write_for_redisson_clients() {
    let server = Server::start();
    let mut con = server.conn();
    let t = int(&mut con, &["RWLOCK.ACQUIRE", "k", "r", "READ"]);
    let fields = hgetall(&mut con, b"k");
    let keys: Vec<&[u8]> = fields.keys().map(Vec::as_slice).collect();
    assert_eq!(keys, vec![&b"@h:r"[..], b"mode", b"r"]);
    assert_eq!(fields[&b"mode"[..]], b"write");
    assert_eq!(fields[&b"r"[..]], b"1");
    assert!(String::from_utf8_lossy(&fields[&b"@h:r"[..]]).starts_with(&format!("{t} ")));
    let t2 = int(&mut con, &["RWLOCK.ACQUIRE", "k2", "w", "WRITE"]);
    let fields = hgetall(&mut con, b"k2");
    assert_eq!(fields[&b"w:write"[..]], b"1");
    let _: Holder = holders(&rw_info(&mut con, "k2"))[0].clone();
    assert_eq!(holders(&rw_info(&mut con, "k2"))[0].3, t2);
}
