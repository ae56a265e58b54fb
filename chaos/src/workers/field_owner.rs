//! Acquisitions by owners named like a layout's own fields: `mode` (a read-write lock's),
//! `permits` (a semaphore's total) and `@used` (a semaphore's count). Every command that
//! takes an owner must refuse them (`ERR invalid owner: ...`) before it looks at the key; a
//! grant, or a nil (the name was taken as an owner and waited for the key), is a reply the
//! interface rules out, recorded as [`Event::Wrong`](crate::history::Event::Wrong).

use std::time::Duration;

use redis::Value;

use super::rw_conn::{lease_ms, Node, RW_KEYS, SEM_KEYS};
use crate::rng::Rng;

/// The owners no command may take.
pub const FIELD_OWNERS: &[&str] = &["mode", "permits", "@used"];
/// The attempt does not wait: its reply comes within this.
const REPLY: Duration = Duration::from_secs(10);

/// One acquisition, without `WAIT`, of a plain lock (one of `keys`), a read-write lock or a
/// semaphore by a field-named owner: (the key, what was wrong) when the server did not
/// refuse the owner. Errors of a passing state (`TRYAGAIN`, `LOADING`, ...) and broken
/// connections are not judged.
pub fn probe(node: &mut Node, rng: &Rng, keys: &[String]) -> Option<(String, String)> {
    let owner = *rng.pick(FIELD_OWNERS);
    let (verb, key) = match rng.range(0, 3) {
        0 => ("LOCK", rng.pick(keys).as_str()),
        1 => ("RWLOCK", *rng.pick(RW_KEYS)),
        _ => ("SEM", *rng.pick(SEM_KEYS)),
    };
    let mut cmd = redis::cmd(&format!("{verb}.ACQUIRE"));
    cmd.arg(key).arg(owner);
    let mode = if rng.chance(50) { "READ" } else { "WRITE" };
    match verb {
        "RWLOCK" => _ = cmd.arg(mode),
        "SEM" => _ = cmd.arg(1),
        _ => {}
    }
    cmd.arg("LEASE").arg(lease_ms());
    let what = match node.call(&cmd, REPLY) {
        Ok(Value::Int(token)) => {
            format!("{verb}.ACQUIRE {key} by owner {owner} granted, token {token}")
        }
        Ok(Value::Nil) => {
            format!("{verb}.ACQUIRE {key} by owner {owner} answered nil, not refused")
        }
        _ => return None,
    };
    // Let go of what the server should never have given (its lease ends anyway).
    let mut release = redis::cmd(&format!("{verb}.RELEASE"));
    release.arg(key).arg(owner);
    if verb == "RWLOCK" {
        release.arg(mode);
    }
    let _ = node.call(&release, REPLY);
    Some((key.to_owned(), what))
}
