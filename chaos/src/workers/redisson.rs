//! Redisson-style clients on the same keys: `RLock`'s Lua scripts (the tests' copies),
//! tried again on each release message or every 50 ms until the wait runs out. They have no fencing token: their sections count for
//! overlaps only, held from the send of the script that took the lock until its lease.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::raw::{resource_conn, section, Target};
use super::{Ctx, Draft, LEASE};

const TRY_LOCK: &str = include_str!("../../../tests/support/redisson/try_lock.lua");
const UNLOCK: &str = include_str!("../../../tests/support/redisson/unlock.lua");
const CHANNEL_PREFIX: &str = "redisson_lock__channel";

fn open(port: u16) -> Option<redis::Connection> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).ok()?;
    let conn = client
        .get_connection_with_timeout(Duration::from_secs(1))
        .ok()?;
    conn.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    Some(conn)
}

/// Tries the lock until `wait` runs out; the send time of the attempt that took it. As
/// Redisson does, it listens on the lock's channel (on `sub`, if it could be opened) while
/// it waits, and tries again when the release message comes, or after the lock's TTL, at
/// most 50 ms.
fn take(
    conn: &mut redis::Connection,
    sub: Option<&mut redis::Connection>,
    key: &str,
    owner: &str,
    wait: Duration,
) -> redis::RedisResult<Option<Instant>> {
    let mut listener = sub.map(|c| c.as_pubsub());
    if let Some(l) = listener.as_mut() {
        if l.subscribe(channel(key)).is_err() {
            listener = None;
        }
    }
    let taken = try_until(conn, listener.as_mut(), key, owner, Instant::now() + wait);
    if let Some(l) = listener.as_mut() {
        // Leaving pub/sub mode (when the listener is dropped) reads its confirmations.
        let _ = l.set_read_timeout(Some(Duration::from_secs(2)));
    }
    taken
}

fn try_until(
    conn: &mut redis::Connection,
    mut listener: Option<&mut redis::PubSub<'_>>,
    key: &str,
    owner: &str,
    until: Instant,
) -> redis::RedisResult<Option<Instant>> {
    let script = redis::Script::new(TRY_LOCK);
    loop {
        let sent = Instant::now();
        let pttl: Option<i64> = script
            .key(key)
            .arg(LEASE.as_millis() as u64)
            .arg(owner)
            .invoke(conn)?;
        let Some(pttl) = pttl else {
            return Ok(Some(sent));
        };
        if Instant::now() >= until {
            return Ok(None);
        }
        let pause = Duration::from_millis(pttl.clamp(1, 50) as u64);
        match listener.as_mut() {
            Some(l) => {
                if l.set_read_timeout(Some(pause)).is_ok() {
                    let _ = l.get_message();
                } else {
                    std::thread::sleep(pause);
                }
            }
            None => std::thread::sleep(pause),
        }
    }
}

/// The release channel of `key`.
fn channel(key: &str) -> String {
    format!("{CHANNEL_PREFIX}:{{{key}}}")
}

/// One worker thread until the run stops.
pub fn run(ctx: Arc<Ctx>, target: Target, name: String) {
    let Some(mut res) = resource_conn(&ctx) else {
        return;
    };
    let owner = format!("redisson:{name}");
    let unlock = redis::Script::new(UNLOCK);
    while !ctx.stopped() {
        let Some(mut conn) = target().and_then(open) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        let mut sub = target().and_then(open);
        while !ctx.stopped() {
            let key = ctx.key();
            let wait = ctx.rng.millis(0, 1500);
            let sent = match take(&mut conn, sub.as_mut(), &key, &owner, wait) {
                Ok(Some(sent)) => sent,
                Ok(None) => continue,
                Err(_) => {
                    ctx.history.acquired(&name, false);
                    break;
                }
            };
            ctx.history.acquired(&name, true);
            let draft = Draft {
                worker: name.clone(),
                key: key.clone(),
                owner: owner.clone(),
                token: 0,
                fenced: false,
                lease_ms: LEASE.as_millis() as u64,
            };
            section(&ctx, &mut res, draft, sent + LEASE);
            let released: redis::RedisResult<Option<i64>> = unlock
                .key(&key)
                .key(channel(&key))
                .arg(0)
                .arg(LEASE.as_millis() as u64)
                .arg(&owner)
                .invoke(&mut conn);
            if released.is_err() {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
