//! SPEC.md §5 and §6: a replica's data equals its master's after a random workload, and
//! lock commands that write are refused on a read-only replica.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use redis::Value;
use support::{
    bytes_of, error_text, expect_error, field, hgetall, int, pairs, pexpiretime, pttl, raw,
    text_of, wait_until, Rng, Server,
};

const KEYS: usize = 20;
const OWNERS: usize = 5;
const OPERATIONS: usize = 1500;

/// Replies the workload may get; anything else is a failure.
fn check_reply(op: &[String], reply: &Value) {
    match reply {
        Value::Int(_) | Value::Nil => {}
        Value::Array(_) | Value::Map(_) if op[0] == "LOCK.INFO" => {}
        other => match error_text(other) {
            Some(text) if text.starts_with("NOTHELD ") && op[0] == "LOCK.RELEASE" => {}
            _ => panic!("unexpected reply to {op:?}: {other:?}"),
        },
    }
}

fn lease(rng: &mut Rng) -> Option<String> {
    match rng.below(100) {
        0..=14 => Some(rng.range(50, 300).to_string()),
        15..=19 => None,
        _ => Some(rng.range(20_000, 60_000).to_string()),
    }
}

/// One random operation. `holders` remembers who got each lock, to make reentry and
/// release by the holder common.
fn operation(rng: &mut Rng, holders: &BTreeMap<String, String>) -> Vec<String> {
    let key = format!("rk:{}", rng.below(KEYS as u64));
    let stranger = format!("owner:{}", rng.below(OWNERS as u64));
    let owner = match holders.get(&key) {
        Some(h) if rng.chance(70) => h.clone(),
        _ => stranger,
    };
    let mut op: Vec<String> = match rng.below(100) {
        0..=44 => vec!["LOCK.ACQUIRE".into(), key, owner],
        45..=69 => vec!["LOCK.RELEASE".into(), key, owner],
        70..=81 => vec!["LOCK.RENEW".into(), key, owner],
        82..=86 => vec!["LOCK.FORCERELEASE".into(), key],
        _ => vec!["LOCK.INFO".into(), key],
    };
    if op[0] == "LOCK.ACQUIRE" || (op[0] == "LOCK.RENEW" && rng.chance(50)) {
        if let Some(ms) = lease(rng) {
            op.push("LEASE".into());
            op.push(ms);
        }
    }
    op
}

fn all_keys(con: &mut redis::Connection) -> BTreeSet<Vec<u8>> {
    match raw(con, &["KEYS", "*"]) {
        Value::Array(items) => items.iter().filter_map(bytes_of).collect(),
        other => panic!("KEYS replied {other:?}"),
    }
}

/// Runs the random workload on `con`; returns the highest token it was given.
fn run_workload(con: &mut redis::Connection, seed: u64) -> i64 {
    let mut rng = Rng::new(seed);
    let mut holders = BTreeMap::new();
    let mut max_token = 0;
    for i in 0..OPERATIONS {
        let op = operation(&mut rng, &holders);
        let reply = raw(con, &op);
        check_reply(&op, &reply);
        if let (true, Value::Int(token)) = (op[0] == "LOCK.ACQUIRE", &reply) {
            holders.insert(op[1].clone(), op[2].clone());
            max_token = max_token.max(*token);
        }
        // Spread the workload over a second or so, so that short leases run out mid-run.
        if i % 10 == 9 {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    max_token
}

#[test]
fn replica_equals_master_after_a_random_workload() {
    let seed = Rng::seed_from_env("RLOCK_REPLICATION_SEED", 0x5EED_0001);
    println!("replication workload seed: {seed} (set RLOCK_REPLICATION_SEED to repeat)");
    let master = Server::start();
    let replica = master.replica();
    let mut con = master.conn();
    run_workload(&mut con, seed);
    let expired = support::info_field(&mut con, "stats", "expired_keys").unwrap_or_default();
    assert_ne!(expired, "0", "no lease ran out during the workload");

    // Let every short lease run out before comparing, so that no key expires between
    // reading it on the master and reading it on the replica.
    let settled = wait_until(Duration::from_secs(10), || {
        all_keys(&mut con).iter().all(|k| {
            let ttl = pttl(&mut con, k);
            ttl == -2 || ttl > 5_000
        })
    });
    assert!(settled, "short leases did not run out");
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
}

#[test]
fn lock_writes_on_a_replica_are_readonly_and_info_reads() {
    let master = Server::start();
    let replica = master.replica();
    let mut con = master.conn();
    let token = int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "60000"]);
    int(&mut con, &["LOCK.ACQUIRE", "k", "a", "LEASE", "60000"]);
    assert_eq!(int(&mut con, &["WAIT", "1", "5000"]), 1);

    let mut rcon = replica.conn();
    let readonly = error_text(&raw(&mut rcon, &["SET", "x", "1"])).expect("SET refused");
    assert!(readonly.starts_with("READONLY "), "{readonly}");
    let writes: [&[&str]; 6] = [
        &["LOCK.ACQUIRE", "k", "a"],
        &["LOCK.ACQUIRE", "new", "a", "LEASE", "100"],
        &["LOCK.RELEASE", "k", "a"],
        &["LOCK.RENEW", "k", "a"],
        &["LOCK.RENEW", "k", "a", "LEASE", "100"],
        &["LOCK.FORCERELEASE", "k"],
    ];
    for args in writes {
        expect_error(&mut rcon, args, &readonly);
    }
    let info = pairs(&raw(&mut rcon, &["LOCK.INFO", "k"]));
    assert_eq!(
        field(&info, "owner").and_then(text_of).as_deref(),
        Some("a")
    );
    assert_eq!(field(&info, "holds"), Some(&Value::Int(2)));
    assert_eq!(field(&info, "token"), Some(&Value::Int(token)));
    assert_eq!(hgetall(&mut rcon, b"k"), hgetall(&mut con, b"k"));
    assert_eq!(int(&mut rcon, &["EXISTS", "new"]), 0);
}

#[test]
fn promoted_replica_issues_tokens_above_replicated_ones() {
    let master = Server::start();
    let replica = master.replica();
    let mut con = master.conn();
    let max_token = run_workload_short(&mut con);
    assert_eq!(int(&mut con, &["WAIT", "1", "5000"]), 1);
    drop(master);

    let mut rcon = replica.conn();
    assert_eq!(raw(&mut rcon, &["REPLICAOF", "NO", "ONE"]), Value::Okay);
    // This test is about tokens: end the failover delay the promotion started.
    assert_eq!(
        raw(&mut rcon, &["CONFIG", "SET", "rlock.failover-delay", "0"]),
        Value::Okay
    );
    let token = int(&mut rcon, &["LOCK.ACQUIRE", "after-failover", "b"]);
    assert!(
        token >= max_token + 1_048_576,
        "promoted replica issued {token}, not a token-gap above the replicated {max_token}"
    );
}

fn run_workload_short(con: &mut redis::Connection) -> i64 {
    let mut max_token = 0;
    for i in 0..50 {
        let key = format!("k{}", i % 7);
        if let Value::Int(t) = raw(con, &["LOCK.ACQUIRE", &key, "a", "LEASE", "60000"]) {
            max_token = max_token.max(t);
        }
        if i % 3 == 0 {
            raw(con, &["LOCK.FORCERELEASE", &key]);
        }
    }
    max_token
}
