//! Hardening: tokens that no data can poison or move backwards, and bounds on what a client
//! can make the module hold, wait for, or echo.

mod support;
// The waiting tests' bare connection; not every helper of it is used here.
#[allow(dead_code)]
#[path = "waiting/wire.rs"]
mod wire;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::Value;
use support::{error_text, info_field, int, raw, wait_until, Server};
use wire::{Reply, Wire};

const LIMIT: Duration = Duration::from_secs(5);

fn now_us() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock");
    i64::try_from(since.as_micros()).expect("µs fit in i64")
}

fn stat(con: &mut redis::Connection, name: &str) -> i64 {
    info_field(con, "rlock", name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("INFO rlock has no integer {name}"))
}

/// Sends `LOCK.ACQUIRE key owner <options>` on a connection of its own, and waits until the
/// node counts one more waiter.
fn enqueue(server: &Server, con: &mut redis::Connection, args: &[&str]) -> Wire {
    let before = stat(con, "rlock_waiters");
    let mut waiter = Wire::connect(server);
    let mut command = vec!["LOCK.ACQUIRE"];
    command.extend_from_slice(args);
    waiter.send(&command);
    let queued = wait_until(LIMIT, || stat(con, "rlock_waiters") == before + 1);
    assert!(queued, "{args:?} was not queued");
    waiter
}

#[track_caller]
fn token(reply: Reply) -> i64 {
    match reply {
        Reply::Int(t) => t,
        other => panic!("expected a token, got {other:?}"),
    }
}

// ---------------------------------------------------------------- tokens

#[test]
fn an_aof_reload_learns_tokens_only_from_lock_shaped_hashes_within_bounds() {
    let server = Server::start_with(&[
        "--appendonly",
        "yes",
        "--aof-use-rdb-preamble",
        "no",
        "--enable-debug-command",
        "yes",
    ]);
    let mut con = server.conn();
    let poison = "9223372036854775000";
    raw(
        &mut con,
        &["HSET", "profile:1", "@token", poison, "name", "x"],
    );
    raw(&mut con, &["HSET", "lock:far", "o", "1", "@token", poison]);
    let ahead = now_us() + 1_000_000_000_000;
    raw(
        &mut con,
        &["HSET", "lock:ahead", "o", "1", "@token", &ahead.to_string()],
    );
    assert_eq!(raw(&mut con, &["DEBUG", "LOADAOF"]), Value::Okay);
    let token = int(&mut con, &["LOCK.ACQUIRE", "fresh", "o"]);
    assert!(
        token > ahead,
        "a lock's token within bounds is learned: {token}"
    );
    assert!(
        token < ahead + 1_000_000_000_000,
        "a hand-made @token poisoned the counter: {token}"
    );
    let next = int(&mut con, &["LOCK.ACQUIRE", "fresh2", "o"]);
    assert!(next > token, "{next} after {token}");
}

#[test]
fn a_restored_lock_teaches_its_token() {
    let server = Server::start();
    let mut con = server.conn();
    let ahead = now_us() + 1_000_000_000_000;
    raw(
        &mut con,
        &["HSET", "src", "o", "1", "@token", &ahead.to_string()],
    );
    let Value::BulkString(dump) = raw(&mut con, &["DUMP", "src"]) else {
        panic!("DUMP src gave no payload");
    };
    raw(&mut con, &["DEL", "src"]);
    let mut restore = redis::cmd("RESTORE");
    restore.arg("lock:moved").arg(0).arg(dump);
    let _: () = restore.query(&mut con).expect("RESTORE");
    let token = int(&mut con, &["LOCK.ACQUIRE", "lock:other", "o"]);
    assert!(
        token > ahead,
        "fresh token {token} below the restored {ahead}"
    );
}

#[test]
fn reading_a_lock_made_elsewhere_teaches_its_token() {
    let server = Server::start();
    let mut con = server.conn();
    let ahead = now_us() + 1_000_000_000_000;
    raw(
        &mut con,
        &["HSET", "lock:a", "o", "1", "@token", &ahead.to_string()],
    );
    assert_eq!(raw(&mut con, &["LOCK.ACQUIRE", "lock:a", "p"]), Value::Nil);
    let token = int(&mut con, &["LOCK.ACQUIRE", "lock:b", "p"]);
    assert!(
        token > ahead,
        "fresh token {token} below the one read, {ahead}"
    );
}

#[test]
fn a_reentered_hand_made_lock_poisons_neither_master_nor_replica() {
    let master = Server::start();
    let replica = master.replica();
    let mut con = master.conn();
    let poison = "9223372036854775000";
    raw(&mut con, &["HSET", "lock:odd", "o", "1", "@token", poison]);
    // The holder reenters: the holding, with its @token, is replicated as LOCK.APPLY.
    assert_eq!(
        int(&mut con, &["LOCK.ACQUIRE", "lock:odd", "o"]),
        poison.parse::<i64>().unwrap()
    );
    let fresh = int(&mut con, &["LOCK.ACQUIRE", "lock:fresh", "o"]);
    assert!(
        fresh < now_us() + 1_000_000_000_000,
        "master poisoned: {fresh}"
    );
    raw(&mut con, &["WAIT", "1", "5000"]);
    let mut promoted = replica.conn();
    let synced = wait_until(LIMIT, || int(&mut promoted, &["EXISTS", "lock:fresh"]) == 1);
    assert!(synced, "the replica did not get the writes");
    raw(
        &mut promoted,
        &["CONFIG", "SET", "rlock.failover-delay", "0"],
    );
    assert_eq!(raw(&mut promoted, &["REPLICAOF", "NO", "ONE"]), Value::Okay);
    let token = int(&mut promoted, &["LOCK.ACQUIRE", "lock:next", "o"]);
    assert!(token > fresh, "{token} after {fresh}");
    assert!(
        token < now_us() + 1_000_000_000_000,
        "replica poisoned: {token}"
    );
}

// ---------------------------------------------------------------- bounds

#[test]
fn a_wait_longer_than_timers_hold_still_waits() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "60000"]);
    let mut waiter = enqueue(&server, &mut con, &["k", "b", "WAIT", "18446744073709552"]);
    assert_eq!(waiter.reply_within(Duration::from_millis(200)), None);
    assert_eq!(stat(&mut con, "rlock_wait_timeouts"), 0);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", "a"]), 0);
    assert!(token(waiter.reply()) > 0);
}

#[test]
fn a_lease_longer_than_timers_hold_is_kept() {
    let server = Server::start();
    let mut con = server.conn();
    int(
        &mut con,
        &["LOCK.ACQUIRE", "k", "a", "LEASE", "9000000000000000"],
    );
    let mut waiter = enqueue(&server, &mut con, &["k", "b", "WAIT", "300"]);
    assert_eq!(waiter.reply(), Reply::Nil, "the holder keeps its lease");
    assert_eq!(int(&mut con, &["LOCK.RENEW", "k", "a"]), 1);
}

#[test]
fn an_error_echoes_at_most_128_bytes_of_a_key() {
    let server = Server::start();
    let mut con = server.conn();
    let key = vec![b'\x01'; 1 << 20];
    let reply = raw(&mut con, &[&b"LOCK.RELEASE"[..], &key, b"x"]);
    let text = error_text(&reply).expect("an error");
    let expected = format!(
        "NOTHELD lock '{}...' is not held by 'x'",
        "\\x01".repeat(128)
    );
    assert_eq!(text, expected);
    let option = vec![b'Z'; 1 << 20];
    let reply = raw(&mut con, &[&b"LOCK.ACQUIRE"[..], b"k", b"o", &option, b"1"]);
    let text = error_text(&reply).expect("an error");
    assert!(text.len() < 200, "{} bytes", text.len());
    assert!(text.ends_with("...', expected LEASE or WAIT"), "{text}");
}

// ---------------------------------------------------------------- keys moving under waiters

/// A lock without a lease (no timer will ever look at it), held by `a`, with `b` waiting
/// for it without a limit.
fn held_forever_with_a_waiter(server: &Server, con: &mut redis::Connection) -> Wire {
    raw(con, &["HSET", "k", "a", "1"]);
    enqueue(server, con, &["k", "b", "WAIT", "0"])
}

#[test]
fn swapdb_serves_a_waiter_whose_lock_moved_away() {
    let server = Server::start();
    let mut con = server.conn();
    let mut waiter = held_forever_with_a_waiter(&server, &mut con);
    assert_eq!(raw(&mut con, &["SWAPDB", "0", "1"]), Value::Okay);
    let t = token(waiter.reply());
    assert!(t > 0);
    assert_eq!(support::hget(&mut con, "k", "b").as_deref(), Some("1"));
    raw(&mut con, &["SELECT", "1"]);
    assert_eq!(support::hget(&mut con, "k", "a").as_deref(), Some("1"));
}

#[test]
fn move_and_rename_serve_a_waiter_whose_lock_left() {
    let server = Server::start();
    let mut con = server.conn();
    let mut waiter = held_forever_with_a_waiter(&server, &mut con);
    assert_eq!(int(&mut con, &["MOVE", "k", "1"]), 1);
    assert!(token(waiter.reply()) > 0);
    raw(&mut con, &["DEL", "k"]);
    let mut waiter = held_forever_with_a_waiter(&server, &mut con);
    assert_eq!(raw(&mut con, &["RENAME", "k", "k2"]), Value::Okay);
    assert!(token(waiter.reply()) > 0);
}

// ---------------------------------------------------------------- waiter limits

#[test]
fn waiters_past_the_limits_are_refused_with_a_clear_error() {
    let server = Server::start_with(&[
        "--rlock.max-waiters",
        "2",
        "--rlock.max-waiters-per-key",
        "1",
    ]);
    let mut con = server.conn();
    for key in ["k1", "k2", "k3"] {
        int(&mut con, &["LOCK.ACQUIRE", key, "a"]);
    }
    let _first = enqueue(&server, &mut con, &["k1", "b", "WAIT", "0"]);
    assert!(stat(&mut con, "rlock_waiters_memory") > 0);
    let mut same_key = Wire::connect(&server);
    let refused = same_key.call(&["LOCK.ACQUIRE", "k1", "c", "WAIT", "0"]);
    let per_key =
        "ERR too many waiters for this lock: rlock.max-waiters-per-key (1) clients wait for it";
    assert_eq!(refused, Reply::Error(per_key.to_owned()));
    let _second = enqueue(&server, &mut con, &["k2", "b", "WAIT", "0"]);
    let refused = same_key.call(&["LOCK.ACQUIRE", "k3", "c", "WAIT", "0"]);
    let total = "ERR too many waiters: rlock.max-waiters (2) clients wait on this node";
    assert_eq!(refused, Reply::Error(total.to_owned()));
    assert_eq!(stat(&mut con, "rlock_waiters"), 2);
    // Without WAIT nobody queues: the limits do not apply.
    assert_eq!(raw(&mut con, &["LOCK.ACQUIRE", "k3", "c"]), Value::Nil);
}

#[test]
fn info_counts_lost_renewals_contended_nils_and_force_releases() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    assert_eq!(raw(&mut con, &["LOCK.ACQUIRE", "k", "b"]), Value::Nil);
    assert_eq!(int(&mut con, &["LOCK.RENEW", "k", "b"]), 0);
    assert_eq!(int(&mut con, &["LOCK.FORCERELEASE", "k"]), 1);
    assert_eq!(int(&mut con, &["LOCK.FORCERELEASE", "k"]), 0);
    assert_eq!(stat(&mut con, "rlock_contended"), 1);
    assert_eq!(stat(&mut con, "rlock_renewals_lost"), 1);
    assert_eq!(stat(&mut con, "rlock_force_releases"), 1);
    assert_eq!(stat(&mut con, "rlock_revoked_grants"), 0);
    assert_eq!(stat(&mut con, "rlock_waiters_memory"), 0);
}

#[test]
fn a_grant_whose_waiter_is_gone_before_its_reply_is_revoked_and_counted() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    let mut waiter = Wire::connect(&server);
    let id = token(waiter.call(&["CLIENT", "ID"]));
    waiter.send(&["LOCK.ACQUIRE", "k", "b", "WAIT", "0"]);
    assert!(wait_until(LIMIT, || stat(&mut con, "rlock_waiters") == 1));
    // The release hands the lock to b, and b is gone before its reply goes out.
    let mut both = redis::pipe();
    both.atomic()
        .cmd("LOCK.RELEASE")
        .arg("k")
        .arg("a")
        .cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(id);
    let (released, killed): (i64, i64) = both.query(&mut con).expect("MULTI/EXEC");
    assert_eq!((released, killed), (0, 1));
    let revoked = wait_until(LIMIT, || stat(&mut con, "rlock_revoked_grants") == 1);
    assert!(revoked, "the grant was not taken back");
    assert_eq!(stat(&mut con, "rlock_handoffs"), 1);
    assert_eq!(int(&mut con, &["EXISTS", "k"]), 0);
}
