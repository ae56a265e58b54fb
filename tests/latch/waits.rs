//! Waits on a countdown latch as its clients see them: blocking `LATCH.AWAIT`s on
//! connections of their own, and the latch's count.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use redis::Value;

use crate::support::{info_field, raw, wait_until, Server};

pub const LIMIT: Duration = Duration::from_secs(10);

/// A blocking `LATCH.AWAIT key WAIT 20000` on a connection of its own; its reply arrives
/// on the returned channel.
pub fn awaiter(server: &Server, key: &str) -> mpsc::Receiver<Value> {
    let mut con = server.conn();
    let key = key.to_owned();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(raw(&mut con, &["LATCH.AWAIT", &key, "WAIT", "20000"]));
        // Kept open: a closed connection would leave its queue.
        thread::sleep(Duration::from_secs(30));
    });
    rx
}

/// The waits queued on the node (`INFO rlock`).
pub fn queued_now(con: &mut redis::Connection) -> i64 {
    info_field(con, "rlock", "rlock_waiters")
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1)
}

/// Waits until `n` waits are queued on the node.
pub fn queued(con: &mut redis::Connection, n: i64) {
    assert!(
        wait_until(LIMIT, || queued_now(con) == n),
        "expected {n} queued waits, have {}",
        queued_now(con)
    );
}

/// The reply of a released `awaiter`.
#[track_caller]
pub fn released(rx: &mpsc::Receiver<Value>) -> Value {
    rx.recv_timeout(LIMIT).expect("the awaiter was released")
}

/// Whether the awaiter is still blocked a moment later.
pub fn still_waiting(rx: &mpsc::Receiver<Value>) {
    assert!(
        rx.recv_timeout(Duration::from_millis(150)).is_err(),
        "released too early"
    );
}

/// `INFO rlock`'s `latch_releases`.
pub fn releases(con: &mut redis::Connection) -> i64 {
    info_field(con, "rlock", "rlock_latch_releases")
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1)
}

/// A `[tag, n]` reply (`LATCH.WAIT`'s).
#[track_caller]
pub fn pair(reply: &Value) -> (String, i64) {
    match reply {
        Value::Array(items) => match (items.first(), items.get(1)) {
            (Some(Value::SimpleString(tag)), Some(Value::Int(n))) => (tag.clone(), *n),
            (Some(Value::BulkString(tag)), Some(Value::Int(n))) => {
                (String::from_utf8_lossy(tag).into_owned(), *n)
            }
            _ => panic!("LATCH.WAIT reply: {reply:?}"),
        },
        other => panic!("LATCH.WAIT reply: {other:?}"),
    }
}
