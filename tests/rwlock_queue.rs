//! A writer queued first behind readers stops the readers that come after it; when that
//! writer leaves the queue without the lock, however it leaves (its `WAIT` runs out, its
//! client goes, its ticket is cancelled, its ticket's receiver goes, its ticket's `WAIT` runs
//! out), the readers behind it share the lock at once, not when their own waits run out.

#[path = "rwlock/client.rs"]
#[allow(dead_code)]
mod client;
mod support;

use std::sync::mpsc;
use std::time::Duration;

use client::{granted, holders, queued, rw_info, waiter};
use redis::Value;
use support::{int, raw, Server};

/// How the writer at the head of the queue leaves it.
#[derive(Debug, Clone, Copy)]
enum Leaves {
    WaitRunsOut,
    ClientGoes,
    TicketCancelled,
    ReceiverGoes,
    TicketWaitRunsOut,
}

/// The queued ticket's wait id, from `RWLOCK.WAIT`'s `[queued, id]`.
fn queued_ticket(reply: &Value) -> i64 {
    match reply {
        Value::Array(pair) if support::text_of(&pair[0]).as_deref() == Some("queued") => {
            match pair[1] {
                Value::Int(id) => id,
                ref other => panic!("wait id {other:?}"),
            }
        }
        other => panic!("the writer's ticket was not queued: {other:?}"),
    }
}

fn writer_leaves(how: Leaves) {
    let server = Server::start();
    let mut con = server.conn();
    int(
        &mut con,
        &["RWLOCK.ACQUIRE", "k", "r1", "READ", "LEASE", "60000"],
    );
    // The writer's connection, and for tickets the receiver's.
    let mut writer_con = server.conn();
    let writer_id = int(&mut writer_con, &["CLIENT", "ID"]).to_string();
    let mut receiver = server.conn();
    let receiver_id = int(&mut receiver, &["CLIENT", "ID"]).to_string();
    let mut blocked: Option<mpsc::Receiver<Value>> = None;
    let mut ticket = 0;
    match how {
        Leaves::WaitRunsOut | Leaves::ClientGoes => {
            let wait = if matches!(how, Leaves::WaitRunsOut) {
                "300"
            } else {
                "0"
            };
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                let args = ["RWLOCK.ACQUIRE", "k", "w", "WRITE", "WAIT", wait];
                let _ = tx.send(support::try_raw(&mut writer_con, &args).unwrap_or(Value::Nil));
            });
            blocked = Some(rx);
        }
        Leaves::TicketCancelled | Leaves::ReceiverGoes | Leaves::TicketWaitRunsOut => {
            let wait = if matches!(how, Leaves::TicketWaitRunsOut) {
                "300"
            } else {
                "0"
            };
            let args = [
                "RWLOCK.WAIT",
                "k",
                "w",
                "WRITE",
                "WAIT",
                wait,
                "TO",
                &receiver_id,
            ];
            ticket = queued_ticket(&raw(&mut writer_con, &args));
        }
    }
    queued(&mut con, "k", 1);
    let r2 = waiter(&server, "k", "r2", "READ");
    queued(&mut con, "k", 2);
    assert_eq!(
        client::queue_modes(&rw_info(&mut con, "k")),
        vec!["write".to_owned(), "read".to_owned()]
    );
    match how {
        Leaves::ClientGoes => {
            raw(&mut con, &["CLIENT", "KILL", "ID", &writer_id]);
        }
        Leaves::TicketCancelled => {
            let cancel = ["LOCK.CANCEL", "k", &ticket.to_string()];
            assert_eq!(int(&mut con, &cancel), 0);
        }
        Leaves::ReceiverGoes => {
            raw(&mut con, &["CLIENT", "KILL", "ID", &receiver_id]);
        }
        Leaves::WaitRunsOut | Leaves::TicketWaitRunsOut => {}
    }
    // r2 waits up to 20 s: a token within `client::LIMIT` (10 s) is the writer's leaving.
    let token = granted(&r2);
    assert!(token > 0);
    let info = rw_info(&mut con, "k");
    let mut readers: Vec<String> = holders(&info).into_iter().map(|h| h.0).collect();
    readers.sort();
    assert_eq!(readers, vec!["r1".to_owned(), "r2".to_owned()], "{how:?}");
    assert_eq!(info.waiters, 0);
    if let Some(rx) = blocked.filter(|_| matches!(how, Leaves::WaitRunsOut)) {
        assert_eq!(rx.recv_timeout(client::LIMIT), Ok(Value::Nil));
    }
}

#[test]
fn readers_behind_a_writer_whose_wait_runs_out_come_in() {
    writer_leaves(Leaves::WaitRunsOut);
}

#[test]
fn readers_behind_a_writer_whose_client_goes_come_in() {
    writer_leaves(Leaves::ClientGoes);
}

#[test]
fn readers_behind_a_cancelled_writers_ticket_come_in() {
    writer_leaves(Leaves::TicketCancelled);
}

#[test]
fn readers_behind_a_writers_ticket_whose_receiver_goes_come_in() {
    writer_leaves(Leaves::ReceiverGoes);
}

#[test]
fn readers_behind_a_writers_ticket_whose_wait_runs_out_come_in() {
    writer_leaves(Leaves::TicketWaitRunsOut);
}

/// A writer that leaves while another writer holds the lock lets nobody in.
#[test]
fn a_reader_behind_a_writer_that_leaves_still_waits_for_the_holding_writer() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["RWLOCK.ACQUIRE", "k", "w0", "WRITE"]);
    let mut w1_con = server.conn();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let args = ["RWLOCK.ACQUIRE", "k", "w1", "WRITE", "WAIT", "200"];
        let _ = tx.send(raw(&mut w1_con, &args));
    });
    queued(&mut con, "k", 1);
    let r = waiter(&server, "k", "r", "READ");
    queued(&mut con, "k", 2);
    assert_eq!(rx.recv_timeout(client::LIMIT), Ok(Value::Nil));
    queued(&mut con, "k", 1);
    assert!(
        r.recv_timeout(Duration::from_millis(300)).is_err(),
        "a reader beside a writer"
    );
    assert_eq!(int(&mut con, &["RWLOCK.RELEASE", "k", "w0", "WRITE"]), 0);
    assert!(granted(&r) > 0);
}
