//! Scenario 9's contended handoffs with blocked clients (`handoffs.rs` holds the scenario):
//! [`waits()`] threads, each with a connection of its own, waiting and handing on in turn.

use std::thread;
use std::time::Duration;

use redis::{ConnectionLike, Value};

use crate::clock::{now_ns, sleep_until};
use crate::handoff_slice::{mark, owner, waits, Contended, LEASE};
use crate::server::connect;
use crate::wait_mode::Mode;

/// One holding of a blocking waiter: (waiter, grant read at, release sent at), ns.
type Holding = (usize, u64, u64);

/// Blocked waiters on `key` handed on one to the next: the lock's (`LOCK.ACQUIRE ... WAIT
/// 0`, then `LOCK.RELEASE`), or the floor's (`NOOP.BLOCK`, then `NOOP.PASS`).
pub fn blocking(port: u16, key: &str, slice: Duration, floor: bool) -> Result<Contended, String> {
    let start = now_ns() + 300_000_000;
    let end = start + u64::try_from(slice.as_nanos()).unwrap_or(u64::MAX);
    let threads: Vec<_> = (0..waits())
        .map(|w| {
            let key = key.to_owned();
            thread::spawn(move || blocking_waiter(port, &key, w, (start, end), floor))
        })
        .collect();
    let mut control = connect(port).map_err(|e| e.to_string())?;
    if floor {
        // Every floor waiter blocks at first: one pass starts the chain (or, if a waiter has
        // not blocked yet, leaves the key free for it).
        sleep_until(start.saturating_sub(100_000_000));
        redis::cmd("NOOP.PASS")
            .arg(key)
            .query::<i64>(&mut control)
            .map_err(|e| e.to_string())?;
    }
    sleep_until(start);
    let from = mark(&mut control, floor);
    sleep_until(end);
    let to = mark(&mut control, floor);
    let mut holdings: Vec<Holding> = Vec::new();
    for t in threads {
        holdings.extend(t.join().map_err(|_| "a waiter thread panicked")??);
    }
    holdings.sort_by_key(|h| h.1);
    let in_window = |h: &Holding| (start..end).contains(&h.1);
    let mut run = Contended {
        floor,
        ..Contended::empty(Mode::Block)
    };
    run.gaps_us = holdings
        .windows(2)
        .filter(|w| in_window(&w[1]))
        .map(|w| (w[1].1 as f64 - w[0].2 as f64) / 1e3)
        .collect();
    for h in holdings.iter().filter(|h| in_window(h)) {
        *run.per_waiter.entry(h.0).or_default() += 1;
    }
    run.measured(from, to);
    Ok(run)
}

/// Acquires (blocking) and releases at once until `end`; once past it, a waiter ends at its
/// next grant, so every waiter ends.
fn blocking_waiter(
    port: u16,
    key: &str,
    w: usize,
    (start, end): (u64, u64),
    floor: bool,
) -> Result<Vec<Holding>, String> {
    let mut con = connect(port).map_err(|e| e.to_string())?;
    let (acquire, release) = if floor {
        (
            redis::cmd("NOOP.BLOCK").arg(key).get_packed_command(),
            redis::cmd("NOOP.PASS").arg(key).get_packed_command(),
        )
    } else {
        let acquire = redis::cmd("LOCK.ACQUIRE")
            .arg(key)
            .arg(owner(w))
            .arg(&["LEASE", LEASE, "WAIT", "0"][..])
            .get_packed_command();
        let release = redis::cmd("LOCK.RELEASE")
            .arg(key)
            .arg(owner(w))
            .get_packed_command();
        (acquire, release)
    };
    con.set_read_timeout(None).map_err(|e| e.to_string())?;
    let mut held = Vec::new();
    sleep_until(start.saturating_sub(200_000_000));
    loop {
        match con.req_packed_command(&acquire) {
            Ok(Value::Int(_)) => {}
            other => return Err(format!("{key}: the wait answered {other:?}")),
        }
        let granted = now_ns();
        let released = now_ns();
        let reply = con
            .req_packed_command(&release)
            .map_err(|e| e.to_string())?;
        // The floor's last pass finds nobody blocked (0), as the lock's release frees it.
        let passed = matches!(reply, Value::Int(0)) || (floor && reply == Value::Int(1));
        if !passed {
            return Err(format!("{key}: the release answered {reply:?}"));
        }
        held.push((w, granted, released));
        if granted >= end {
            return Ok(held);
        }
    }
}
