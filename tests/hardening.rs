//! Hardening: tokens that no data can poison or move backwards, and bounds on what a client
//! can make the module wait for, hold, or echo.

mod support;
// Helpers shared by the hardening tests, and the waiting tests' bare connection; each file
// uses only some of them.
#[allow(dead_code)]
#[path = "hardening/common.rs"]
mod common;
#[allow(dead_code)]
#[path = "waiting/wire.rs"]
mod wire;

use std::time::Duration;

use common::{enqueue, now_us, stat, token, LIMIT};
use redis::Value;
use support::{error_text, int, raw, wait_until, Server};
use wire::Reply;

// ---------------------------------------------------------------- tokens

/// The default `rlock.token-gap`: tokens in the data are learned up to twice it past the
/// clock.
const DEFAULT_GAP: i64 = 1 << 20;
/// A token ahead of the clock by more than the gap (as after a promotion and some skew),
/// within the learning bound.
const AHEAD_US: i64 = 2_000_000;

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
    let ahead = now_us() + AHEAD_US;
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
        token <= now_us() + 2 * DEFAULT_GAP,
        "a hand-made @token poisoned the counter: {token}"
    );
    let next = int(&mut con, &["LOCK.ACQUIRE", "fresh2", "o"]);
    assert!(next > token, "{next} after {token}");
}

#[test]
fn a_restored_lock_teaches_its_token() {
    let server = Server::start();
    let mut con = server.conn();
    let ahead = now_us() + AHEAD_US;
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
    let ahead = now_us() + AHEAD_US;
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
        fresh <= now_us() + 2 * DEFAULT_GAP,
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
        token <= now_us() + 2 * DEFAULT_GAP,
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
