//! What a semaphore's client sees: `SEM.INFO`'s reply, read (RESP2: names and values in
//! turn), and blocking waits on connections of their own.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use redis::Value;

use crate::support::{raw, text_of, wait_until, Server};

pub const LIMIT: Duration = Duration::from_secs(10);

#[derive(Debug, Default)]
pub struct SemInfo {
    pub total: i64,
    pub available: i64,
    /// Owner, permits, ttl, token.
    pub holders: Vec<(String, i64, i64, i64)>,
    pub waiters: i64,
    /// Owner and permits of each queued wait shown.
    pub queue: Vec<(String, i64)>,
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

/// `SEM.INFO key`; `None` for nil.
pub fn sem_info(con: &mut redis::Connection, key: &str) -> Option<SemInfo> {
    let reply = raw(con, &["SEM.INFO", key]);
    if reply == Value::Nil {
        return None;
    }
    let fields = items(&reply);
    assert_eq!(fields.len(), 10, "SEM.INFO: {reply:?}");
    let name = |i: usize| text_of(&fields[i]).unwrap_or_default();
    assert_eq!(
        [name(0), name(2), name(4), name(6), name(8)],
        ["permits", "available", "holders", "waiters", "queue"]
    );
    let holders = items(&fields[5])
        .iter()
        .map(|h| {
            let h = items(h);
            let owner = text_of(&h[0]).unwrap_or_default();
            (owner, int(&h[1]), int(&h[2]), int(&h[3]))
        })
        .collect();
    let queue = items(&fields[9])
        .iter()
        .map(|w| {
            let w = items(w);
            (text_of(&w[0]).unwrap_or_default(), int(&w[1]))
        })
        .collect();
    Some(SemInfo {
        total: int(&fields[1]),
        available: int(&fields[3]),
        holders,
        waiters: int(&fields[7]),
        queue,
    })
}

/// The holders (owner, permits) in the order listed.
pub fn held(con: &mut redis::Connection, key: &str) -> Vec<(String, i64)> {
    let info = sem_info(con, key).unwrap_or_default();
    let mut held: Vec<_> = info.holders.iter().map(|h| (h.0.clone(), h.1)).collect();
    held.sort();
    held
}

/// A blocking `SEM.ACQUIRE key owner permits [LEASE ms] WAIT 20000` on a connection of its
/// own; its reply arrives on the returned channel.
pub fn waiter(server: &Server, key: &str, owner: &str, permits: i64) -> mpsc::Receiver<Value> {
    let mut con = server.conn();
    let args: Vec<String> = [
        "SEM.ACQUIRE",
        key,
        owner,
        &permits.to_string(),
        "WAIT",
        "20000",
    ]
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
    let count = |con: &mut redis::Connection| sem_info(con, key).map_or(0, |i| i.waiters);
    assert!(
        wait_until(LIMIT, || count(con) == n),
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
