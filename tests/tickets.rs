//! Tickets (`LOCK.WAIT`, `LOCK.GRANTS`, `LOCK.CANCEL`; docs/commands/lock.wait.md): waits
//! that are not blocked clients, in the same FIFO as `LOCK.ACQUIRE ... WAIT`, whose
//! outcome is pushed to the caller's channel or mailed to a `TO` connection. Every wait
//! ends exactly once: a grant, its `WAIT` running out, a refusal, a cancel, or the closing
//! of its receiver.

#[path = "tickets/races.rs"]
mod races;
#[path = "tickets/receiver.rs"]
mod receiver;
mod support;
#[path = "waiting/wire.rs"]
#[allow(dead_code)]
mod wire;

use std::time::Duration;

use receiver::{queued_of, Queued, Receiver};
use redis::Value;
use support::{error_text, field, int, pairs, raw, text_of, wait_until, Server};
use wire::{Reply, Wire};

const LIMIT: Duration = Duration::from_secs(10);

/// `LOCK.INFO key`'s owner and token, or `None` when the lock is free.
fn holder(con: &mut redis::Connection, key: &str) -> Option<(String, i64)> {
    let reply = raw(con, &["LOCK.INFO", key]);
    if reply == Value::Nil {
        return None;
    }
    let fields = pairs(&reply);
    let owner = field(&fields, "owner").and_then(text_of)?;
    match field(&fields, "token") {
        Some(Value::Int(token)) => Some((owner, *token)),
        other => panic!("LOCK.INFO token: {other:?}"),
    }
}

/// `LOCK.INFO key`'s waiters (0 when the lock is free).
fn waiters(con: &mut redis::Connection, key: &str) -> i64 {
    match raw(con, &["LOCK.INFO", key]) {
        Value::Nil => 0,
        reply => match field(&pairs(&reply), "waiters") {
            Some(Value::Int(n)) => *n,
            other => panic!("LOCK.INFO waiters: {other:?}"),
        },
    }
}

#[track_caller]
fn queued(answer: Queued) -> i64 {
    match answer {
        Queued::Queued(id) => id,
        other => panic!("expected a queued ticket, got {other:?}"),
    }
}

#[test]
fn a_free_lock_is_held_at_once_and_reentered() {
    let server = Server::start();
    let mut r = Receiver::push(&server);
    let Queued::Held(token) = r.wait("k", "me", &[]) else {
        panic!("a free lock is held at once");
    };
    assert_eq!(r.wait("k", "me", &["LEASE", "5000"]), Queued::Held(token));
    let mut con = server.conn();
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", "me"]), 1);
}

#[test]
fn a_queued_ticket_is_pushed_its_grant_at_the_release() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    let mut r = Receiver::push(&server);
    let id = queued(r.wait("k", "b", &["LEASE", "60000"]));
    assert_eq!(waiters(&mut con, "k"), 1);
    assert!(r.no_outcome_yet());
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", "a"]), 0);
    let (wait, outcome) = r.outcome();
    assert_eq!(wait, id);
    let token: i64 = outcome.parse().expect("a token");
    assert_eq!(holder(&mut con, "k"), Some(("b".to_owned(), token)));
}

#[test]
fn push_needs_resp3_and_a_subscription_and_to_a_live_client() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    let mut plain = Receiver::resp2(&server);
    let refused = |reply: Value| error_text(&reply).unwrap_or_else(|| panic!("{reply:?}"));
    let text = refused(plain.call(&["LOCK.WAIT", "k", "b"]));
    assert_eq!(text, "ERR LOCK.WAIT without TO needs RESP3 (HELLO 3)");
    plain.call(&["HELLO", "3"]);
    let text = refused(plain.call(&["LOCK.WAIT", "k", "b"]));
    assert!(
        text.starts_with(&format!("ERR subscribe to __rlock__:{} first", plain.id)),
        "{text}"
    );
    let text = refused(plain.call(&["LOCK.WAIT", "k", "b", "TO", "987654"]));
    assert_eq!(text, "ERR no client 987654");
    let text = refused(plain.call(&["LOCK.WAIT", "k", "b", "TO", "0"]));
    assert!(text.starts_with("ERR TO must be"), "{text}");
    let text = refused(plain.call(&[
        "EVAL",
        "return redis.call('LOCK.WAIT', KEYS[1], 'b')",
        "1",
        "k",
    ]));
    assert!(
        text.contains("LOCK.WAIT inside a script needs TO"),
        "{text}"
    );
    // Nothing was queued by any of them.
    assert_eq!(waiters(&mut con, "k"), 0);
}

#[test]
fn tickets_and_blocked_waiters_are_served_in_one_fifo() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "first"]);
    let mut r = Receiver::push(&server);
    let mut blocked = Vec::new();
    let mut tickets = Vec::new();
    for i in 0..6 {
        let owner = format!("w{i}");
        if i % 2 == 0 {
            let mut w = Wire::connect(&server);
            w.send(&["LOCK.ACQUIRE", "k", &owner, "WAIT", "0"]);
            blocked.push(w);
        } else {
            tickets.push(queued(r.wait("k", &owner, &[])));
        }
        assert!(wait_until(LIMIT, || waiters(&mut con, "k") == i + 1));
    }
    let mut previous = "first".to_owned();
    for i in 0..6 {
        int(&mut con, &["LOCK.RELEASE", "k", &previous]);
        let token = if i % 2 == 0 {
            match blocked[i / 2].reply() {
                Reply::Int(token) => token,
                other => panic!("blocked waiter w{i}: {other:?}"),
            }
        } else {
            let (id, outcome) = r.outcome();
            assert_eq!(id, tickets[i / 2]);
            outcome.parse().expect("a token")
        };
        previous = format!("w{i}");
        assert_eq!(holder(&mut con, "k"), Some((previous.clone(), token)));
    }
}

#[test]
fn a_ticket_whose_wait_runs_out_gets_0_and_leaves_the_queue() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    let mut r = Receiver::push(&server);
    let id = queued(r.wait("k", "b", &["WAIT", "100"]));
    assert_eq!(r.outcome(), (id, "0".to_owned()));
    assert_eq!(waiters(&mut con, "k"), 0);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", "a"]), 0);
    assert_eq!(holder(&mut con, "k"), None);
}

#[test]
fn cancel_answers_0_for_a_queued_ticket_the_token_for_a_mailed_grant_else_nil() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    let mut r = Receiver::push(&server);
    let id = queued(r.wait("k", "b", &[]));
    assert_eq!(
        raw(&mut con, &["LOCK.CANCEL", "other", &id.to_string()]),
        Value::Nil
    );
    assert_eq!(int(&mut con, &["LOCK.CANCEL", "k", &id.to_string()]), 0);
    assert_eq!(waiters(&mut con, "k"), 0);
    // Cancelled by another connection of its user: its receiver is told.
    let told = (
        id,
        "-CANCELLED the wait was cancelled by LOCK.CANCEL".to_owned(),
    );
    assert_eq!(r.outcome(), told);
    // A mailed grant, not read yet: the cancel is its delivery.
    let mut mailbox = Receiver::resp2(&server);
    let to = mailbox.id.to_string();
    let id = queued(queued_of(&raw(
        &mut con,
        &["LOCK.WAIT", "k", "c", "TO", &to],
    )));
    int(&mut con, &["LOCK.RELEASE", "k", "a"]);
    let (_, token) = holder(&mut con, "k").expect("c holds");
    // Sent by its sender: the receiver is not told.
    assert_eq!(int(&mut con, &["LOCK.CANCEL", "k", &id.to_string()]), token);
    assert_eq!(mailbox.call(&["LOCK.GRANTS"]), Value::Array(vec![]));
    assert_eq!(holder(&mut con, "k"), Some(("c".to_owned(), token)));
    // A pushed grant is the receiver's: nil, and the push came.
    let id = queued(r.wait("k", "d", &[]));
    int(&mut con, &["LOCK.RELEASE", "k", "c"]);
    assert_eq!(
        raw(&mut con, &["LOCK.CANCEL", "k", &id.to_string()]),
        Value::Nil
    );
    assert_eq!(r.outcome().0, id);
    assert!(r.no_outcome_yet(), "a cancelled ticket got an outcome");
}

#[test]
fn grants_answers_the_mailbox_blocks_on_an_empty_one_and_times_out_with_nil() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    let mut mailbox = Receiver::resp2(&server);
    let to = mailbox.id.to_string();
    assert_eq!(mailbox.call(&["LOCK.GRANTS"]), Value::Array(vec![]));
    assert_eq!(mailbox.call(&["LOCK.GRANTS", "BLOCK", "50"]), Value::Nil);
    let first = queued(queued_of(&raw(
        &mut con,
        &["LOCK.WAIT", "k", "b", "TO", &to],
    )));
    let second = queued(queued_of(&raw(
        &mut con,
        &["LOCK.WAIT", "k", "c", "TO", &to, "WAIT", "100"],
    )));
    mailbox.send(&["LOCK.GRANTS", "BLOCK", "0"]);
    int(&mut con, &["LOCK.RELEASE", "k", "a"]);
    let (_, token) = holder(&mut con, "k").expect("b holds");
    assert_eq!(
        mailbox.reply(),
        Value::Array(vec![Value::Int(first), Value::Int(token)])
    );
    assert_eq!(
        mailbox.call(&["LOCK.GRANTS", "BLOCK", "5000"]),
        Value::Array(vec![Value::Int(second), Value::Int(0)])
    );
}

#[test]
fn a_closed_receiver_leaves_its_queues_and_its_mailed_grant_passes_on() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    let mailbox = Receiver::resp2(&server);
    let to = mailbox.id.to_string();
    queued(queued_of(&raw(
        &mut con,
        &["LOCK.WAIT", "k", "gone", "TO", &to],
    )));
    let mut r = Receiver::push(&server);
    let next = queued(r.wait("k", "next", &[]));
    drop(mailbox);
    assert!(
        wait_until(LIMIT, || waiters(&mut con, "k") == 1),
        "the closed receiver's ticket stayed"
    );
    int(&mut con, &["LOCK.RELEASE", "k", "a"]);
    assert_eq!(r.outcome().0, next);
    // Now a grant mailed to a receiver that closes before reading it.
    let mailbox = Receiver::resp2(&server);
    let to = mailbox.id.to_string();
    queued(queued_of(&raw(
        &mut con,
        &["LOCK.WAIT", "k", "unread", "TO", &to],
    )));
    let after = queued(r.wait("k", "after", &[]));
    int(&mut con, &["LOCK.RELEASE", "k", "next"]);
    assert_eq!(
        holder(&mut con, "k").map(|h| h.0).as_deref(),
        Some("unread")
    );
    drop(mailbox);
    assert_eq!(r.outcome().0, after, "the unread grant was not passed on");
    assert_eq!(holder(&mut con, "k").map(|h| h.0).as_deref(), Some("after"));
}

#[test]
fn a_grant_pushed_to_a_receiver_that_left_its_channel_passes_on_in_the_same_release() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    let mut left = Receiver::push(&server);
    queued(left.wait("k", "left", &[]));
    left.send(&["UNSUBSCRIBE"]);
    left.frame();
    let mut r = Receiver::push(&server);
    let id = queued(r.wait("k", "stays", &[]));
    int(&mut con, &["LOCK.RELEASE", "k", "a"]);
    assert_eq!(holder(&mut con, "k").map(|h| h.0).as_deref(), Some("stays"));
    assert_eq!(r.outcome().0, id);
    assert!(left.no_outcome_yet());
}

#[test]
fn a_demoted_master_refuses_its_tickets() {
    let master = Server::start();
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    let mut r = Receiver::push(&server);
    let id = queued(r.wait("k", "b", &[]));
    let port = master.port().to_string();
    raw(&mut con, &["REPLICAOF", "127.0.0.1", &port]);
    let (wait, outcome) = r.outcome();
    assert_eq!(wait, id);
    assert!(outcome.starts_with("-READONLY"), "{outcome}");
}

#[test]
fn ten_thousand_tickets_over_one_connection_are_served_in_order() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "o-1"]);
    let mut r = Receiver::push(&server);
    let n = 10_000;
    for i in 0..n {
        r.send(&["LOCK.WAIT", "k", &format!("o{i}"), "LEASE", "60000"]);
    }
    let ids: Vec<i64> = (0..n).map(|_| queued(queued_of(&r.reply()))).collect();
    assert_eq!(waiters(&mut con, "k"), n);
    for (i, id) in ids.iter().enumerate() {
        int(
            &mut con,
            &["LOCK.RELEASE", "k", &format!("o{}", i as i64 - 1)],
        );
        let (wait, outcome) = r.outcome();
        assert_eq!(wait, *id, "grant {i} out of order");
        assert!(outcome.parse::<i64>().is_ok_and(|t| t > 0), "{outcome}");
    }
    assert_eq!(
        int(&mut con, &["LOCK.RELEASE", "k", &format!("o{}", n - 1)]),
        0
    );
    assert_eq!(
        support::info_field(&mut con, "rlock", "rlock_waiters").as_deref(),
        Some("0")
    );
}

#[test]
fn a_demotion_with_a_parked_grants_call_leaves_the_server_running() {
    let master = Server::start();
    let mut server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "a"]);
    let mut mailbox = Receiver::resp2(&server);
    let to = mailbox.id.to_string();
    queued(queued_of(&raw(
        &mut con,
        &["LOCK.WAIT", "k", "b", "TO", &to],
    )));
    mailbox.send(&["LOCK.GRANTS", "BLOCK", "0"]);
    assert!(wait_until(LIMIT, || support::info_field(
        &mut con,
        "clients",
        "blocked_clients"
    )
    .as_deref()
        == Some("1")));
    let port = master.port().to_string();
    raw(&mut con, &["REPLICAOF", "127.0.0.1", &port]);
    // Redis ends the blocked call itself; the ticket's refusal must not reach it again.
    let ended = mailbox.reply();
    assert!(
        error_text(&ended).is_some_and(|e| e.starts_with("UNBLOCKED")),
        "{ended:?}"
    );
    assert_eq!(
        raw(&mut server.conn(), &["PING"]),
        Value::SimpleString("PONG".to_owned())
    );
    assert!(server.is_running(), "{}", server.log());
}

/// The ticket commands of the other families refuse a push they cannot make in their own
/// name, with the same reasons as `LOCK.WAIT`.
#[test]
fn each_ticket_command_names_itself_when_it_cannot_push() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["SEM.PERMITS", "s", "1"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "a", "1"]);
    int(&mut con, &["RWLOCK.ACQUIRE", "r", "a", "WRITE"]);
    int(&mut con, &["LATCH.SET", "l", "1"]);
    let mut plain = Receiver::resp2(&server);
    let refused = |reply: Value| error_text(&reply).unwrap_or_else(|| panic!("{reply:?}"));
    let calls: [(&str, &[&str]); 3] = [
        ("SEM.WAIT", &["SEM.WAIT", "s", "b", "1"]),
        ("RWLOCK.WAIT", &["RWLOCK.WAIT", "r", "b", "READ"]),
        ("LATCH.WAIT", &["LATCH.WAIT", "l"]),
    ];
    for (name, call) in calls {
        let text = refused(plain.call(call));
        assert_eq!(text, format!("ERR {name} without TO needs RESP3 (HELLO 3)"));
    }
    plain.call(&["HELLO", "3"]);
    for (name, call) in calls {
        let text = refused(plain.call(call));
        let expected = format!(
            "ERR subscribe to __rlock__:{} first ({name} without TO pushes outcomes there)",
            plain.id
        );
        assert_eq!(text, expected);
        let script = format!("return redis.call('{name}', {})", {
            let args: Vec<String> = call[1..].iter().map(|a| format!("'{a}'")).collect();
            args.join(", ")
        });
        let text = refused(plain.call(&["EVAL", &script, "0"]));
        assert!(
            text.contains(&format!("{name} inside a script needs TO")),
            "{text}"
        );
    }
    let queued = support::info_field(&mut con, "rlock", "rlock_waiters");
    assert_eq!(queued.as_deref(), Some("0"), "nothing was queued");
}
