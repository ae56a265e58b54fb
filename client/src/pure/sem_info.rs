//! `SEM.INFO`'s reply.

use std::time::Duration;

use redis::{RedisResult, Value};

use crate::pure::reply::{self, list, pairs};

/// One holder of a semaphore, as `SEM.INFO` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct SemHolder {
    /// The holder's owner id.
    pub owner: String,
    /// The permits it holds (all its guards' together).
    pub permits: u64,
    /// The time left on its lease (one lease per holder, for all its permits).
    pub ttl: Option<Duration>,
    /// The fencing token of its holding.
    pub token: u64,
}

/// The state of a semaphore as `SEM.INFO` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct SemaphoreInfo {
    /// The total of permits ([`Semaphore::set_permits`](crate::Semaphore::set_permits)).
    pub permits: u64,
    /// The permits nobody holds (0 when the total was lowered below those held).
    pub available: u64,
    /// Every holder whose lease has not ended.
    pub holders: Vec<SemHolder>,
    /// The waits queued for it on this node.
    pub waiters: u64,
    /// The first (up to 100) queued waits, in the order they are served: owner and permits.
    pub queue: Vec<(String, u64)>,
}

impl SemaphoreInfo {
    /// Reads a `SEM.INFO` reply: nil, a RESP2 flat field-value array, or a RESP3 map.
    pub(crate) fn from_reply(reply: Value) -> RedisResult<Option<SemaphoreInfo>> {
        let Some(pairs) = pairs(reply, MALFORMED)? else {
            return Ok(None);
        };
        let mut info = SemaphoreInfo {
            permits: 0,
            available: 0,
            holders: Vec::new(),
            waiters: 0,
            queue: Vec::new(),
        };
        for (field, value) in pairs {
            let field: String = redis::from_redis_value(field)?;
            match field.as_str() {
                "permits" => info.permits = redis::from_redis_value(value)?,
                "available" => info.available = redis::from_redis_value(value)?,
                "holders" => info.holders = list(value, holder)?,
                "waiters" => info.waiters = redis::from_redis_value(value)?,
                "queue" => info.queue = list(value, queued)?,
                _ => {}
            }
        }
        Ok(Some(info))
    }

    /// The holder `owner`, if it holds permits.
    pub fn holder(&self, owner: &str) -> Option<&SemHolder> {
        self.holders.iter().find(|h| h.owner == owner)
    }
}

fn holder(value: Value) -> RedisResult<SemHolder> {
    let (owner, permits, ttl_ms, token): (String, u64, i64, u64) = redis::from_redis_value(value)?;
    let ttl = reply::ttl(ttl_ms);
    Ok(SemHolder {
        owner,
        permits,
        ttl,
        token,
    })
}

fn queued(value: Value) -> RedisResult<(String, u64)> {
    Ok(redis::from_redis_value(value)?)
}

const MALFORMED: &str = "malformed SEM.INFO reply";

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn reads_the_resp2_array_and_nil() {
        let holder = Value::Array(vec![
            bulk("a"),
            Value::Int(2),
            Value::Int(900),
            Value::Int(7),
        ]);
        let queued = Value::Array(vec![bulk("b"), Value::Int(3)]);
        let reply = Value::Array(vec![
            bulk("permits"),
            Value::Int(4),
            bulk("available"),
            Value::Int(2),
            bulk("holders"),
            Value::Array(vec![holder]),
            bulk("waiters"),
            Value::Int(1),
            bulk("queue"),
            Value::Array(vec![queued]),
        ]);
        let info = SemaphoreInfo::from_reply(reply).unwrap().unwrap();
        assert_eq!((info.permits, info.available, info.waiters), (4, 2, 1));
        let a = info.holder("a").unwrap();
        assert_eq!((a.permits, a.token), (2, 7));
        assert_eq!(a.ttl, Some(Duration::from_millis(900)));
        assert_eq!(info.queue, [("b".to_owned(), 3)]);
        assert!(SemaphoreInfo::from_reply(Value::Nil).unwrap().is_none());
        assert!(SemaphoreInfo::from_reply(Value::Int(1)).is_err());
    }
}
