//! Valkey 9's atomic slot migration (`CLUSTER MIGRATESLOTS`) with the module loaded: a slot
//! holding a lock of each kind, with waiters queued on the source, moves whole. The holder
//! keeps its owner, token and lease on the target, the waiters are redirected there, and a
//! release on the target hands the lock on; a cancelled migration leaves the source serving.
//!
//! Only Valkey 9 or later migrates slots atomically: on another server (`make test` runs
//! Redis 7.0 and Valkey 8.1) every test here says so and passes. `make test-all` runs them
//! on Valkey 9.1 (`make valkey9`).

mod support;
#[allow(dead_code)]
#[path = "waiting/wire.rs"]
mod wire;

use std::time::Duration;

use redis::Value;
use support::{free_port, info_field, int, raw, server_binary, text_of, wait_until, Server};
use wire::{Reply, Wire};

/// How long the cluster may take to form, or a migration to finish.
const SETTLE: Duration = Duration::from_secs(10);
/// A lock's key, and the slot it hashes to; the kinds' keys share its slot.
const KEY: &str = "lock:a";
const SLOT: &str = "6035";

/// Whether `$RLOCK_SERVER` is Valkey 9 or later; if not, the test says it is skipped.
fn valkey_9() -> bool {
    let out = std::process::Command::new(server_binary())
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let major = out
        .strip_prefix("Valkey server v=")
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse::<u32>().ok());
    let atomic = major.is_some_and(|m| m >= 9);
    if !atomic {
        eprintln!(
            "skipped: atomic slot migration needs Valkey 9 or later as RLOCK_SERVER \
             (make valkey9; make test-all runs it); this server is {:?}",
            out.trim()
        );
    }
    atomic
}

fn node() -> Server {
    let bus = free_port().to_string();
    Server::start_with(&["--cluster-enabled", "yes", "--cluster-port", &bus])
}

fn text(con: &mut redis::Connection, args: &[&str]) -> String {
    text_of(&raw(con, args)).unwrap_or_else(|| panic!("{args:?} gave no text"))
}

/// Two masters, the first serving slots 0-8191 (and so [`SLOT`]), the second the rest.
fn two_masters() -> (Server, Server) {
    let (a, b) = (node(), node());
    let add = |s: &Server, range: [&str; 2]| {
        let reply = raw(
            &mut s.conn(),
            &["CLUSTER", "ADDSLOTSRANGE", range[0], range[1]],
        );
        assert_eq!(reply, Value::Okay);
    };
    add(&a, ["0", "8191"]);
    add(&b, ["8192", "16383"]);
    let bus = support::pairs(&raw(&mut a.conn(), &["CONFIG", "GET", "cluster-port"]))
        .first()
        .and_then(|(_, v)| text_of(v))
        .expect("cluster-port");
    let meet = ["CLUSTER", "MEET", "127.0.0.1", &a.port().to_string(), &bus];
    assert_eq!(raw(&mut b.conn(), &meet), Value::Okay);
    for server in [&a, &b] {
        let mut con = server.conn();
        let ready = wait_until(SETTLE, || {
            let info = text(&mut con, &["CLUSTER", "INFO"]);
            info.contains("cluster_state:ok") && info.contains("cluster_known_nodes:2")
        });
        assert!(ready, "the cluster did not form:\n{}", server.log());
    }
    (a, b)
}

/// `CLUSTER MIGRATESLOTS` of [`SLOT`] from `source` to `target`; returns once the target
/// serves it and the source has no key left in it.
fn migrate(source: &Server, target: &Server) {
    let target_id = text(&mut target.conn(), &["CLUSTER", "MYID"]);
    let command = [
        "CLUSTER",
        "MIGRATESLOTS",
        "SLOTSRANGE",
        SLOT,
        SLOT,
        "NODE",
        &target_id,
    ];
    assert_eq!(raw(&mut source.conn(), &command), Value::Okay);
    let (mut s, mut t) = (source.conn(), target.conn());
    let moved = wait_until(SETTLE, || {
        let owner = raw(&mut t, &["EXISTS", KEY]);
        !matches!(owner, Value::ServerError(_))
            && int(&mut s, &["CLUSTER", "COUNTKEYSINSLOT", SLOT]) == 0
    });
    assert!(
        moved,
        "the slot did not move:\n{}\n{}",
        source.log(),
        target.log()
    );
}

/// Sends `command` (a blocking wait) on a connection of its own; returns once it is queued.
fn enqueue(server: &Server, command: &[&str]) -> Wire {
    let mut con = server.conn();
    let waiting = |con: &mut redis::Connection| {
        info_field(con, "rlock", "rlock_waiters").and_then(|v| v.parse::<i64>().ok())
    };
    let before = waiting(&mut con).expect("INFO rlock has rlock_waiters");
    let mut waiter = Wire::connect(server);
    waiter.send(command);
    let queued = wait_until(SETTLE, || waiting(&mut con) == Some(before + 1));
    assert!(queued, "{command:?} never queued");
    waiter
}

/// Every string and integer of a reply, flattened.
fn words(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) | Value::Set(items) => items.iter().flat_map(words).collect(),
        Value::Map(pairs) => pairs
            .iter()
            .flat_map(|(k, v)| words(k).into_iter().chain(words(v)))
            .collect(),
        Value::Int(n) => vec![n.to_string()],
        other => text_of(other).into_iter().collect(),
    }
}

/// A slot holding one lock of a kind moves with a waiter queued on the source.
struct Case<'a> {
    key: &'a str,
    /// Sets the lock up on the source (an acquisition answers the holder's token).
    hold: &'a [&'a [&'a str]],
    /// What the waiters send.
    wait: &'a [&'a str],
    /// Reads the lock (its owner and token are among the reply's words).
    info: &'a [&'a str],
    owner: &'a str,
    /// Ends the holding on the target.
    release: &'a [&'a str],
}

fn moves_with_its_waiters(case: &Case<'_>) {
    if !valkey_9() {
        return;
    }
    let (mut source, mut target) = two_masters();
    let (mut s, mut t) = (source.conn(), target.conn());
    assert_eq!(
        int(&mut s, &["CLUSTER", "KEYSLOT", case.key]).to_string(),
        SLOT
    );
    let mut token = 0;
    for command in case.hold {
        match raw(&mut s, command) {
            Value::Int(n) if command[0].ends_with("ACQUIRE") => token = n,
            Value::ServerError(e) => panic!("{command:?}: {e:?}"),
            _ => {}
        }
    }
    let before = words(&raw(&mut s, case.info));
    let mut waiter = enqueue(&source, case.wait);

    migrate(&source, &target);

    let redirect = format!("MOVED {SLOT} 127.0.0.1:{}", target.port());
    match waiter.reply_within(SETTLE) {
        Some(Reply::Error(e)) => assert_eq!(e, redirect),
        other => panic!("the waiter on the source got {other:?}"),
    }
    assert!(!waiter.has_pending(), "the waiter got a second reply");
    // The holding is the same on the target: owner, token, and a lease still running.
    let after = words(&raw(&mut t, case.info));
    assert!(after.iter().any(|w| w == case.owner), "{after:?}");
    if token > 0 {
        assert!(
            after.contains(&token.to_string()),
            "{before:?} became {after:?}"
        );
        // A lease as the key's TTL, or (a semaphore's holders) as a field INFO shows.
        let pttl = int(&mut t, &["PTTL", case.key]);
        let running = |ms: i64| (50_000..=60_000).contains(&ms);
        let shown = after.iter().filter_map(|w| w.parse().ok()).any(running);
        assert!(
            running(pttl) || shown,
            "the lease became {pttl} ms: {after:?}"
        );
        // The target's counter learned the token before granting anything.
        let fresh = int(&mut t, &["LOCK.ACQUIRE", "{lock:a}:fresh", "x"]);
        assert!(fresh > token, "a fresh token {fresh} after {token}");
    }
    // The waiter follows the redirect, and gets the lock within a second of its release.
    let mut waiter = enqueue(&target, case.wait);
    raw(&mut t, case.release);
    match waiter.reply_within(Duration::from_secs(1)) {
        Some(Reply::Error(e)) => panic!("the waiter on the target got {e}"),
        Some(_) => {}
        None => panic!("no handoff within a second:\n{}", target.log()),
    }
    for server in [&mut source, &mut target] {
        assert!(server.is_running(), "a node died:\n{}", server.log());
    }
}

#[test]
fn a_plain_lock_moves_with_its_waiters() {
    moves_with_its_waiters(&Case {
        key: KEY,
        hold: &[&["LOCK.ACQUIRE", KEY, "a", "LEASE", "60000"]],
        wait: &["LOCK.ACQUIRE", KEY, "b", "WAIT", "0"],
        info: &["LOCK.INFO", KEY],
        owner: "a",
        release: &["LOCK.RELEASE", KEY, "a"],
    });
}

#[test]
fn a_read_write_lock_moves_with_its_waiters() {
    let key = "{lock:a}:rw";
    moves_with_its_waiters(&Case {
        key,
        hold: &[&["RWLOCK.ACQUIRE", key, "w", "WRITE", "LEASE", "60000"]],
        wait: &["RWLOCK.ACQUIRE", key, "r", "READ", "WAIT", "0"],
        info: &["RWLOCK.INFO", key],
        owner: "w",
        release: &["RWLOCK.RELEASE", key, "w", "WRITE"],
    });
}

#[test]
fn a_semaphore_moves_with_its_waiters() {
    let key = "{lock:a}:sem";
    moves_with_its_waiters(&Case {
        key,
        hold: &[
            &["SEM.PERMITS", key, "2"],
            &["SEM.ACQUIRE", key, "s", "2", "LEASE", "60000"],
        ],
        wait: &["SEM.ACQUIRE", key, "t", "1", "WAIT", "0"],
        info: &["SEM.INFO", key],
        owner: "s",
        release: &["SEM.RELEASE", key, "s"],
    });
}

#[test]
fn a_latch_moves_with_its_waiters() {
    let key = "{lock:a}:latch";
    moves_with_its_waiters(&Case {
        key,
        hold: &[&["LATCH.SET", key, "1"]],
        wait: &["LATCH.AWAIT", key, "WAIT", "0"],
        info: &["LATCH.COUNT", key],
        owner: "1",
        release: &["LATCH.COUNTDOWN", key],
    });
}

/// A lock whose lease runs out on the target after the move goes to the waiter queued
/// there: the target arms its lease timer.
#[test]
fn a_lease_that_ends_on_the_target_hands_the_lock_on() {
    if !valkey_9() {
        return;
    }
    let (source, target) = two_masters();
    let token = int(
        &mut source.conn(),
        &["LOCK.ACQUIRE", KEY, "a", "LEASE", "2000"],
    );
    migrate(&source, &target);
    let mut waiter = enqueue(&target, &["LOCK.ACQUIRE", KEY, "b", "WAIT", "0"]);
    match waiter.reply_within(Duration::from_secs(4)) {
        Some(Reply::Int(t)) => assert!(t > token, "{t} after {token}"),
        other => panic!("the waiter on the target got {other:?}:\n{}", target.log()),
    }
}

/// A migration cancelled before it ends leaves the source serving its lock and its queue;
/// the target keeps nothing.
#[test]
fn a_cancelled_migration_leaves_the_source_serving() {
    if !valkey_9() {
        return;
    }
    let (source, target) = two_masters();
    let mut s = source.conn();
    int(&mut s, &["LOCK.ACQUIRE", KEY, "a", "LEASE", "60000"]);
    let mut waiter = enqueue(&source, &["LOCK.ACQUIRE", KEY, "b", "WAIT", "0"]);
    // The target, stopped, cannot take the slot: the migration waits until cancelled.
    let target_id = text(&mut target.conn(), &["CLUSTER", "MYID"]);
    target.signal("STOP");
    let command = [
        "CLUSTER",
        "MIGRATESLOTS",
        "SLOTSRANGE",
        SLOT,
        SLOT,
        "NODE",
        &target_id,
    ];
    assert_eq!(raw(&mut s, &command), Value::Okay);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        raw(&mut s, &["CLUSTER", "CANCELSLOTMIGRATIONS"]),
        Value::Okay
    );
    target.signal("CONT");
    let cancelled = wait_until(SETTLE, || {
        words(&raw(&mut s, &["CLUSTER", "GETSLOTMIGRATIONS"])).contains(&"cancelled".to_owned())
    });
    assert!(
        cancelled,
        "the migration was not cancelled:\n{}",
        source.log()
    );
    assert!(waiter.reply_within(Duration::from_millis(200)).is_none());
    assert_eq!(int(&mut s, &["LOCK.RELEASE", KEY, "a"]), 0);
    match waiter.reply_within(Duration::from_secs(1)) {
        Some(Reply::Int(t)) => assert!(t > 0),
        other => panic!("the waiter on the source got {other:?}"),
    }
    let mut t = target.conn();
    assert_eq!(int(&mut t, &["CLUSTER", "COUNTKEYSINSLOT", SLOT]), 0);
}
