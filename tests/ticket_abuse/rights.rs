//! Who may send a ticket where, and who may cancel it.

use redis::Value;

use crate::support::{error_text, int, raw, Server};
use crate::{add_user, client_id, grants, stat, wait};

const OTHER_USER: &str = "ERR TO names connection";
const NOT_YOURS: &str = "ERR LOCK.CANCEL: wait";
const CANCELLED: &str = "-CANCELLED the wait was cancelled by LOCK.CANCEL";

#[track_caller]
fn refused_with(reply: &Value, start: &str) -> String {
    let text = error_text(reply).unwrap_or_else(|| panic!("expected an error, got {reply:?}"));
    assert!(text.starts_with(start), "{text}");
    text
}

#[test]
fn to_names_only_connections_of_the_callers_user() {
    let server = Server::start();
    let mut con = server.conn();
    add_user(&mut con, "alice");
    int(&mut con, &["LOCK.ACQUIRE", "L", "holder"]);
    let mut alice = server.conn_as("alice", "pw");
    let mut alice2 = server.conn_as("alice", "pw");
    let (alice_id, default_id) = (client_id(&mut alice), client_id(&mut con));
    let reply = raw(
        &mut con,
        &["LOCK.WAIT", "L", "x", "TO", &alice_id.to_string()],
    );
    let text = refused_with(&reply, OTHER_USER);
    assert!(text.contains(&alice_id.to_string()), "{text}");
    let reply = raw(
        &mut alice,
        &["LOCK.WAIT", "L", "y", "TO", &default_id.to_string()],
    );
    refused_with(&reply, OTHER_USER);
    assert_eq!(stat(&mut con, "rlock_waiters"), 0, "nothing was queued");
    // Another connection of the same user, and the caller itself, are fine.
    wait(&mut alice2, "L", "z", &["TO", &alice_id.to_string()]);
    wait(&mut alice, "L", "w", &["TO", &alice_id.to_string()]);
    assert_eq!(stat(&mut con, "rlock_waiters"), 2);
}

#[test]
fn a_connection_of_another_user_cannot_cancel_a_wait() {
    let server = Server::start();
    let mut con = server.conn();
    add_user(&mut con, "mallory");
    int(&mut con, &["LOCK.ACQUIRE", "L", "holder"]);
    let mut receiver = server.conn();
    let to = client_id(&mut receiver).to_string();
    let id = wait(&mut con, "L", "x", &["TO", &to]).to_string();
    let mut mallory = server.conn_as("mallory", "pw");
    let reply = raw(&mut mallory, &["LOCK.CANCEL", "L", &id]);
    let text = refused_with(&reply, NOT_YOURS);
    assert!(text.contains(&id), "{text}");
    assert_eq!(
        stat(&mut con, "rlock_waiters"),
        1,
        "the wait is still queued"
    );
    // Its grant, unread in the mailbox, is not theirs to take either.
    int(&mut con, &["LOCK.RELEASE", "L", "holder"]);
    refused_with(&raw(&mut mallory, &["LOCK.CANCEL", "L", &id]), NOT_YOURS);
    let read = grants(&mut receiver);
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].0.to_string(), id);
    assert!(read[0].1.parse::<i64>().expect("a token") > 0, "{read:?}");
}

#[test]
fn the_sender_or_the_receiver_cancels_silently() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "L", "holder"]);
    let mut receiver = server.conn();
    let to = client_id(&mut receiver).to_string();
    let by_sender = wait(&mut con, "L", "x", &["TO", &to]).to_string();
    let by_receiver = wait(&mut con, "L", "y", &["TO", &to]).to_string();
    assert_eq!(int(&mut con, &["LOCK.CANCEL", "L", &by_sender]), 0);
    assert_eq!(int(&mut receiver, &["LOCK.CANCEL", "L", &by_receiver]), 0);
    assert_eq!(grants(&mut receiver), []);
    assert_eq!(stat(&mut con, "rlock_waiters"), 0);
}

#[test]
fn a_cancel_by_another_connection_of_the_user_is_told_to_the_receiver() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "L", "holder"]);
    let mut receiver = server.conn();
    let mut third = server.conn();
    let to = client_id(&mut receiver).to_string();
    let queued = wait(&mut con, "L", "x", &["TO", &to]);
    let granted = wait(&mut con, "L", "y", &["TO", &to]);
    assert_eq!(
        int(&mut third, &["LOCK.CANCEL", "L", &queued.to_string()]),
        0
    );
    int(&mut con, &["LOCK.RELEASE", "L", "holder"]);
    // Granted into the mailbox, unread: the canceller holds the lock now.
    let token = int(&mut third, &["LOCK.CANCEL", "L", &granted.to_string()]);
    assert!(token > 0);
    let read = grants(&mut receiver);
    let expected = [
        (queued, CANCELLED.to_owned()),
        (granted, CANCELLED.to_owned()),
    ];
    assert_eq!(read, expected);
    assert_eq!(int(&mut third, &["LOCK.RELEASE", "L", "y"]), 0);
    assert_eq!(stat(&mut con, "rlock_unread_outcomes"), 0);
}
