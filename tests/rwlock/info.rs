//! `RWLOCK.INFO`'s reply, read (RESP2: names and values in turn).

use redis::Value;

use crate::support::{raw, text_of};

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
