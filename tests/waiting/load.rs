//! Many waiters: a thousand served in order, and hundreds leaving mid-wait without a trace.

use std::time::Duration;

use crate::support::{info_field, int, raw, Server};
use crate::wire::{poll, Reply, Wire};
use crate::{queued, stat, token};

const MANY: usize = 1000;
const LEAVING: usize = 300;
/// How far `used_memory` may stay above its earlier value once the leavers are gone.
const MEMORY_SLACK: i64 = 16 * 1024;
const SETTLE_LIMIT: Duration = Duration::from_secs(10);

fn server_for_many() -> Server {
    Server::start_with(&["--maxclients", "4000"])
}

fn used_memory(con: &mut redis::Connection) -> i64 {
    info_field(con, "memory", "used_memory")
        .and_then(|v| v.parse().ok())
        .expect("INFO memory has used_memory")
}

fn connected_clients(con: &mut redis::Connection) -> i64 {
    info_field(con, "clients", "connected_clients")
        .and_then(|v| v.parse().ok())
        .expect("INFO clients has connected_clients")
}

/// Sends `LOCK.ACQUIRE key w<i> WAIT 0` on `n` new connections, each queued before the
/// next is sent.
fn queue_in_order(server: &Server, con: &mut redis::Connection, key: &str, n: usize) -> Vec<Wire> {
    let mut waiters = Vec::with_capacity(n);
    for i in 0..n {
        let mut w = Wire::connect(server);
        w.send(&["LOCK.ACQUIRE", key, &format!("w{i}"), "WAIT", "0"]);
        let expected = i as i64 + 1;
        let reached = poll(Duration::from_secs(10), || queued(con, key) == expected);
        assert!(reached, "waiter {i} was never queued");
        waiters.push(w);
    }
    waiters
}

#[test]
fn a_thousand_waiters_are_each_served_once_in_order() {
    let server = server_for_many();
    let mut con = server.conn();
    let mut last = int(&mut con, &["LOCK.ACQUIRE", "k", "holder"]);
    let mut waiters = queue_in_order(&server, &mut con, "k", MANY);
    assert_eq!(stat(&mut con, "waiters"), MANY as i64);
    assert_eq!(stat(&mut con, "locks_with_waiters"), 1);

    assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", "holder"]), 0);
    for (i, w) in waiters.iter_mut().enumerate() {
        let t = token(w.reply());
        assert!(t > last, "waiter {i}: token {t} after {last}");
        last = t;
        let released = w.call(&["LOCK.RELEASE", "k", &format!("w{i}")]);
        assert_eq!(released, Reply::Int(0), "waiter {i}");
    }
    assert!(
        waiters.iter_mut().all(|w| !w.has_pending()),
        "a waiter got a second reply"
    );
    assert_eq!(int(&mut con, &["EXISTS", "k"]), 0);
    assert_eq!(stat(&mut con, "handoffs"), MANY as i64);
    assert_eq!(stat(&mut con, "waiters"), 0);
    assert_eq!(stat(&mut con, "locks_with_waiters"), 0);
}

/// How the waiters of a round leave the queue.
#[derive(Clone, Copy)]
enum Leave {
    /// Their connections close while they wait without limit.
    Disconnect,
    /// Their `WAIT` runs out; the connections close after the nil reply.
    TimeOut,
}

/// Queues `LEAVING` waiters on `key`, lets them leave, and waits until the server has
/// let every one of them go.
fn round(server: &Server, con: &mut redis::Connection, key: &str, leave: Leave) {
    let clients_before = connected_clients(con);
    let wait = match leave {
        Leave::Disconnect => "0",
        Leave::TimeOut => "300",
    };
    let mut waiters = Vec::with_capacity(LEAVING);
    for i in 0..LEAVING {
        let mut w = Wire::connect(server);
        w.send(&["LOCK.ACQUIRE", key, &format!("w{i}"), "WAIT", wait]);
        waiters.push(w);
    }
    match leave {
        Leave::Disconnect => {
            let all = poll(SETTLE_LIMIT, || queued(con, key) == LEAVING as i64);
            assert!(all, "the waiters were never all queued");
        }
        Leave::TimeOut => {
            for w in &mut waiters {
                assert_eq!(w.reply(), Reply::Nil);
            }
        }
    }
    drop(waiters);
    let gone = poll(SETTLE_LIMIT, || {
        stat(con, "waiters") == 0 && connected_clients(con) == clients_before
    });
    assert!(gone, "the waiters never left");
}

/// Runs a warm-up round, then a measured one, and checks `used_memory` comes back.
fn assert_rounds_leave_no_memory(leave: Leave) {
    let server = server_for_many();
    let mut con = server.conn();
    int(
        &mut con,
        &["LOCK.ACQUIRE", "k", "holder", "LEASE", "600000"],
    );
    // The first round lets the allocator and the server's tables reach their working size.
    round(&server, &mut con, "k", leave);
    let before = used_memory(&mut con);

    round(&server, &mut con, "k", leave);
    assert_eq!(
        raw(&mut con, &["PING"]),
        redis::Value::SimpleString("PONG".into())
    );
    let mut after = used_memory(&mut con);
    let settled = poll(SETTLE_LIMIT, || {
        after = used_memory(&mut con);
        after - before <= MEMORY_SLACK
    });
    assert!(
        settled,
        "used_memory {after} stays {} bytes above {before} after {LEAVING} waiters left",
        after - before
    );
    assert_eq!(stat(&mut con, "locks_with_waiters"), 0);
    assert_eq!(stat(&mut con, "handoffs"), 0);
    assert_eq!(queued(&mut con, "k"), 0);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", "holder"]), 0);
}

#[test]
fn hundreds_of_waiters_leaving_mid_wait_leave_nothing_behind() {
    assert_rounds_leave_no_memory(Leave::Disconnect);
}

#[test]
fn hundreds_of_timed_out_waiters_leave_nothing_behind() {
    assert_rounds_leave_no_memory(Leave::TimeOut);
}
