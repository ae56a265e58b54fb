//! A semaphore's queue (`SEM.*`; docs/commands/sem.acquire.md): served in order without
//! barging (a large request at the head is served first; smaller ones behind it wait), and a
//! first wait that leaves (its `WAIT` runs out, it is cancelled, its client goes) lets the
//! waits behind it in at once; tickets (`SEM.WAIT`) wait in the same queue.

#[allow(dead_code)]
#[path = "semaphore/client.rs"]
mod client;
mod support;

use std::time::{Duration, Instant};

use client::{granted, held, queued, sem_info, still_waiting, waiter};
use redis::Value;
use support::{expect_nil, int, raw, Server};

#[test]
fn the_head_of_the_queue_is_served_first_and_later_small_asks_wait_behind_it() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["SEM.PERMITS", "s", "4"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "h", "3"]);
    let big = waiter(&server, "s", "big", 3);
    queued(&mut con, "s", 1);
    // One permit is free, but a newcomer does not pass the queued wait.
    expect_nil(&mut con, &["SEM.ACQUIRE", "s", "late", "1"]);
    let small = waiter(&server, "s", "small", 1);
    queued(&mut con, "s", 2);
    // Nor does the holder adding a permit.
    expect_nil(&mut con, &["SEM.ACQUIRE", "s", "h", "1"]);
    let info = sem_info(&mut con, "s").unwrap();
    assert_eq!(info.queue, vec![("big".into(), 3), ("small".into(), 1)]);
    assert_eq!(int(&mut con, &["SEM.RELEASE", "s", "h", "1"]), 2);
    still_waiting(&big);
    still_waiting(&small);
    int(&mut con, &["SEM.RELEASE", "s", "h"]);
    granted(&big);
    granted(&small);
    assert_eq!(
        held(&mut con, "s"),
        vec![("big".into(), 3), ("small".into(), 1)]
    );
}

#[test]
fn a_wait_times_out_and_a_disconnected_waiter_leaves_the_queue() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["SEM.PERMITS", "s", "1"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "a", "1"]);
    let start = Instant::now();
    expect_nil(&mut con, &["SEM.ACQUIRE", "s", "b", "1", "WAIT", "100"]);
    assert!(start.elapsed() >= Duration::from_millis(100));
    queued(&mut con, "s", 0);
    let mut blocked = server.conn();
    let who = int(&mut blocked, &["CLIENT", "ID"]);
    std::thread::spawn(move || {
        let _ = raw(&mut blocked, &["SEM.ACQUIRE", "s", "d", "1", "WAIT", "0"]);
    });
    queued(&mut con, "s", 1);
    raw(&mut con, &["CLIENT", "KILL", "ID", &who.to_string()]);
    queued(&mut con, "s", 0);
    int(&mut con, &["SEM.RELEASE", "s", "a"]);
    assert_eq!(held(&mut con, "s"), vec![]);
}

#[test]
fn tickets_queue_and_bring_the_token_by_lock_grants_or_are_cancelled() {
    let server = Server::start();
    let mut con = server.conn();
    let me = int(&mut con, &["CLIENT", "ID"]).to_string();
    int(&mut con, &["SEM.PERMITS", "s", "2"]);
    let reply = raw(&mut con, &["SEM.WAIT", "s", "a", "2", "TO", &me]);
    let Value::Array(pair) = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(support::text_of(&pair[0]).as_deref(), Some("held"));
    let reply = raw(&mut con, &["SEM.WAIT", "s", "b", "1", "TO", &me]);
    let Value::Array(pair) = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(support::text_of(&pair[0]).as_deref(), Some("queued"));
    let Value::Int(first) = pair[1] else { panic!() };
    let reply = raw(&mut con, &["SEM.WAIT", "s", "c", "1", "TO", &me]);
    let Value::Array(pair) = reply else {
        panic!("{reply:?}")
    };
    let Value::Int(second) = pair[1] else {
        panic!()
    };
    assert_eq!(int(&mut con, &["LOCK.CANCEL", "s", &second.to_string()]), 0);
    int(&mut con, &["SEM.RELEASE", "s", "a", "1"]);
    let grants = raw(&mut con, &["LOCK.GRANTS", "BLOCK", "5000"]);
    let text = format!("{grants:?}");
    assert!(text.contains(&first.to_string()), "{text}");
    assert_eq!(held(&mut con, "s"), vec![("a".into(), 1), ("b".into(), 1)]);
    assert_eq!(sem_info(&mut con, "s").unwrap().waiters, 0);
}

#[test]
fn a_head_whose_wait_runs_out_lets_the_smaller_waits_behind_it_in() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["SEM.PERMITS", "s", "2"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "a", "1", "LEASE", "60000"]);
    let mut big_con = server.conn();
    let big = std::thread::spawn(move || {
        raw(
            &mut big_con,
            &["SEM.ACQUIRE", "s", "big", "2", "WAIT", "300"],
        )
    });
    queued(&mut con, "s", 1);
    let small = waiter(&server, "s", "small", 1);
    queued(&mut con, "s", 2);
    let start = Instant::now();
    granted(&small);
    assert!(
        start.elapsed() < Duration::from_millis(3000),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(big.join().unwrap(), Value::Nil);
    assert_eq!(
        held(&mut con, "s"),
        vec![("a".into(), 1), ("small".into(), 1)]
    );
}

#[test]
fn a_head_that_leaves_by_disconnect_or_cancel_lets_the_waits_behind_it_in() {
    let server = Server::start();
    let mut con = server.conn();
    let me = int(&mut con, &["CLIENT", "ID"]).to_string();
    int(&mut con, &["SEM.PERMITS", "s", "2"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "a", "1", "LEASE", "60000"]);
    let mut big_con = server.conn();
    let big = int(&mut big_con, &["CLIENT", "ID"]).to_string();
    std::thread::spawn(move || {
        support::try_raw(&mut big_con, &["SEM.ACQUIRE", "s", "big", "2", "WAIT", "0"]).ok()
    });
    queued(&mut con, "s", 1);
    let reply = raw(&mut con, &["SEM.WAIT", "s", "ticket", "2", "TO", &me]);
    let Value::Array(pair) = reply else {
        panic!("{reply:?}")
    };
    let Value::Int(ticket) = pair[1] else {
        panic!("{pair:?}")
    };
    let small = waiter(&server, "s", "small", 1);
    queued(&mut con, "s", 3);
    raw(&mut con, &["CLIENT", "KILL", "ID", &big]);
    queued(&mut con, "s", 2);
    still_waiting(&small);
    assert_eq!(int(&mut con, &["LOCK.CANCEL", "s", &ticket.to_string()]), 0);
    granted(&small);
    assert_eq!(
        held(&mut con, "s"),
        vec![("a".into(), 1), ("small".into(), 1)]
    );
}

#[test]
fn a_deleted_semaphore_sends_its_waits_away() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["SEM.PERMITS", "s", "1"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "a", "1"]);
    let w = waiter(&server, "s", "w", 1);
    queued(&mut con, "s", 1);
    assert_eq!(raw(&mut con, &["DEL", "s"]), Value::Int(1));
    let reply = w.recv_timeout(client::LIMIT).expect("hung: no reply");
    assert_eq!(
        support::error_text(&reply).as_deref(),
        Some("ERR rlock: asks for 1 permits; the semaphore has 0")
    );
    assert_eq!(raw(&mut con, &["EXISTS", "s"]), Value::Int(0));
}

/// A first wait that is a ticket leaves when its receiver's connection closes or its own
/// `WAIT` runs out: the smaller waits behind it come in at once.
#[test]
fn a_head_ticket_whose_receiver_goes_or_whose_wait_runs_out_lets_the_waits_behind_it_in() {
    for wait in ["0", "300"] {
        let server = Server::start();
        let mut con = server.conn();
        int(&mut con, &["SEM.PERMITS", "s", "2"]);
        int(&mut con, &["SEM.ACQUIRE", "s", "a", "1", "LEASE", "60000"]);
        let mut receiver = server.conn();
        let receiver_id = int(&mut receiver, &["CLIENT", "ID"]).to_string();
        let ask = [
            "SEM.WAIT",
            "s",
            "big",
            "2",
            "WAIT",
            wait,
            "TO",
            &receiver_id,
        ];
        let reply = raw(&mut con, &ask);
        let Value::Array(pair) = &reply else {
            panic!("{reply:?}")
        };
        assert_eq!(support::text_of(&pair[0]).as_deref(), Some("queued"));
        let small = waiter(&server, "s", "small", 1);
        queued(&mut con, "s", 2);
        if wait == "0" {
            raw(&mut con, &["CLIENT", "KILL", "ID", &receiver_id]);
        }
        granted(&small);
        assert_eq!(
            held(&mut con, "s"),
            vec![("a".into(), 1), ("small".into(), 1)],
            "WAIT {wait}"
        );
    }
}
