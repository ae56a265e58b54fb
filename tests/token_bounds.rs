//! SPEC.md §5, the token guarantee's edges: two replicas promoted one after the other never
//! issue the same token (the promotion jump is anchored to the clock); a hand-made `@token`
//! moves the counter at most twice `rlock.token-gap` past the clock; a gap of 0 is refused.

mod support;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::Value;
use support::{error_text, info_field, int, raw, wait_until, Server};

const GAP: i64 = 5_000_000;
const SYNC_LIMIT: Duration = Duration::from_secs(10);

fn now_us() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock");
    i64::try_from(since.as_micros()).expect("µs fit in i64")
}

fn node() -> Server {
    let gap = GAP.to_string();
    Server::start_with(&["--rlock.token-gap", &gap, "--rlock.failover-delay", "0"])
}

/// Makes `replica` replicate `master` and waits until its first sync is done.
fn attach(replica: &Server, master: &Server) {
    let mut con = replica.conn();
    let port = master.port().to_string();
    assert_eq!(
        raw(&mut con, &["REPLICAOF", "127.0.0.1", &port]),
        Value::Okay
    );
    let up = wait_until(SYNC_LIMIT, || {
        info_field(&mut con, "replication", "master_link_status").as_deref() == Some("up")
    });
    assert!(up, "replica did not sync:\n{}", replica.log());
}

fn promote(server: &Server) -> redis::Connection {
    let mut con = server.conn();
    assert_eq!(raw(&mut con, &["REPLICAOF", "NO", "ONE"]), Value::Okay);
    con
}

/// R1 and R2 learned the same counter from M; M dies, R1 is promoted and
/// grants, R1 dies, R2 is promoted (still on its last data) and grants: its token must be
/// higher. R2 syncs first, so that a counter that only depends on the data (last + gap)
/// starts no higher on R2 than on R1.
#[test]
fn a_replica_promoted_after_another_issues_higher_tokens() {
    let master = node();
    let (r1, r2) = (node(), node());
    attach(&r2, &master);
    attach(&r1, &master);
    let mut m = master.conn();
    let first = int(&mut m, &["LOCK.ACQUIRE", "lock:a", "m", "LEASE", "60000"]);
    assert_eq!(int(&mut m, &["WAIT", "2", "5000"]), 2);
    drop(master);
    let mut c1 = promote(&r1);
    let t1 = int(&mut c1, &["LOCK.ACQUIRE", "lock:b", "r1", "LEASE", "60000"]);
    assert!(t1 > first, "R1 issued {t1} after M's {first}");
    drop(c1);
    drop(r1);
    let mut c2 = promote(&r2);
    let t2 = int(&mut c2, &["LOCK.ACQUIRE", "lock:b", "r2", "LEASE", "60000"]);
    assert!(
        t2 > t1,
        "R2 issued {t2}, not above R1's {t1} (M issued {first})"
    );
}

/// A lock-shaped hash with `@token` far past the clock, read once, does not
/// move the counter: the next fresh token stays within twice the gap past the clock. A
/// token within that bound (as a recently promoted master issues) is learned.
#[test]
fn a_hand_made_token_far_ahead_does_not_move_the_counter() {
    let server = node();
    let mut con = server.conn();
    let forged = (now_us() + (1 << 50) - 1_000_000).to_string();
    raw(&mut con, &["HSET", "forged", "x", "1", "@token", &forged]);
    assert!(matches!(
        raw(&mut con, &["LOCK.INFO", "forged"]),
        Value::Array(_)
    ));
    let next = int(&mut con, &["LOCK.ACQUIRE", "fresh", "o"]);
    let bound = now_us() + 2 * GAP;
    assert!(next <= bound, "next token {next} past the bound {bound}");

    let near = now_us() + GAP;
    raw(
        &mut con,
        &["HSET", "near", "x", "1", "@token", &near.to_string()],
    );
    assert!(matches!(
        raw(&mut con, &["LOCK.INFO", "near"]),
        Value::Array(_)
    ));
    let after = int(&mut con, &["LOCK.ACQUIRE", "fresh2", "o"]);
    assert!(
        after > near,
        "a token {near} within the bound was not learned: {after}"
    );
}

/// A gap of 0 would let a promoted replica reissue its old master's last tokens.
#[test]
fn a_token_gap_of_zero_is_refused_as_other_bad_values_are() {
    let server = Server::start();
    let mut con = server.conn();
    let zero = raw(&mut con, &["CONFIG", "SET", "rlock.token-gap", "0"]);
    let text = error_text(&zero).unwrap_or_else(|| panic!("token-gap 0 accepted: {zero:?}"));
    let lease = raw(&mut con, &["CONFIG", "SET", "rlock.default-lease", "0"]);
    let lease = error_text(&lease).expect("default-lease 0 refused");
    let same_shape = lease
        .replace("default-lease", "token-gap")
        .replace("315360000000", "1125899906842624");
    assert_eq!(text, same_shape);
    assert!(
        text.starts_with("ERR ") && text.contains("rlock.token-gap"),
        "{text}"
    );
    assert_eq!(config_gap(&mut con), "1048576");
    let log = Server::builder()
        .args(["--rlock.token-gap", "0"])
        .start_expecting_failure();
    assert!(
        log.contains("token-gap"),
        "startup with token-gap 0:\n{log}"
    );
}

fn config_gap(con: &mut redis::Connection) -> String {
    let reply: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("rlock.token-gap")
        .query(con)
        .expect("CONFIG GET");
    reply.get(1).cloned().unwrap_or_default()
}
