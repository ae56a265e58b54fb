//! How a Redisson client waits for a lock, as documented: `lock()` tries the script, then
//! (subscribed to the lock's channel) tries again and sleeps on a semaphore until an
//! unlock message releases one permit or the returned TTL runs out, and retries.
//! `LockPubSub` releases one permit per `0` message in each client process, so each
//! release wakes one waiting thread per process; a `1` (a read-write lock's write unlock)
//! releases a permit for every thread waiting then.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use redis::Value;

use crate::side::{Scripts, Side, LEASE_MS};

/// A counting semaphore that can be closed to end every wait (at the end of a run).
#[derive(Default)]
pub struct Latch {
    permits: Mutex<u64>,
    /// Threads in [`Latch::try_acquire`] now.
    sleepers: AtomicU64,
    freed: Condvar,
    closed: AtomicBool,
}

impl Latch {
    pub fn release(&self) {
        *self.permits.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.freed.notify_one();
    }

    /// A permit for every thread waiting now.
    pub fn release_all(&self) {
        let mut permits = self.permits.lock().unwrap_or_else(|p| p.into_inner());
        *permits += self.sleepers.load(Ordering::SeqCst);
        self.freed.notify_all();
    }

    /// Takes a permit, waiting at most `timeout`; false on timeout or when closed.
    pub fn try_acquire(&self, timeout: Duration) -> bool {
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let took = self.take(timeout);
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        took
    }

    fn take(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut permits = self.permits.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if self.is_closed() {
                return false;
            }
            if *permits > 0 {
                *permits -= 1;
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            permits = self
                .freed
                .wait_timeout(permits, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// `n` permits at once.
    pub fn release_many(&self, n: u64) {
        *self.permits.lock().unwrap_or_else(|p| p.into_inner()) += n;
        self.freed.notify_all();
    }

    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let _guard = self.permits.lock().unwrap_or_else(|p| p.into_inner());
        self.freed.notify_all();
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

/// The process's pub/sub connection: subscribes to `channel` and releases one permit
/// of `latch` per `0` message and one per waiting thread per `1` message, until the latch
/// is closed.
pub fn listen(port: u16, channel: &str, latch: Arc<Latch>) -> redis::RedisResult<JoinHandle<()>> {
    listen_with(port, channel, latch, |latch, payload| match payload {
        b"0" => latch.release(),
        b"1" => latch.release_all(),
        _ => {}
    })
}

/// The process's pub/sub connection: subscribes to `channel` and hands each message's
/// payload to `wake` with `latch`, until the latch is closed.
pub fn listen_with(
    port: u16,
    channel: &str,
    latch: Arc<Latch>,
    wake: fn(&Latch, &[u8]),
) -> redis::RedisResult<JoinHandle<()>> {
    let mut con = crate::server::connect(port)?;
    con.set_read_timeout(Some(Duration::from_millis(50)))?;
    let channel = channel.to_owned();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let handle = std::thread::spawn(move || {
        let mut pubsub = con.as_pubsub();
        let subscribed = pubsub.subscribe(&channel);
        let _ = ready_tx.send(subscribed.is_ok());
        while !latch.is_closed() {
            match pubsub.get_message() {
                Ok(msg) => wake(&latch, msg.get_payload_bytes()),
                Err(e) if e.is_timeout() => {}
                Err(_) => return,
            }
        }
    });
    match ready_rx.recv() {
        Ok(true) => Ok(handle),
        _ => Err(redis::RedisError::from(std::io::Error::other(
            "SUBSCRIBE failed",
        ))),
    }
}

/// Redisson's `lock()`: returns when the lock is held, or false when `latch` was closed.
pub fn lock(con: &mut redis::Connection, try_lock: &[u8], latch: &Latch) -> bool {
    if attempt(con, try_lock).is_none() {
        return true;
    }
    // Subscribed now (the process's subscription is shared): try again, then sleep.
    loop {
        let Some(ttl) = attempt(con, try_lock) else {
            return true;
        };
        if latch.is_closed() {
            return false;
        }
        latch.try_acquire(Duration::from_millis(ttl));
    }
}

/// Redisson's `tryLock(waitTime)`: as [`lock`], but each sleep is cut at the time left of
/// `wait`. `Some(true)` when the lock is held, `Some(false)` when `wait` ran out, `None`
/// when `latch` was closed.
pub fn try_lock(
    con: &mut redis::Connection,
    try_lock: &[u8],
    latch: &Latch,
    wait: Duration,
) -> Option<bool> {
    let deadline = Instant::now() + wait;
    loop {
        let Some(ttl) = attempt(con, try_lock) else {
            return Some(true);
        };
        if latch.is_closed() {
            return None;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Some(false);
        }
        latch.try_acquire(left.min(Duration::from_millis(ttl)));
    }
}

/// One `tryLockInner`: `None` when acquired, else the lock's remaining TTL in ms.
fn attempt(con: &mut redis::Connection, try_lock: &[u8]) -> Option<u64> {
    use redis::ConnectionLike;
    match con.req_packed_command(try_lock) {
        Ok(Value::Nil) => None,
        Ok(Value::Int(ttl)) => Some(u64::try_from(ttl).unwrap_or(0)),
        other => panic!("tryLock replied {other:?}"),
    }
}

/// The packed `tryLockInner` call for `key` and `owner`.
pub fn try_lock_packed(scripts: &Scripts, key: &str, owner: &str) -> Vec<u8> {
    Side::Lua
        .acquire(scripts, key, owner, LEASE_MS)
        .get_packed_command()
}
