//! A read-write lock on replicas: a replica's data equals its master's after a random mixed
//! workload (reads, writes, reentries, downgrades, releases, renewals, leases that run out,
//! tickets handed on), and a promoted replica issues tokens above every replicated one.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use redis::Value;
use support::{
    bytes_of, error_text, hgetall, int, pexpiretime, pttl, raw, wait_until, Rng, Server,
};

const KEYS: u64 = 12;
const OWNERS: u64 = 6;
const OPERATIONS: usize = 1500;

/// Replies the workload may get; anything else is a failure.
fn check_reply(op: &[String], reply: &Value) {
    match (reply, error_text(reply)) {
        (Value::Int(_) | Value::Nil | Value::Array(_), None) => {}
        (_, Some(text)) if text.starts_with("NOTHELD ") && op[0] == "RWLOCK.RELEASE" => {}
        (_, Some(text)) if text.starts_with("ERR rlock: ") && text.contains("upgrade") => {}
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
    let key = format!("rw:{}", rng.below(KEYS));
    let owner = format!("o{}", rng.below(OWNERS));
    let mode = if rng.chance(65) { "READ" } else { "WRITE" }.to_owned();
    let op: Vec<String> = match rng.below(100) {
        0..=34 => vec!["RWLOCK.ACQUIRE".into(), key, owner, mode, "LEASE".into(), lease(rng)],
        35..=44 => vec![
            "RWLOCK.WAIT".into(),
            key,
            owner,
            mode,
            "LEASE".into(),
            lease(rng),
            "WAIT".into(),
            rng.range(10, 400).to_string(),
            "TO".into(),
            mailbox.to_owned(),
        ],
        45..=79 => vec!["RWLOCK.RELEASE".into(), key, owner, mode],
        80..=91 => vec!["RWLOCK.RENEW".into(), key, owner, "LEASE".into(), lease(rng)],
        92..=94 => vec!["RWLOCK.FORCERELEASE".into(), key],
        _ => vec!["RWLOCK.INFO".into(), key],
    };
    op
}

fn all_keys(con: &mut redis::Connection) -> BTreeSet<Vec<u8>> {
    match raw(con, &["KEYS", "*"]) {
        Value::Array(items) => items.iter().filter_map(bytes_of).collect(),
        other => panic!("KEYS replied {other:?}"),
    }
}

/// Runs the workload; returns the highest token it saw.
fn run_workload(server: &Server, seed: u64) -> i64 {
    let mut con = server.conn();
    let mut mailbox = server.conn();
    let id = int(&mut mailbox, &["CLIENT", "ID"]).to_string();
    let mut rng = Rng::new(seed);
    let mut max_token = 0;
    for i in 0..OPERATIONS {
        let op = operation(&mut rng, &id);
        let reply = raw(&mut con, &op);
        check_reply(&op, &reply);
        if let (true, Value::Int(token)) = (op[0] == "RWLOCK.ACQUIRE", &reply) {
            max_token = max_token.max(*token);
        }
        if i % 10 == 9 {
            std::thread::sleep(Duration::from_millis(5));
            // Outcomes of tickets are read now and then, as a client would.
            raw(&mut mailbox, &["LOCK.GRANTS"]);
        }
    }
    max_token
}

#[test]
fn replica_equals_master_after_a_random_mixed_workload() {
    let seed = Rng::seed_from_env("RLOCK_REPLICATION_SEED", 0x5EED_0002);
    println!("read-write workload seed: {seed} (set RLOCK_REPLICATION_SEED to repeat)");
    let master = Server::start_with(&["--repl-diskless-sync-delay", "0"]);
    let replica = master.replica();
    run_workload(&master, seed);
    let mut con = master.conn();
    // Every short lease runs out (the module takes its holder out, replicated) before the
    // comparison, so that nothing changes between reading the master and the replica.
    std::thread::sleep(Duration::from_millis(800));
    for key in all_keys(&mut con) {
        let name = String::from_utf8_lossy(&key).into_owned();
        raw(&mut con, &["RWLOCK.RENEW", &name, "nobody"]);
    }
    let settled = wait_until(Duration::from_secs(10), || {
        all_keys(&mut con).iter().all(|k| pttl(&mut con, k) > 5_000)
    });
    assert!(settled, "short leases did not run out");
    assert_eq!(int(&mut con, &["WAIT", "1", "5000"]), 1, "replica did not ack");
    let mut rcon = replica.conn();
    let keys: BTreeSet<Vec<u8>> = all_keys(&mut con)
        .union(&all_keys(&mut rcon))
        .cloned()
        .collect();
    assert!(!keys.is_empty(), "the workload left no lock to compare");
    println!("comparing {} keys on master and replica", keys.len());
    for key in &keys {
        let shown = String::from_utf8_lossy(key);
        assert_eq!(
            hgetall(&mut con, key),
            hgetall(&mut rcon, key),
            "HGETALL {shown} differs (master, replica)"
        );
        assert_eq!(
            pexpiretime(&mut con, key),
            pexpiretime(&mut rcon, key),
            "PEXPIRETIME {shown} differs (master, replica)"
        );
    }
    let handoffs = support::info_field(&mut con, "rlock", "rlock_handoffs").unwrap_or_default();
    println!("handoffs during the workload: {handoffs}");
}

#[test]
fn a_promoted_replica_issues_tokens_above_the_replicated_ones() {
    let master = Server::start_with(&["--repl-diskless-sync-delay", "0"]);
    let replica = master.replica();
    let mut con = master.conn();
    let mut max_token = 0;
    for i in 0..40 {
        let key = format!("rw{}", i % 5);
        let mode = if i % 3 == 0 { "WRITE" } else { "READ" };
        if let Value::Int(t) = raw(&mut con, &["RWLOCK.ACQUIRE", &key, "a", mode]) {
            max_token = max_token.max(t);
        }
        if i % 4 == 0 {
            raw(&mut con, &["RWLOCK.FORCERELEASE", &key]);
        }
    }
    max_token = max_token.max(int(&mut con, &["RWLOCK.ACQUIRE", "kept", "a", "READ"]));
    assert_eq!(int(&mut con, &["WAIT", "1", "5000"]), 1);
    drop(master);
    let mut rcon = replica.conn();
    assert_eq!(raw(&mut rcon, &["REPLICAOF", "NO", "ONE"]), Value::Okay);
    raw(&mut rcon, &["CONFIG", "SET", "rlock.failover-delay", "0"]);
    let token = int(&mut rcon, &["RWLOCK.ACQUIRE", "after", "b", "READ"]);
    assert!(
        token >= max_token + 1_048_576,
        "promoted replica issued {token}, not a token-gap above the replicated {max_token}"
    );
    let reads = raw(&mut rcon, &["RWLOCK.INFO", "kept"]);
    assert_ne!(reads, Value::Nil, "the replica lost a read-write lock");
}
