//! Owner names that are the fixed fields of a layout (`mode` of the read-write lock,
//! `permits` of the semaphore, and every field starting with `@`) are refused by every
//! command that takes an owner, whatever the key holds, and the refusal changes nothing:
//! an owner stored as one of them would make two fields one and break the key for every
//! client (docs/guarantees.md).

mod support;

#[path = "support/redisson_rwlock.rs"]
mod redisson;

#[path = "semaphore/client.rs"]
#[allow(dead_code)]
mod client;

use redis::{ConnectionLike, Value};
use support::{expect_error, expect_nil, hget, int, keyspace, raw, Server};

/// The text every reserved name gets.
const RESERVED: &str = "ERR invalid owner: must not be 'mode' or 'permits'";
/// The text every name starting with `@` gets.
const AT: &str = "ERR invalid owner: must not start with '@'";

/// Every command that takes an owner, with `O` for the owner, on a key of its own kind.
fn owner_commands() -> Vec<Vec<&'static str>> {
    let far = "99999999999999";
    let cases: [&[&str]; 24] = [
        &["LOCK.ACQUIRE", "lk", "O"],
        &["LOCK.ACQUIRE", "fresh", "O", "LEASE", "1000", "WAIT", "5"],
        &["LOCK.WAIT", "lk", "O", "TO", "1"],
        &["LOCK.RELEASE", "lk", "O"],
        &["LOCK.RELEASE", "lk", "O", "TOKEN", "1"],
        &["LOCK.RENEW", "lk", "O"],
        &["LOCK.RAISE", "lk", "O", "1", "1"],
        &["LOCK.FENCED", "lk", "O", "1", "SET", "lk-data", "1"],
        &["LOCK.APPLY", "lk", "O", "1", "1", far],
        &["RWLOCK.ACQUIRE", "rw", "O", "READ"],
        &["RWLOCK.ACQUIRE", "fresh", "O", "WRITE"],
        &["RWLOCK.WAIT", "rw", "O", "WRITE", "TO", "1"],
        &["RWLOCK.RELEASE", "rw", "O", "READ"],
        &["RWLOCK.RELEASE", "rw", "O", "WRITE", "TOKEN", "1"],
        &["RWLOCK.RENEW", "rw", "O"],
        &["RWLOCK.APPLY", "rw", "O", "1", "0", "1", far],
        &["SEM.ACQUIRE", "sem", "O", "1"],
        &["SEM.ACQUIRE", "fresh", "O", "1", "LEASE", "1000"],
        &["SEM.WAIT", "sem", "O", "1", "TO", "1"],
        &["SEM.RELEASE", "sem", "O"],
        &["SEM.RELEASE", "sem", "O", "1", "TOKEN", "1"],
        &["SEM.RENEW", "sem", "O"],
        &["SEM.APPLY", "sem", "O", "1", "1", far],
        &["SEM.APPLY", "sem", "O", "0", "1", far],
    ];
    cases.iter().map(|c| c.to_vec()).collect()
}

/// A plain lock, a read-write lock and a semaphore, each held by `x`.
fn three_kinds(con: &mut redis::Connection) {
    int(con, &["LOCK.ACQUIRE", "lk", "x", "LEASE", "60000"]);
    int(
        con,
        &["RWLOCK.ACQUIRE", "rw", "x", "READ", "LEASE", "60000"],
    );
    int(con, &["SEM.PERMITS", "sem", "2"]);
    int(con, &["SEM.ACQUIRE", "sem", "x", "1", "LEASE", "60000"]);
}

fn with_owner(args: &[&'static str], owner: &str) -> Vec<String> {
    let swap = |a: &&str| if *a == "O" { owner } else { a }.to_owned();
    args.iter().map(swap).collect()
}

#[test]
fn every_reserved_name_is_refused_by_every_command_and_changes_nothing() {
    let server = Server::start();
    let mut con = server.conn();
    three_kinds(&mut con);
    let before = keyspace(&mut con);
    let names = [
        ("mode", RESERVED),
        ("permits", RESERVED),
        ("@used", AT),
        ("@next", AT),
        ("@token", AT),
        ("@w", AT),
        ("@h:x", AT),
    ];
    for (owner, text) in names {
        for args in owner_commands() {
            expect_error(&mut con, &with_owner(&args, owner), text);
        }
    }
    assert_eq!(keyspace(&mut con), before, "a refused owner changed a key");
}

#[test]
fn names_that_only_look_like_reserved_ones_are_owners() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["SEM.PERMITS", "s", "6"]);
    for owner in ["Mode", "PERMITS", "modes", "permits:1", "a@used", "mode:1"] {
        assert!(
            int(&mut con, &["SEM.ACQUIRE", "s", owner, "1"]) > 0,
            "{owner}"
        );
        assert!(
            int(&mut con, &["LOCK.ACQUIRE", owner, owner]) > 0,
            "{owner}"
        );
        let rw = format!("rw-{owner}");
        assert!(int(&mut con, &["RWLOCK.ACQUIRE", &rw, owner, "READ"]) > 0);
    }
    assert_eq!(
        client::sem_info(&mut con, "s").map(|i| i.available),
        Some(0)
    );
}

#[test]
fn a_semaphore_never_holds_more_permits_than_its_total() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["SEM.PERMITS", "pool", "2"]);
    int(&mut con, &["SEM.ACQUIRE", "pool", "a", "1"]);
    expect_error(&mut con, &["SEM.ACQUIRE", "pool", "permits", "1"], RESERVED);
    int(&mut con, &["SEM.ACQUIRE", "pool", "b", "1"]);
    expect_nil(&mut con, &["SEM.ACQUIRE", "pool", "c", "1"]);
    let info = client::sem_info(&mut con, "pool").expect("a semaphore");
    assert_eq!((info.total, info.available), (2, 0));
    let owners: Vec<&str> = info.holders.iter().map(|h| h.0.as_str()).collect();
    assert_eq!(owners, ["a", "b"]);
    assert_eq!(int(&mut con, &["SEM.FORCERELEASE", "pool"]), 1);
    assert_eq!(hget(&mut con, "pool", "permits").as_deref(), Some("2"));
}

#[test]
fn a_read_write_lock_keeps_its_mode_field_for_script_clients() {
    let server = Server::start();
    let mut con = server.conn();
    expect_error(
        &mut con,
        &["RWLOCK.ACQUIRE", "rw", "mode", "WRITE"],
        RESERVED,
    );
    assert_eq!(raw(&mut con, &["EXISTS", "rw"]), Value::Int(0));
    int(&mut con, &["RWLOCK.ACQUIRE", "rw", "w", "WRITE"]);
    expect_error(
        &mut con,
        &["RWLOCK.ACQUIRE", "rw", "mode", "WRITE"],
        RESERVED,
    );
    expect_error(
        &mut con,
        &["RWLOCK.RELEASE", "rw", "mode", "READ"],
        RESERVED,
    );
    assert_eq!(hget(&mut con, "rw", "mode").as_deref(), Some("write"));
    // Redisson's read lock waits behind the writer: it answers the lock's PTTL.
    let reader = redisson::Holder::new("rw", "redisson:1", 10_000);
    let answer = con.req_command(&reader.lock(false).eval()).expect("EVAL");
    assert!(
        matches!(answer, Value::Int(_)),
        "read lock taken: {answer:?}"
    );

    int(&mut con, &["RWLOCK.ACQUIRE", "rw2", "a", "READ"]);
    expect_error(
        &mut con,
        &["RWLOCK.ACQUIRE", "rw2", "mode", "READ"],
        RESERVED,
    );
    int(&mut con, &["RWLOCK.ACQUIRE", "rw2", "b", "READ"]);
    assert_eq!(
        raw(&mut con, &["TYPE", "rw2"]),
        Value::SimpleString("hash".into())
    );
    assert!(matches!(
        raw(&mut con, &["RWLOCK.INFO", "rw2"]),
        Value::Array(_)
    ));
}
