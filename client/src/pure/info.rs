//! `LOCK.INFO`'s reply.

use std::time::Duration;

use redis::{RedisResult, Value};

use crate::pure::reply::{pairs, ttl};

/// The state of a lock as `LOCK.INFO` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct LockInfo {
    /// The holder's owner id.
    pub owner: String,
    /// How many times the holder holds it (reentry count).
    pub holds: u64,
    /// The time left on the lease; `None` if the key has no TTL.
    pub ttl: Option<Duration>,
    /// The fencing token of the current holding (0 for locks made by script-based clients).
    pub token: u64,
    /// Clients queued in `LOCK.ACQUIRE ... WAIT` for it on this node.
    pub waiters: u64,
}

impl LockInfo {
    /// Reads a `LOCK.INFO` reply: nil, a RESP2 flat field-value array, or a RESP3 map.
    pub(crate) fn from_reply(reply: Value) -> RedisResult<Option<LockInfo>> {
        let Some(pairs) = pairs(reply, MALFORMED)? else {
            return Ok(None);
        };
        let mut info = LockInfo {
            owner: String::new(),
            holds: 0,
            ttl: None,
            token: 0,
            waiters: 0,
        };
        for (field, value) in pairs {
            let field: String = redis::from_redis_value(field)?;
            match field.as_str() {
                "owner" => info.owner = redis::from_redis_value(value)?,
                "holds" => info.holds = redis::from_redis_value(value)?,
                "ttl" => info.ttl = ttl(redis::from_redis_value(value)?),
                "token" => info.token = redis::from_redis_value(value)?,
                "waiters" => info.waiters = redis::from_redis_value(value)?,
                _ => {}
            }
        }
        Ok(Some(info))
    }
}

const MALFORMED: &str = "malformed LOCK.INFO reply";

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn fields(ttl: i64) -> Vec<Value> {
        vec![
            bulk("owner"),
            bulk("u:1"),
            bulk("holds"),
            Value::Int(2),
            bulk("ttl"),
            Value::Int(ttl),
            bulk("token"),
            Value::Int(42),
            bulk("waiters"),
            Value::Int(3),
        ]
    }

    #[test]
    fn nil_means_no_lock() {
        assert_eq!(LockInfo::from_reply(Value::Nil).unwrap(), None);
    }

    #[test]
    fn resp2_flat_array_is_read_in_order() {
        let info = LockInfo::from_reply(Value::Array(fields(1500)))
            .unwrap()
            .unwrap();
        assert_eq!(info.owner, "u:1");
        assert_eq!(info.holds, 2);
        assert_eq!(info.ttl, Some(Duration::from_millis(1500)));
        assert_eq!(info.token, 42);
        assert_eq!(info.waiters, 3);
    }

    #[test]
    fn resp3_map_and_no_ttl_are_read() {
        let flat = fields(-1);
        let map = flat
            .chunks(2)
            .map(|p| (p[0].clone(), p[1].clone()))
            .collect();
        let info = LockInfo::from_reply(Value::Map(map)).unwrap().unwrap();
        assert_eq!(info.ttl, None);
        assert_eq!(info.holds, 2);
    }

    #[test]
    fn malformed_reply_is_an_error() {
        let err = LockInfo::from_reply(Value::Array(vec![bulk("owner")])).unwrap_err();
        assert_eq!(err.kind(), redis::ErrorKind::UnexpectedReturnType);
        assert!(LockInfo::from_reply(Value::Int(1)).is_err());
    }
}
