//! Hardening of the waiter queues: a key that leaves its database never strands its
//! waiters; the queues have limits; `INFO rlock` counts what goes wrong for clients.

mod support;
// Helpers shared by the hardening tests, and the waiting tests' bare connection; each file
// uses only some of them.
#[allow(dead_code)]
#[path = "hardening/common.rs"]
mod common;
#[allow(dead_code)]
#[path = "waiting/wire.rs"]
mod wire;

use common::{enqueue, stat, token, LIMIT};
use redis::Value;
use support::{int, raw, wait_until, Server};
use wire::{Reply, Wire};

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

// ---------------------------------------------------------------- lease timers

fn used_memory(con: &mut redis::Connection) -> i64 {
    support::info_field(con, "memory", "used_memory")
        .and_then(|v| v.parse().ok())
        .expect("INFO memory has used_memory")
}

/// Renewals that shorten the lease of a lock with waiters, once each: every one needs a
/// check earlier than the pending one, and the pending one's timer must go, not pile up
/// (100,000 such renewals left ~13 MB of live timers).
#[test]
fn renewals_that_shorten_a_lease_leave_no_timers_behind() {
    let server = Server::start();
    let mut con = server.conn();
    let rounds: i64 = 100_000;
    let lease = (10 * rounds + 3_600_000).to_string();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", &lease]);
    let mut waiter = enqueue(&server, &mut con, &["k", "b", "WAIT", "0"]);
    let renew = |from: i64| {
        let mut pipe = redis::pipe();
        for i in from..from + rounds / 2 {
            let lease = 3_600_000 + 10 * (rounds - i);
            pipe.cmd("LOCK.RENEW")
                .arg("k")
                .arg("a")
                .arg("LEASE")
                .arg(lease);
        }
        pipe
    };
    let _: Vec<i64> = renew(0).query(&mut con).expect("renewals");
    let before = used_memory(&mut con);
    let renewed: Vec<i64> = renew(rounds / 2).query(&mut con).expect("renewals");
    assert!(renewed.iter().all(|r| *r == 1), "a renewal was refused");
    let grown = used_memory(&mut con) - before;
    assert!(
        grown < 1_000_000,
        "{} renewals grew used_memory by {grown} bytes",
        rounds / 2
    );
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", "a"]), 0);
    assert!(token(waiter.reply()) > 0);
}

// ---------------------------------------------------------------- waiters' memory

/// `waiters_memory` tells what queued clients cost the server, within a factor of two of
/// what `used_memory` shows (their connections, opened before, aside).
#[test]
fn waiters_memory_is_within_a_factor_of_two_of_what_they_cost() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "600000"]);
    let count: i64 = 200;
    let mut waiters: Vec<Wire> = (0..count).map(|_| Wire::connect(&server)).collect();
    for waiter in &mut waiters {
        assert_eq!(waiter.call(&["PING"]), Reply::Status("PONG".to_owned()));
    }
    let before = used_memory(&mut con);
    for (i, waiter) in waiters.iter_mut().enumerate() {
        waiter.send(&["LOCK.ACQUIRE", "k", &format!("w{i}"), "WAIT", "0"]);
    }
    let queued = wait_until(LIMIT, || stat(&mut con, "rlock_waiters") == count);
    assert!(queued, "the waiters did not queue");
    let grown = used_memory(&mut con) - before;
    let reported = stat(&mut con, "rlock_waiters_memory");
    assert!(
        reported * 2 >= grown && reported <= grown * 2,
        "{count} waiters: waiters_memory {reported}, used_memory grew by {grown}"
    );
}

/// Tickets (`LOCK.WAIT`) are no blocked clients: `waiters_memory` counts their queue slots
/// and tables, within a fifth of what `used_memory` shows for 10,000 of them on one lock (it
/// counted lengths, not capacities, and said about 0.6 of it).
#[test]
fn waiters_memory_of_tickets_is_within_a_fifth_of_what_they_cost() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "600000"]);
    let mut receiver = server.conn();
    let id = int(&mut receiver, &["CLIENT", "ID"]).to_string();
    let count: i64 = 10_000;
    let before = used_memory(&mut con);
    let mut pipe = redis::pipe();
    for i in 0..count {
        pipe.cmd("LOCK.WAIT")
            .arg("k")
            .arg(format!("w{i}:1"))
            .arg("TO")
            .arg(&id);
    }
    let _: Vec<Value> = pipe.query(&mut con).expect("queue the tickets");
    assert_eq!(stat(&mut con, "rlock_waiters"), count);
    let grown = used_memory(&mut con) - before;
    let reported = stat(&mut con, "rlock_waiters_memory");
    assert!(
        reported * 5 >= grown * 4 && reported * 4 <= grown * 5,
        "{count} tickets: waiters_memory {reported}, used_memory grew by {grown}"
    );
}
