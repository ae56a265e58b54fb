//! What a read-write lock's client sees: `RWLOCK.INFO`'s reply, read (RESP2: names and
//! values in turn), and blocking waits on connections of their own.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use redis::Value;

use crate::support::{raw, text_of, wait_until, Server};

pub const LIMIT: Duration = Duration::from_secs(10);

/// A holder as `RWLOCK.INFO` lists it: owner, reads, writes, token.
pub type Holder = (String, i64, i64, i64);

#[derive(Debug)]
pub struct RwInfo {
    pub mode: String,
    /// Owner, reads, writes, ttl, token.
    pub holders: Vec<(String, i64, i64, i64, i64)>,
    pub waiters: i64,
    /// Owner and mode of each queued wait shown.
    pub queue: Vec<(String, String)>,
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(n) => *n,
        other => panic!("expected an integer, got {other:?}"),
    }
}

fn items(v: &Value) -> &[Value] {
    match v {
        Value::Array(items) => items,
        other => panic!("expected an array, got {other:?}"),
    }
}

/// `RWLOCK.INFO key`, or a free lock's (no holder, no waiter) when the key does not exist.
pub fn rw_info(con: &mut redis::Connection, key: &str) -> RwInfo {
    let reply = raw(con, &["RWLOCK.INFO", key]);
    if reply == Value::Nil {
        return RwInfo {
            mode: "free".into(),
            holders: vec![],
            waiters: 0,
            queue: vec![],
        };
    }
    let fields = items(&reply);
    assert_eq!(fields.len(), 8, "RWLOCK.INFO: {reply:?}");
    let name = |i: usize| text_of(&fields[i]).unwrap_or_default();
    assert_eq!(
        [name(0), name(2), name(4), name(6)],
        ["mode", "holders", "waiters", "queue"]
    );
    let holders = items(&fields[3])
        .iter()
        .map(|h| {
            let h = items(h);
            let owner = text_of(&h[0]).unwrap_or_default();
            (owner, int(&h[1]), int(&h[2]), int(&h[3]), int(&h[4]))
        })
        .collect();
    let queue = items(&fields[7])
        .iter()
        .map(|w| {
            let w = items(w);
            (
                text_of(&w[0]).unwrap_or_default(),
                text_of(&w[1]).unwrap_or_default(),
            )
        })
        .collect();
    RwInfo {
        mode: text_of(&fields[1]).unwrap_or_default(),
        holders,
        waiters: int(&fields[5]),
        queue,
    }
}

/// The holders without their ttl.
pub fn holders(info: &RwInfo) -> Vec<Holder> {
    info.holders
        .iter()
        .map(|(o, r, w, _, t)| (o.clone(), *r, *w, *t))
        .collect()
}

/// The modes of the queued waits shown, in order.
pub fn queue_modes(info: &RwInfo) -> Vec<String> {
    info.queue.iter().map(|(_, m)| m.clone()).collect()
}

/// Waits queued on `key`.
pub fn waiters(con: &mut redis::Connection, key: &str) -> i64 {
    rw_info(con, key).waiters
}

/// A blocking `RWLOCK.ACQUIRE key owner mode WAIT 20000` on a connection of its own; its
/// reply arrives on the returned channel.
pub fn waiter(server: &Server, key: &str, owner: &str, mode: &str) -> mpsc::Receiver<Value> {
    let mut con = server.conn();
    let args: Vec<String> = ["RWLOCK.ACQUIRE", key, owner, mode, "WAIT", "20000"]
        .map(str::to_owned)
        .to_vec();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(raw(&mut con, &args));
        // Kept open: a closed connection would leave its queue or give its grant back.
        thread::sleep(Duration::from_secs(30));
    });
    rx
}

/// Waits until `n` waits are queued on `key`.
pub fn queued(con: &mut redis::Connection, key: &str, n: i64) {
    assert!(
        wait_until(LIMIT, || waiters(con, key) == n),
        "hung: {n} waiters never queued on {key}"
    );
}

pub fn granted(rx: &mpsc::Receiver<Value>) -> i64 {
    match rx.recv_timeout(LIMIT) {
        Ok(Value::Int(token)) => token,
        other => panic!("expected a token, got {other:?}"),
    }
}

pub fn still_waiting(rx: &mpsc::Receiver<Value>) {
    assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
}
