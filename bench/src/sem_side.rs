//! Scenario 12's two sides (`semaphore.rs`): rlock's `SEM.*` commands, and a Redisson
//! client's calls of the `RPermitExpirableSemaphore` scripts and its way of waiting.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use redis::{Connection, Value};

use crate::clock::now_ns;
use crate::redisson::{self, Latch};
use crate::sem_scripts as scripts;
use crate::sem_table::SemSide;
use crate::server::connect;

/// A fresh semaphore `key` of `permits` on `side`.
pub fn create(con: &mut Connection, side: SemSide, key: &str, permits: u64) {
    let reply: redis::RedisResult<Value> = match side {
        SemSide::Rlock => redis::cmd("SEM.PERMITS").arg(key).arg(permits).query(con),
        SemSide::Redisson => redis::cmd("SET").arg(key).arg(permits).query(con),
    };
    assert!(reply.is_ok(), "creating the semaphore: {reply:?}");
}

pub fn listen(port: u16, key: &str, latch: Arc<Latch>) -> Result<thread::JoinHandle<()>, String> {
    let channel = scripts::channel(key);
    redisson::listen_with(port, &channel, latch, wake).map_err(|e| e.to_string())
}

/// A message carries the permits available: it releases as many permits of the process's
/// semaphore, at most one per thread subscribed (sleeping or not).
fn wake(latch: &Latch, payload: &[u8]) {
    let count: Option<u64> = std::str::from_utf8(payload)
        .ok()
        .and_then(|s| s.parse().ok());
    latch.release_many(count.unwrap_or(0).min(SUBSCRIBED.load(Ordering::SeqCst)));
}

/// The SHA1s of the scripts.
#[derive(Clone)]
pub struct Shas {
    pub acquire: String,
    pub release: String,
}

impl Shas {
    pub fn load(port: u16) -> redis::RedisResult<Shas> {
        let mut con = connect(port)?;
        let mut load = |body: &str| -> redis::RedisResult<String> {
            redis::cmd("SCRIPT").arg("LOAD").arg(body).query(&mut con)
        };
        Ok(Shas {
            acquire: load(scripts::TRY_ACQUIRE)?,
            release: load(scripts::TRY_RELEASE)?,
        })
    }
}

pub fn native_acquire(con: &mut Connection, key: &str, owner: &str, lease_ms: u64) -> bool {
    let mut cmd = redis::cmd("SEM.ACQUIRE");
    cmd.arg(key).arg(owner).arg(1).arg("LEASE").arg(lease_ms);
    match cmd.arg("WAIT").arg(0).query(con) {
        Ok(Value::Int(_)) => true,
        other => panic!("SEM.ACQUIRE replied {other:?}"),
    }
}

pub fn now_ms() -> u64 {
    now_ns() / 1_000_000
}

/// The threads of this process in Redisson's `acquire` past their first try (the ones
/// subscribed to the semaphore's channel).
static SUBSCRIBED: AtomicU64 = AtomicU64::new(0);

/// Redisson's `acquire(leaseTime)` of one permit: true when held, false when `latch` was
/// closed first.
pub fn redisson_acquire(
    con: &mut Connection,
    shas: &Shas,
    latch: &Latch,
    key: &str,
    permit: &str,
    lease_ms: u64,
) -> bool {
    let mut once = || attempt(con, shas, key, permit, lease_ms);
    if once().is_ok() {
        return true;
    }
    SUBSCRIBED.fetch_add(1, Ordering::SeqCst);
    let held = loop {
        let sleep = match once() {
            Ok(()) => break true,
            Err(sleep) => sleep,
        };
        if latch.is_closed() {
            break false;
        }
        latch.try_acquire(sleep.map_or(Duration::from_secs(3600), Duration::from_millis));
    };
    SUBSCRIBED.fetch_sub(1, Ordering::SeqCst);
    held
}

/// One `tryAcquire`: `Ok` when taken, else how long to sleep at most, ms (until the
/// earliest lease end; `None`: until a message).
fn attempt(
    con: &mut Connection,
    shas: &Shas,
    key: &str,
    permit: &str,
    lease_ms: u64,
) -> Result<(), Option<u64>> {
    let now = now_ms();
    let call = scripts::acquire(&shas.acquire, key, permit, now + lease_ms, now);
    match call.query(con) {
        Ok(v) if taken(&v) => Ok(()),
        Ok(Value::BulkString(b)) => Err(nearest(&b).map(|at| at.saturating_sub(now_ms()))),
        Ok(Value::Nil) => Err(None),
        other => panic!("tryAcquire replied {other:?}"),
    }
}

/// Whether a `tryAcquire` reply says the permit was taken (`OK`).
pub fn taken(reply: &Value) -> bool {
    match reply {
        Value::Okay => true,
        Value::SimpleString(s) => s == "OK",
        Value::BulkString(b) => b == b"OK",
        _ => false,
    }
}

/// The earliest lease end in a `:<ms>` reply.
pub fn nearest(reply: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(reply).ok()?.strip_prefix(':')?;
    text.parse::<f64>().ok().map(|ms| ms as u64)
}

pub fn release(con: &mut Connection, side: SemSide, shas: &Shas, key: &str, owner: &str, id: &str) {
    let reply: redis::RedisResult<Value> = match side {
        SemSide::Rlock => redis::cmd("SEM.RELEASE").arg(key).arg(owner).query(con),
        SemSide::Redisson => scripts::release(&shas.release, key, id, now_ms()).query(con),
    };
    assert!(matches!(reply, Ok(Value::Int(_))), "release: {reply:?}");
}
