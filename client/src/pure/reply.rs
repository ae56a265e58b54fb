//! The shape shared by the INFO commands' replies (`LOCK.INFO`, `RWLOCK.INFO`, `SEM.INFO`):
//! field-value pairs, lists, times to live.

use std::time::Duration;

use redis::{ErrorKind, RedisError, RedisResult, Value};

/// The field-value pairs of an INFO command's reply (`LOCK.INFO`, `RWLOCK.INFO`,
/// `SEM.INFO`): a RESP2 flat array or a RESP3 map; `None` for nil. Errors say `malformed`.
pub(crate) fn pairs(
    reply: Value,
    malformed: &'static str,
) -> RedisResult<Option<Vec<(Value, Value)>>> {
    let items = match reply {
        Value::Nil => return Ok(None),
        Value::Map(pairs) => return Ok(Some(pairs)),
        Value::Array(items) => items,
        other => return Err(error(malformed, &format!("unexpected reply {other:?}"))),
    };
    if !items.len().is_multiple_of(2) {
        return Err(error(malformed, "odd number of elements"));
    }
    let mut items = items.into_iter();
    let mut pairs = Vec::new();
    while let (Some(field), Some(value)) = (items.next(), items.next()) {
        pairs.push((field, value));
    }
    Ok(Some(pairs))
}

/// A list of an INFO reply (holders, queued waits), each element read by `each`.
pub(crate) fn list<T>(value: Value, each: fn(Value) -> RedisResult<T>) -> RedisResult<Vec<T>> {
    let items: Vec<Value> = redis::from_redis_value(value)?;
    items.into_iter().map(each).collect()
}

/// A time to live in milliseconds as INFO replies give it: `None` when negative (no TTL).
pub(crate) fn ttl(ms: i64) -> Option<Duration> {
    u64::try_from(ms).ok().map(Duration::from_millis)
}

/// An INFO reply that is not of its command's shape: `malformed` says which, `what` how.
pub(crate) fn error(malformed: &'static str, what: &str) -> RedisError {
    RedisError::from((ErrorKind::UnexpectedReturnType, malformed, what.to_owned()))
}
