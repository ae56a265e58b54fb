//! A semaphore on replicas and on disk: a replica's data equals its master's after a random
//! workload (acquisitions, additions, releases of some or all, renewals, leases that run
//! out, tickets handed on, totals raised and lowered, force releases); the AOF and the RDB
//! give back every holder; a promoted replica holds grants back for the failover delay and
//! issues tokens above every replicated one.

#[allow(dead_code)]
#[path = "semaphore/client.rs"]
mod client;
mod support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use redis::Value;
use support::{bytes_of, error_text, hgetall, int, raw, Rng, Server};

const KEYS: u64 = 8;
const OWNERS: u64 = 6;
const OPERATIONS: usize = 1500;

/// Replies the workload may get; anything else is a failure.
fn check_reply(op: &[String], reply: &Value) {
    match (reply, error_text(reply)) {
        (Value::Int(_) | Value::Nil | Value::Array(_), None) => {}
        (_, Some(text)) if text.starts_with("NOTHELD ") && op[0] == "SEM.RELEASE" => {}
        (_, Some(text)) if text.starts_with("ERR rlock: asks for ") => {}
        (other, _) => panic!("unexpected reply to {op:?}: {other:?}"),
    }
}

fn lease(rng: &mut Rng) -> String {
    match rng.below(100) {
        0..=19 => rng.range(50, 300).to_string(),
        _ => rng.range(20_000, 60_000).to_string(),
    }
}

/// One random operation on a random key by a random owner.
fn operation(rng: &mut Rng, mailbox: &str) -> Vec<String> {
    let key = format!("sem:{}", rng.below(KEYS));
    let owner = format!("o{}", rng.below(OWNERS));
    let permits = rng.range(1, 4).to_string();
    let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match rng.below(100) {
        0..=29 => {
            let lease = lease(rng);
            s(&["SEM.ACQUIRE", &key, &owner, &permits, "LEASE", &lease])
        }
        30..=41 => {
            let (lease, wait) = (lease(rng), rng.range(10, 400).to_string());
            let args = ["SEM.WAIT", &key, &owner, &permits, "LEASE", &lease];
            let mut op = s(&args);
            op.extend(s(&["WAIT", &wait, "TO", mailbox]));
            op
        }
        42..=61 => s(&["SEM.RELEASE", &key, &owner, &permits]),
        62..=71 => s(&["SEM.RELEASE", &key, &owner]),
        72..=81 => {
            let lease = lease(rng);
            s(&["SEM.RENEW", &key, &owner, "LEASE", &lease])
        }
        82..=91 => s(&["SEM.PERMITS", &key, &rng.range(0, 8).to_string()]),
        92..=94 => s(&["SEM.FORCERELEASE", &key]),
        _ => s(&["SEM.INFO", &key]),
    }
}

fn all_keys(con: &mut redis::Connection) -> BTreeSet<Vec<u8>> {
    match raw(con, &["KEYS", "*"]) {
        Value::Array(items) => items.iter().filter_map(bytes_of).collect(),
        other => panic!("KEYS replied {other:?}"),
    }
}

fn run_workload(server: &Server, seed: u64) {
    let mut con = server.conn();
    let mut mailbox = server.conn();
    let id = int(&mut mailbox, &["CLIENT", "ID"]).to_string();
    let mut rng = Rng::new(seed);
    for i in 0..OPERATIONS {
        let op = operation(&mut rng, &id);
        let reply = raw(&mut con, &op);
        check_reply(&op, &reply);
        if i % 10 == 9 {
            std::thread::sleep(Duration::from_millis(5));
            raw(&mut mailbox, &["LOCK.GRANTS"]);
        }
    }
}

#[test]
fn replica_equals_master_after_a_random_workload() {
    let seed = Rng::seed_from_env("RLOCK_REPLICATION_SEED", 0x5EED_0003);
    println!("semaphore workload seed: {seed} (set RLOCK_REPLICATION_SEED to repeat)");
    let master = Server::start_with(&["--repl-diskless-sync-delay", "0"]);
    let replica = master.replica();
    run_workload(&master, seed);
    let mut con = master.conn();
    // Every short lease runs out, and a command on each key takes its holder out
    // (replicated), so that nothing changes between reading the master and the replica.
    std::thread::sleep(Duration::from_millis(800));
    for key in all_keys(&mut con) {
        let name = String::from_utf8_lossy(&key).into_owned();
        let total = support::hget(&mut con, &name, "permits").unwrap_or_default();
        int(&mut con, &["SEM.PERMITS", &name, &total]);
    }
    assert_eq!(
        int(&mut con, &["WAIT", "1", "5000"]),
        1,
        "replica did not ack"
    );
    let mut rcon = replica.conn();
    let keys: BTreeSet<Vec<u8>> = all_keys(&mut con)
        .union(&all_keys(&mut rcon))
        .cloned()
        .collect();
    assert!(
        !keys.is_empty(),
        "the workload left no semaphore to compare"
    );
    let mut holders = 0;
    for key in &keys {
        let shown = String::from_utf8_lossy(key);
        let fields = hgetall(&mut con, key);
        holders += fields.keys().filter(|f| f.starts_with(b"@h:")).count();
        assert_eq!(
            fields,
            hgetall(&mut rcon, key),
            "HGETALL {shown} differs (master, replica)"
        );
    }
    println!("compared {} semaphores, {holders} holders", keys.len());
}

fn snapshot(con: &mut redis::Connection) -> Vec<(Vec<u8>, String)> {
    all_keys(con)
        .into_iter()
        .map(|k| {
            let fields = format!("{:?}", hgetall(con, &k));
            (k, fields)
        })
        .collect()
}

#[test]
fn the_aof_and_the_rdb_give_back_every_holder() {
    let server = Server::start_with(&[
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--enable-debug-command",
        "yes",
    ]);
    let mut con = server.conn();
    int(&mut con, &["SEM.PERMITS", "a", "5"]);
    int(&mut con, &["SEM.PERMITS", "b", "1"]);
    let mut max_token = 0;
    for args in [
        ["SEM.ACQUIRE", "a", "x", "2", "LEASE", "60000"],
        ["SEM.ACQUIRE", "a", "y", "1", "LEASE", "50000"],
        ["SEM.ACQUIRE", "a", "x", "1", "LEASE", "40000"],
        ["SEM.ACQUIRE", "b", "z", "1", "LEASE", "60000"],
    ] {
        max_token = max_token.max(int(&mut con, &args));
    }
    int(&mut con, &["SEM.RELEASE", "a", "x", "1"]);
    int(&mut con, &["SEM.RELEASE", "b", "z"]);
    int(&mut con, &["SEM.RENEW", "a", "y", "LEASE", "55000"]);
    int(&mut con, &["SEM.PERMITS", "a", "4"]);
    let before = snapshot(&mut con);
    assert_eq!(before.len(), 2, "{before:?}");
    assert_eq!(raw(&mut con, &["DEBUG", "LOADAOF"]), Value::Okay);
    assert_eq!(snapshot(&mut con), before, "after the AOF was loaded");
    assert_eq!(raw(&mut con, &["DEBUG", "RELOAD"]), Value::Okay);
    assert_eq!(snapshot(&mut con), before, "after the RDB was loaded");
    let next = int(&mut con, &["SEM.ACQUIRE", "a", "w", "1"]);
    assert!(next > max_token, "{next} after {max_token}");
}

const DELAY_MS: u64 = 3000;

#[test]
fn a_promoted_replica_holds_grants_back_for_the_failover_delay_and_tokens_go_up() {
    let master = Server::start_with(&["--repl-diskless-sync-delay", "0"]);
    let replica = master.replica();
    let mut m = master.conn();
    int(&mut m, &["SEM.PERMITS", "S", "2"]);
    int(&mut m, &["SEM.PERMITS", "free", "1"]);
    let held = int(&mut m, &["SEM.ACQUIRE", "S", "a", "1", "LEASE", "60000"]);
    assert_eq!(int(&mut m, &["WAIT", "1", "5000"]), 1);
    master.signal("KILL");
    let mut r = replica.conn();
    let delay = DELAY_MS.to_string();
    let set = ["CONFIG", "SET", "rlock.failover-delay", &delay];
    assert_eq!(raw(&mut r, &set), Value::Okay);
    assert_eq!(raw(&mut r, &["REPLICAOF", "NO", "ONE"]), Value::Okay);
    let at = Instant::now();
    assert_eq!(raw(&mut r, &["SEM.ACQUIRE", "free", "x", "1"]), Value::Nil);
    // a's holding may be stale (the old master may have ended it and granted its permit to
    // another in writes that died with it): a adding permits is refused during the delay.
    let added = raw(&mut r, &["SEM.ACQUIRE", "S", "a", "1"]);
    let text = error_text(&added).unwrap_or_default();
    assert!(
        text.starts_with("TRYAGAIN rlock: this node was promoted"),
        "{added:?}"
    );
    let w = client::waiter(&replica, "S", "w", 1);
    // One permit of two is free; the waiter waits for the delay all the same.
    let quiet = Duration::from_millis(DELAY_MS - 300).saturating_sub(at.elapsed());
    assert!(
        w.recv_timeout(quiet).is_err(),
        "granted during the failover delay"
    );
    let token = match w.recv_timeout(Duration::from_secs(10)) {
        Ok(Value::Int(t)) => t,
        other => panic!("w got {other:?}"),
    };
    assert!(at.elapsed() >= Duration::from_millis(DELAY_MS - 100));
    assert!(
        token >= held + 1_048_576,
        "{token} after the replicated {held}"
    );
}
