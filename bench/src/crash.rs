//! Scenario 3: a holder with a 1 s lease vanishes; how long after the lease deadline does
//! the next waiter hold the lock? rlock's module timer hands it off; a Redisson waiter
//! hears nothing (nobody unlocks) and retries when the TTL it was given runs out.
//!
//! Trials run in batches on separate keys, their deadlines spread `GAP_MS` apart so that
//! no two handoffs meet.

use std::thread;
use std::time::Duration;

use redis::{ConnectionLike, Value};

use crate::clock::now_ns;
use crate::redisson::{self, Latch};
use crate::server::connect;
use crate::side::{self, Scripts, Side, LEASE_MS};

pub const HOLDER_LEASE_MS: u64 = 1000;
const GAP_MS: u64 = 60;
pub const BATCH: usize = 10;

/// One crash: when the waiter's client saw the lock (ms after the deadline), and when the
/// server granted it (ms after the deadline, from the new holding's `PEXPIRETIME`, so at
/// 1 ms resolution and free of client scheduling).
#[derive(Debug, Clone, Copy)]
pub struct Trial {
    pub client_ms: f64,
    pub server_ms: f64,
}

/// Runs `trials` crashes of `side`.
pub fn batch(port: u16, scripts: &Scripts, side: Side, trials: usize, tag: usize) -> Vec<Trial> {
    let waiters: Vec<_> = (0..trials)
        .map(|i| {
            let key = format!("x:{}:{tag}:{i}", side.name());
            let deadline_ms = vanish_holding(port, scripts, side, &key);
            let scripts = scripts.clone();
            let waiter = {
                let key = key.clone();
                thread::spawn(move || wait_for(port, &scripts, side, &key))
            };
            thread::sleep(Duration::from_millis(GAP_MS));
            (key, deadline_ms, waiter)
        })
        .collect();
    let mut con = connect(port).expect("control connection");
    waiters
        .into_iter()
        .map(|(key, deadline_ms, waiter)| {
            let acquired_ns = waiter.join().expect("waiter thread");
            let expires: i64 = redis::cmd("PEXPIRETIME")
                .arg(&key)
                .query(&mut con)
                .expect("PEXPIRETIME of the new holding");
            let granted_ms = expires - LEASE_MS as i64;
            Trial {
                client_ms: (acquired_ns as f64 - deadline_ms as f64 * 1e6) / 1e6,
                server_ms: (granted_ms - deadline_ms) as f64,
            }
        })
        .collect()
}

/// Takes `key` with a 1 s lease on a connection that then goes away; returns the
/// lease deadline (Unix ms) as the server has it.
fn vanish_holding(port: u16, scripts: &Scripts, side: Side, key: &str) -> i64 {
    let mut holder = connect(port).expect("holder connection");
    let cmd = side.acquire(scripts, key, "crashed:1", HOLDER_LEASE_MS);
    let reply = holder.req_command(&cmd).expect("holder acquire");
    assert!(side.acquired(&reply), "holder got {reply:?}");
    match redis::cmd("PEXPIRETIME").arg(key).query::<i64>(&mut holder) {
        Ok(ms) if ms > 0 => ms,
        other => panic!("PEXPIRETIME {key}: {other:?}"),
    }
}

/// Waits for `key` as `side` does; returns when it was acquired (Unix ns).
fn wait_for(port: u16, scripts: &Scripts, side: Side, key: &str) -> u64 {
    let mut con = connect(port).expect("waiter connection");
    let owner = "survivor:1";
    let got = match side {
        Side::Lua => {
            // No unlock message will come: only the TTL wakes the waiter.
            let latch = Latch::default();
            redisson::lock(
                &mut con,
                &redisson::try_lock_packed(scripts, key, owner),
                &latch,
            )
        }
        _ => {
            let cmd = side::acquire_waiting(key, owner, LEASE_MS);
            matches!(con.req_command(&cmd), Ok(Value::Int(_)))
        }
    };
    let at = now_ns();
    assert!(got, "{} waiter never got {key}", side.name());
    at
}
