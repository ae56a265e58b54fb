//! Helpers of the hardening tests: the clock, `INFO rlock` fields, queued waiters.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::support::{info_field, wait_until, Server};
use crate::wire::{Reply, Wire};

pub const LIMIT: Duration = Duration::from_secs(10);

pub fn now_us() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock");
    i64::try_from(since.as_micros()).expect("µs fit in i64")
}

pub fn stat(con: &mut redis::Connection, name: &str) -> i64 {
    info_field(con, "rlock", name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("INFO rlock has no integer {name}"))
}

/// Sends `LOCK.ACQUIRE key owner <options>` on a connection of its own, and waits until the
/// node counts one more waiter.
pub fn enqueue(server: &Server, con: &mut redis::Connection, args: &[&str]) -> Wire {
    let before = stat(con, "rlock_waiters");
    let mut waiter = Wire::connect(server);
    let mut command = vec!["LOCK.ACQUIRE"];
    command.extend_from_slice(args);
    waiter.send(&command);
    let queued = wait_until(LIMIT, || stat(con, "rlock_waiters") == before + 1);
    assert!(queued, "{args:?} was not queued");
    waiter
}

#[track_caller]
pub fn token(reply: Reply) -> i64 {
    match reply {
        Reply::Int(t) => t,
        other => panic!("expected a token, got {other:?}"),
    }
}
