//! Tickets under abuse: whatever a client sends, no call blocks the server for long, a
//! connection's mailbox is bounded, tickets go only to connections of the sender's ACL user
//! and are cancelled only by their own side, and no timer outlives what it watches.

#[path = "ticket_abuse/commands.rs"]
mod commands;
#[path = "ticket_abuse/push.rs"]
mod push;
#[path = "tickets/receiver.rs"]
#[allow(dead_code)]
mod receiver;
#[path = "ticket_abuse/rights.rs"]
mod rights;
mod support;
#[path = "ticket_abuse/timers.rs"]
mod timers;

use std::time::{Duration, Instant};

use redis::Value;
use support::{error_text, info_field, int, raw, wait_until, Server};

/// How long anything that is not a measured bound may take before the test says "hung".
pub const LIMIT: Duration = Duration::from_secs(30);

/// An integer field of `INFO rlock`.
#[track_caller]
pub fn stat(con: &mut redis::Connection, name: &str) -> i64 {
    info_field(con, "rlock", name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("INFO rlock has no integer {name}"))
}

/// The wait id of a `LOCK.WAIT` reply `[queued, id]`.
#[track_caller]
pub fn queued(reply: &Value) -> i64 {
    match reply {
        Value::Array(items) => match items.as_slice() {
            [tag, Value::Int(id)] if support::text_of(tag).as_deref() == Some("queued") => *id,
            _ => panic!("expected [queued, id], got {reply:?}"),
        },
        other => panic!("expected [queued, id], got {other:?}"),
    }
}

/// `LOCK.WAIT key owner [args...]` on `con`: the wait id of the queued ticket.
#[track_caller]
pub fn wait(con: &mut redis::Connection, key: &str, owner: &str, args: &[&str]) -> i64 {
    let mut command = vec!["LOCK.WAIT", key, owner];
    command.extend_from_slice(args);
    queued(&raw(con, &command))
}

/// The client id of `con`.
pub fn client_id(con: &mut redis::Connection) -> i64 {
    int(con, &["CLIENT", "ID"])
}

/// `LOCK.GRANTS` on `con`: its (wait id, outcome) pairs, an outcome as text.
#[track_caller]
pub fn grants(con: &mut redis::Connection) -> Vec<(i64, String)> {
    let reply = raw(con, &["LOCK.GRANTS"]);
    let Value::Array(items) = &reply else {
        panic!("LOCK.GRANTS: {reply:?}");
    };
    items
        .chunks(2)
        .map(|pair| match pair {
            [Value::Int(id), Value::Int(n)] => (*id, n.to_string()),
            [Value::Int(id), text] => (*id, support::text_of(text).expect("an outcome")),
            _ => panic!("LOCK.GRANTS: {reply:?}"),
        })
        .collect()
}

/// Adds the ACL user `name` (password `pw`) with every right.
/// A connection to `server`, with the lock `L` held by `holder` for ten minutes: what
/// the tickets of a test queue behind.
pub fn holding_l(server: &Server) -> redis::Connection {
    let mut con = server.conn();
    int(
        &mut con,
        &["LOCK.ACQUIRE", "L", "holder", "LEASE", "600000"],
    );
    con
}

pub fn add_user(con: &mut redis::Connection, name: &str) {
    let reply = raw(
        con,
        &["ACL", "SETUSER", name, "on", ">pw", "~*", "&*", "+@all"],
    );
    assert_eq!(reply, Value::Okay, "ACL SETUSER {name}");
}

// ------------------------------------------------------------- a receiver of many tickets

const TICKETS: usize = 100_000;

#[test]
fn closing_a_receiver_of_many_tickets_keeps_the_server_answering() {
    let server = Server::start();
    let mut con = holding_l(&server);
    let mut receiver = server.conn();
    let id = client_id(&mut receiver).to_string();
    let mut pipe = redis::pipe();
    for i in 0..TICKETS {
        pipe.cmd("LOCK.WAIT")
            .arg("L")
            .arg(format!("w{i}"))
            .arg("TO")
            .arg(&id);
    }
    let replies: Vec<Value> = pipe.query(&mut con).expect("the pipelined LOCK.WAITs");
    assert!(
        replies.iter().all(|r| matches!(r, Value::Array(_))),
        "all queued"
    );
    assert_eq!(stat(&mut con, "rlock_waiters"), TICKETS as i64);
    // Read after the kill, where it must be; before it, a server without it counts none.
    let stalls =
        info_field(&mut con, "rlock", "rlock_stalls").map_or(0, |v| v.parse().expect("a count"));
    let mut killer = server.conn();
    let mut pinger = server.conn();
    for c in [&killer, &pinger] {
        c.set_read_timeout(Some(LIMIT)).expect("a read timeout");
    }
    let start = Instant::now();
    assert_eq!(int(&mut killer, &["CLIENT", "KILL", "ID", &id]), 1);
    assert_eq!(
        raw(&mut pinger, &["PING"]),
        Value::SimpleString("PONG".into())
    );
    let answered = start.elapsed();
    eprintln!("{TICKETS} tickets left in {answered:?}");
    // Linear and small: about 0.1 s here, 20 s when each ticket was looked up in a scan of
    // the queue. The bound is the module's own stall threshold, which a loaded machine does
    // not reach; the time is printed above.
    assert!(
        answered < Duration::from_secs(1),
        "the server stood still for {answered:?} while the receiver's tickets left"
    );
    // The rest leave a slice at a time, each pass short.
    let gone = wait_until(LIMIT, || stat(&mut con, "rlock_waiters") == 0);
    assert!(gone, "{} tickets left", stat(&mut con, "rlock_waiters"));
    // The heartbeat noticed no stall, and the holder renews as before.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        stat(&mut con, "rlock_stalls"),
        stalls,
        "a stall was noticed"
    );
    let renewed = raw(&mut con, &["LOCK.RENEW", "L", "holder"]);
    assert_eq!(renewed, Value::Int(1), "{:?}", error_text(&renewed));
}

// ------------------------------------------------------------- the mailbox's bound

#[test]
fn unread_outcomes_count_toward_max_waiters() {
    let server = Server::start_with(&["--rlock.max-waiters", "10"]);
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "L", "holder"]);
    let mut victim = server.conn();
    let to = client_id(&mut victim).to_string();
    let ids: Vec<i64> = (0..10)
        .map(|i| wait(&mut con, "L", &format!("x{i}"), &["WAIT", "1", "TO", &to]))
        .collect();
    let ended = wait_until(LIMIT, || stat(&mut con, "rlock_waiters") == 0);
    assert!(ended, "the tickets did not time out");
    assert_eq!(stat(&mut con, "rlock_unread_outcomes"), 10);
    let refused = raw(&mut con, &["LOCK.WAIT", "L", "y", "WAIT", "1", "TO", &to]);
    assert_eq!(
        error_text(&refused).as_deref(),
        Some("ERR too many waiters: rlock.max-waiters (10) clients wait on this node")
    );
    // A blocking wait is refused too: the mailbox holds the node's whole allowance.
    let blocked = raw(&mut con, &["LOCK.ACQUIRE", "L", "z", "WAIT", "10"]);
    assert!(error_text(&blocked).is_some(), "{blocked:?}");
    let read = grants(&mut victim);
    let read_ids: Vec<i64> = read.iter().map(|(id, _)| *id).collect();
    assert_eq!(read_ids, ids);
    assert!(read.iter().all(|(_, outcome)| outcome == "0"), "{read:?}");
    assert_eq!(stat(&mut con, "rlock_unread_outcomes"), 0);
    wait(&mut con, "L", "y", &["WAIT", "1", "TO", &to]);
}
