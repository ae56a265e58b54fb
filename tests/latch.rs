//! The countdown latch (`LATCH.*`; docs/commands/latch.set.md and the pages beside it):
//! set once, counted down to zero, which deletes the key, publishes `0` on Redisson's
//! channel and releases every wait, blocked or ticket, in one pass.

#[path = "tickets/receiver.rs"]
#[allow(dead_code)]
mod receiver;
mod support;
#[path = "latch/waits.rs"]
mod waits;

use receiver::Receiver;
use redis::Value;
use support::{expect_error, int, raw, Server, Subscriber};
use waits::{awaiter, pair, queued, queued_now, released, releases, still_waiting};

/// Redisson's latch channel of `key`.
fn latch_channel(key: &str) -> Vec<u8> {
    format!("redisson_countdownlatch__channel__{{{key}}}").into_bytes()
}

#[test]
fn a_count_is_set_only_once_and_its_setting_is_published() {
    let server = Server::start();
    let mut sub = Subscriber::plain(&server, &latch_channel("k"));
    let mut con = server.conn();
    assert_eq!(int(&mut con, &["LATCH.SET", "k", "3"]), 1);
    assert_eq!(int(&mut con, &["LATCH.SET", "k", "5"]), 0);
    assert_eq!(int(&mut con, &["LATCH.COUNT", "k"]), 3);
    assert_eq!(
        raw(&mut con, &["GET", "k"]),
        Value::BulkString(b"3".to_vec())
    );
    assert_eq!(sub.next().payload, b"1");
}

#[test]
fn counting_down_to_zero_releases_every_wait_in_one_pass() {
    let server = Server::start();
    let mut sub = Subscriber::plain(&server, &latch_channel("k"));
    let mut con = server.conn();
    int(&mut con, &["LATCH.SET", "k", "2"]);
    assert_eq!(sub.next().payload, b"1");
    let blocked = [awaiter(&server, "k"), awaiter(&server, "k")];
    queued(&mut con, 2);
    let mut r = Receiver::push(&server);
    let tickets: Vec<i64> = (0..2)
        .map(|_| match pair(&r.call(&["LATCH.WAIT", "k"])) {
            (tag, id) if tag == "queued" => id,
            other => panic!("LATCH.WAIT: {other:?}"),
        })
        .collect();
    queued(&mut con, 4);
    assert_eq!(int(&mut con, &["LATCH.COUNTDOWN", "k"]), 1);
    still_waiting(&blocked[0]);
    assert_eq!(queued_now(&mut con), 4);
    // Every wait ends within the one command that reached zero.
    let answers = redis::pipe()
        .cmd("LATCH.COUNTDOWN")
        .arg("k")
        .cmd("INFO")
        .arg("rlock")
        .query::<(i64, String)>(&mut con)
        .expect("countdown");
    assert_eq!(answers.0, 0);
    assert!(answers.1.contains("rlock_waiters:0\r\n"), "{}", answers.1);
    for rx in &blocked {
        assert_eq!(released(rx), Value::Int(1));
    }
    for id in tickets {
        assert_eq!(r.outcome(), (id, "1".to_owned()));
    }
    assert_eq!(raw(&mut con, &["EXISTS", "k"]), Value::Int(0));
    assert_eq!(sub.next().payload, b"0");
    assert_eq!(releases(&mut con), 4);
    assert_eq!(int(&mut con, &["LATCH.COUNTDOWN", "k"]), 0);
}

#[test]
fn a_wait_at_zero_or_on_no_count_answers_at_once() {
    let server = Server::start();
    let mut con = server.conn();
    assert_eq!(int(&mut con, &["LATCH.AWAIT", "k"]), 1);
    assert_eq!(int(&mut con, &["LATCH.COUNT", "k"]), 0);
    assert_eq!(int(&mut con, &["LATCH.COUNTDOWN", "k"]), 0);
    assert_eq!(raw(&mut con, &["EXISTS", "k"]), Value::Int(0));
    assert_eq!(
        pair(&raw(&mut con, &["LATCH.WAIT", "k"])),
        ("done".into(), 1)
    );
    // A count Redisson's countDown left at zero or below counts as zero.
    raw(&mut con, &["SET", "z", "0"]);
    assert_eq!(int(&mut con, &["LATCH.AWAIT", "z", "WAIT", "10000"]), 1);
    assert_eq!(int(&mut con, &["LATCH.COUNT", "z"]), 0);
}

#[test]
fn a_wait_that_runs_out_answers_0_and_leaves() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LATCH.SET", "k", "1"]);
    assert_eq!(int(&mut con, &["LATCH.AWAIT", "k", "WAIT", "50"]), 0);
    let mut r = Receiver::push(&server);
    let (tag, id) = pair(&r.call(&["LATCH.WAIT", "k", "WAIT", "50"]));
    assert_eq!(tag, "queued");
    assert_eq!(r.outcome(), (id, "0".to_owned()));
    assert_eq!(queued_now(&mut con), 0);
    // Inside MULTI it answers at once.
    let (_, answer): ((), i64) = redis::pipe()
        .atomic()
        .cmd("LATCH.AWAIT")
        .arg("k")
        .query::<Vec<i64>>(&mut con)
        .map(|v| ((), v[0]))
        .expect("multi");
    assert_eq!(answer, 0);
    assert_eq!(int(&mut con, &["LATCH.COUNT", "k"]), 1);
}

#[test]
fn a_closed_waiter_leaves_and_a_cancelled_ticket_too() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LATCH.SET", "k", "1"]);
    let mut gone = server.conn();
    let id = int(&mut gone, &["CLIENT", "ID"]);
    gone.send_packed_command(&redis::cmd("LATCH.AWAIT").arg("k").get_packed_command())
        .expect("send");
    queued(&mut con, 1);
    int(&mut con, &["CLIENT", "KILL", "ID", &id.to_string()]);
    queued(&mut con, 0);
    let mut r = Receiver::push(&server);
    let (_, wait) = pair(&r.call(&["LATCH.WAIT", "k"]));
    queued(&mut con, 1);
    assert_eq!(int(&mut con, &["LOCK.CANCEL", "k", &wait.to_string()]), 0);
    queued(&mut con, 0);
    assert_eq!(int(&mut con, &["LATCH.COUNTDOWN", "k"]), 0);
    assert_eq!(releases(&mut con), 0);
}

#[test]
fn bad_input_changes_nothing() {
    let server = Server::start();
    let mut con = server.conn();
    raw(&mut con, &["SET", "s", "abc"]);
    raw(&mut con, &["HSET", "h", "f", "1"]);
    for key in ["s", "h"] {
        for command in [
            vec!["LATCH.SET", key, "2"],
            vec!["LATCH.COUNTDOWN", key],
            vec!["LATCH.COUNT", key],
            vec!["LATCH.AWAIT", key],
            vec!["LATCH.WAIT", key],
        ] {
            expect_error(&mut con, &command, "WRONGTYPE key is not a latch");
        }
    }
    assert_eq!(
        raw(&mut con, &["GET", "s"]),
        Value::BulkString(b"abc".to_vec())
    );
    for count in ["0", "-1", "x", "1.5"] {
        expect_error(
            &mut con,
            &["LATCH.SET", "k", count],
            "ERR count must be a positive integer",
        );
    }
    expect_error(
        &mut con,
        &["LATCH.AWAIT", "k", "WAIT", "-1"],
        "ERR WAIT must not be negative",
    );
    let arity = raw(&mut con, &["LATCH.COUNT", "k", "x"]);
    let text = support::error_text(&arity).unwrap_or_default();
    assert!(
        text.starts_with("ERR wrong number of arguments"),
        "{arity:?}"
    );
    assert_eq!(raw(&mut con, &["EXISTS", "k"]), Value::Int(0));
}

#[test]
fn a_mailed_ticket_reads_1_when_the_latch_opens_and_0_when_its_wait_runs_out() {
    let server = Server::start();
    let mut con = server.conn();
    let mut mailbox = Receiver::resp2(&server);
    let to = mailbox.id.to_string();
    int(&mut con, &["LATCH.SET", "k", "1"]);
    let (_, late) = pair(&raw(
        &mut con,
        &["LATCH.WAIT", "k", "WAIT", "20", "TO", &to],
    ));
    let (_, opened) = pair(&raw(&mut con, &["LATCH.WAIT", "k", "TO", &to]));
    assert!(support::wait_until(waits::LIMIT, || queued_now(&mut con) == 1));
    assert_eq!(int(&mut con, &["LATCH.COUNTDOWN", "k"]), 0);
    let mail = mailbox.call(&["LOCK.GRANTS"]);
    let expected = [late, 0, opened, 1].map(Value::Int).to_vec();
    assert_eq!(mail, Value::Array(expected));
    // A cancel after the outcome went out finds nothing: a latch's outcome holds nothing.
    assert_eq!(
        raw(&mut con, &["LOCK.CANCEL", "k", &opened.to_string()]),
        Value::Nil
    );
}
