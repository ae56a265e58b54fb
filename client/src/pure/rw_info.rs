//! `RWLOCK.INFO`'s reply.

use std::time::Duration;

use redis::{RedisResult, Value};

use crate::pure::reply::{self, error, list, pairs};

/// A mode of a read-write lock: who holds it, or what a queued wait asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum RwMode {
    /// Shared: readers hold it (or the wait asks for a read hold).
    Read,
    /// Exclusive: a writer holds it (or the wait asks for a write hold).
    Write,
}

/// One holder of a read-write lock, as `RWLOCK.INFO` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct RwHolder {
    /// The holder's owner id.
    pub owner: String,
    /// Its read holds.
    pub reads: u64,
    /// Its write holds (more than 0 only for the writer).
    pub writes: u64,
    /// The time left on its lease (one lease per holder, for its read and write holds).
    pub ttl: Option<Duration>,
    /// The fencing token of its holding.
    pub token: u64,
}

/// The state of a read-write lock as `RWLOCK.INFO` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct RwLockInfo {
    /// [`RwMode::Write`] while a writer holds it, [`RwMode::Read`] while only readers do.
    pub mode: RwMode,
    /// Every holder.
    pub holders: Vec<RwHolder>,
    /// The waits queued for it on this node.
    pub waiters: u64,
    /// The first (up to 100) queued waits, in the order they are served: owner and mode.
    pub queue: Vec<(String, RwMode)>,
}

impl RwLockInfo {
    /// Reads an `RWLOCK.INFO` reply: nil, a RESP2 flat field-value array, or a RESP3 map.
    pub(crate) fn from_reply(reply: Value) -> RedisResult<Option<RwLockInfo>> {
        let Some(pairs) = pairs(reply, MALFORMED)? else {
            return Ok(None);
        };
        let mut info = RwLockInfo {
            mode: RwMode::Read,
            holders: Vec::new(),
            waiters: 0,
            queue: Vec::new(),
        };
        for (field, value) in pairs {
            let field: String = redis::from_redis_value(field)?;
            match field.as_str() {
                "mode" => info.mode = mode(value)?,
                "holders" => info.holders = list(value, holder)?,
                "waiters" => info.waiters = redis::from_redis_value(value)?,
                "queue" => info.queue = list(value, queued)?,
                _ => {}
            }
        }
        Ok(Some(info))
    }

    /// The holder `owner`, if it holds the lock.
    pub fn holder(&self, owner: &str) -> Option<&RwHolder> {
        self.holders.iter().find(|h| h.owner == owner)
    }
}

fn holder(value: Value) -> RedisResult<RwHolder> {
    let (owner, reads, writes, ttl_ms, token): (String, u64, u64, i64, u64) =
        redis::from_redis_value(value)?;
    let ttl = reply::ttl(ttl_ms);
    Ok(RwHolder {
        owner,
        reads,
        writes,
        ttl,
        token,
    })
}

fn queued(value: Value) -> RedisResult<(String, RwMode)> {
    let (owner, m): (String, Value) = redis::from_redis_value(value)?;
    Ok((owner, mode(m)?))
}

fn mode(value: Value) -> RedisResult<RwMode> {
    let text: String = redis::from_redis_value(value)?;
    match text.to_ascii_lowercase().as_str() {
        "read" => Ok(RwMode::Read),
        "write" => Ok(RwMode::Write),
        other => Err(error(MALFORMED, &format!("unknown mode {other:?}"))),
    }
}

const MALFORMED: &str = "malformed RWLOCK.INFO reply";

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn fields() -> Vec<Value> {
        let holder = |o: &str, r, w, ttl| {
            let ints = [r, w, ttl, 7].map(Value::Int);
            Value::Array([vec![bulk(o)], ints.to_vec()].concat())
        };
        vec![
            bulk("mode"),
            bulk("write"),
            bulk("holders"),
            Value::Array(vec![holder("w", 1, 2, 900), holder("r", 3, 0, -1)]),
            bulk("waiters"),
            Value::Int(1),
            bulk("queue"),
            Value::Array(vec![Value::Array(vec![bulk("q"), bulk("read")])]),
        ]
    }

    #[test]
    fn nil_means_no_lock() {
        assert_eq!(RwLockInfo::from_reply(Value::Nil).unwrap(), None);
    }

    #[test]
    fn resp2_flat_array_and_resp3_map_read_the_same() {
        let flat = RwLockInfo::from_reply(Value::Array(fields())).unwrap();
        let mut items = fields().into_iter();
        let pairs = std::iter::from_fn(|| Some((items.next()?, items.next()?)));
        let map = RwLockInfo::from_reply(Value::Map(pairs.collect())).unwrap();
        assert_eq!(flat, map);
        let info = flat.unwrap();
        assert_eq!(info.mode, RwMode::Write);
        assert_eq!(info.waiters, 1);
        assert_eq!(info.queue, [("q".to_owned(), RwMode::Read)]);
        let w = info.holder("w").unwrap();
        assert_eq!((w.reads, w.writes, w.token), (1, 2, 7));
        assert_eq!(w.ttl, Some(Duration::from_millis(900)));
        assert_eq!(info.holder("r").unwrap().ttl, None);
        assert!(info.holder("x").is_none());
    }

    #[test]
    fn a_reply_of_another_shape_is_an_error() {
        assert!(RwLockInfo::from_reply(Value::Int(1)).is_err());
        let bad_mode = vec![bulk("mode"), bulk("both")];
        assert!(RwLockInfo::from_reply(Value::Array(bad_mode)).is_err());
    }
}
