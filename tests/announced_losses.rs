//! `LOCK.LISTEN`: every end of a listened holding that its holder did not ask for is
//! announced on the owner's loss channel, naming the cause, the kind, the token, the key and
//! the owner; the holder's own release, and owners nobody listens for, announce nothing.

mod support;

use std::time::Duration;

use redis::Value;
use support::{int, raw, wait_until, Server};

/// How long a message may take to come (a hang limit).
const LIMIT: Duration = Duration::from_secs(2);

/// A connection listening for the losses of owners `app:*`.
struct Listener {
    con: redis::Connection,
}

impl Listener {
    fn open(server: &Server) -> Listener {
        let mut con = server.conn();
        let channel = raw(&mut con, &["LOCK.LISTEN", "app"]);
        assert_eq!(
            support::text_of(&channel).as_deref(),
            Some("__rlock_lost__:app")
        );
        redis::cmd("SUBSCRIBE")
            .arg("__rlock_lost__:app")
            .exec(&mut con)
            .expect("subscribe");
        con.set_read_timeout(Some(LIMIT)).expect("timeout");
        Listener { con }
    }

    /// The next message, or None within the limit.
    fn next(&mut self) -> Option<String> {
        loop {
            let msg = self.con.recv_response().ok()?;
            let Value::Array(parts) = msg else { continue };
            match parts.as_slice() {
                [kind, _, payload] if support::text_of(kind).as_deref() == Some("message") => {
                    return support::text_of(payload);
                }
                _ => continue,
            }
        }
    }
}

/// How many losses the server announced.
fn announced(con: &mut redis::Connection) -> i64 {
    support::info_field(con, "rlock", "rlock_losses_announced")
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1)
}

/// A holding of each kind on `key` by `owner`: its token and the message's kind word.
fn hold(con: &mut redis::Connection, kind: &str, key: &str, owner: &str) -> (i64, &'static str) {
    match kind {
        "lock" => (int(con, &["LOCK.ACQUIRE", key, owner]), "lock"),
        "read" => (int(con, &["RWLOCK.ACQUIRE", key, owner, "READ"]), "read"),
        "write" => (int(con, &["RWLOCK.ACQUIRE", key, owner, "WRITE"]), "write"),
        _ => {
            int(con, &["SEM.PERMITS", key, "3"]);
            (int(con, &["SEM.ACQUIRE", key, owner, "1"]), "permits")
        }
    }
}

const KINDS: [&str; 4] = ["lock", "read", "write", "permits"];

fn expect(listener: &mut Listener, cause: &str, kind: &str, token: i64, key: &str, owner: &str) {
    let want = format!("{cause} {kind} {token} {} {key} {owner}", key.len());
    assert_eq!(listener.next().as_deref(), Some(want.as_str()));
}

#[test]
fn each_end_from_outside_is_announced_for_every_kind() {
    let server = Server::start();
    let mut listener = Listener::open(&server);
    let mut con = server.conn();
    let force = |kind: &str| match kind {
        "lock" => "LOCK.FORCERELEASE",
        "read" | "write" => "RWLOCK.FORCERELEASE",
        _ => "SEM.FORCERELEASE",
    };
    type End = fn(&mut redis::Connection, &str);
    let ends: [(&str, End); 8] = [
        ("deleted", |c, k| _ = raw(c, &["DEL", k])),
        ("deleted", |c, k| _ = raw(c, &["UNLINK", k])),
        ("renamed", |c, k| _ = raw(c, &["RENAME", k, "elsewhere"])),
        ("moved", |c, k| _ = raw(c, &["MOVE", k, "1"])),
        ("overwritten", |c, k| _ = raw(c, &["SET", k, "x"])),
        ("flushed", |c, _| _ = raw(c, &["FLUSHDB"])),
        ("flushed", |c, _| _ = raw(c, &["FLUSHALL"])),
        ("swapped", |c, _| _ = raw(c, &["SWAPDB", "0", "2"])),
    ];
    for kind in KINDS {
        let (token, word) = hold(&mut con, kind, "k 1", "app:1");
        int(&mut con, &[force(kind), "k 1"]);
        expect(&mut listener, "forcerelease", word, token, "k 1", "app:1");
        for (cause, end) in ends {
            let before = announced(&mut con);
            raw(&mut con, &["FLUSHALL"]);
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(announced(&mut con), before, "a flush of nothing listened");
            let (token, word) = hold(&mut con, kind, "k 1", "app:1");
            end(&mut con, "k 1");
            expect(&mut listener, cause, word, token, "k 1", "app:1");
        }
        raw(&mut con, &["FLUSHALL"]);
    }
}

#[test]
fn a_count_taken_away_by_a_restore_is_announced() {
    let server = Server::start();
    let mut listener = Listener::open(&server);
    let mut con = server.conn();
    let token = int(&mut con, &["LOCK.ACQUIRE", "k", "app:1"]);
    let dump: Vec<u8> = redis::cmd("DUMP").arg("k").query(&mut con).expect("dump");
    int(&mut con, &["LOCK.ACQUIRE", "k", "app:1"]);
    redis::cmd("RESTORE")
        .arg("k")
        .arg(0)
        .arg(dump)
        .arg("REPLACE")
        .exec(&mut con)
        .expect("restore");
    expect(&mut listener, "restored", "lock", token, "k", "app:1");
    // A restore that keeps every hold announces nothing.
    let dump: Vec<u8> = redis::cmd("DUMP").arg("k").query(&mut con).expect("dump");
    int(&mut con, &["LOCK.ACQUIRE", "k", "app:1"]);
    redis::cmd("DEL").arg("k").exec(&mut con).expect("del");
    expect(&mut listener, "deleted", "lock", token, "k", "app:1");
    let _ = dump;
}

#[test]
fn a_lease_end_is_announced_with_and_without_waiters() {
    let server = Server::start();
    let mut listener = Listener::open(&server);
    let mut con = server.conn();
    let token = int(
        &mut con,
        &["LOCK.ACQUIRE", "alone", "app:1", "LEASE", "100"],
    );
    expect(&mut listener, "expired", "lock", token, "alone", "app:1");
    let token = int(&mut con, &["LOCK.ACQUIRE", "busy", "app:1", "LEASE", "100"]);
    let mut waiter = server.conn();
    redis::cmd("LOCK.ACQUIRE")
        .arg(&["busy", "other:2", "WAIT", "0"])
        .exec(&mut waiter)
        .expect("waits and gets it");
    expect(&mut listener, "expired", "lock", token, "busy", "app:1");
    let token = int(&mut con, &["SEM.PERMITS", "s", "1"]);
    let _ = token;
    let token = int(
        &mut con,
        &["SEM.ACQUIRE", "s", "app:1", "1", "LEASE", "100"],
    );
    redis::cmd("SEM.ACQUIRE")
        .arg(&["s", "other:2", "1", "WAIT", "0"])
        .exec(&mut waiter)
        .expect("waits and gets it");
    expect(&mut listener, "expired", "permits", token, "s", "app:1");
}

#[test]
fn own_releases_and_unlistened_owners_announce_nothing() {
    let server = Server::start();
    let listener = Listener::open(&server);
    let mut con = server.conn();
    for kind in KINDS {
        let before = announced(&mut con);
        hold(&mut con, kind, "k", "app:1");
        match kind {
            "lock" => int(&mut con, &["LOCK.RELEASE", "k", "app:1"]),
            "read" => int(&mut con, &["RWLOCK.RELEASE", "k", "app:1", "READ"]),
            "write" => int(&mut con, &["RWLOCK.RELEASE", "k", "app:1", "WRITE"]),
            _ => int(&mut con, &["SEM.RELEASE", "k", "app:1"]),
        };
        raw(&mut con, &["DEL", "k"]);
        hold(&mut con, kind, "k", "someone:1");
        raw(&mut con, &["DEL", "k"]);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(announced(&mut con), before, "{kind}");
    }
    drop(listener);
    let listened = |con: &mut redis::Connection| {
        support::info_field(con, "rlock", "rlock_listened_holdings")
            .and_then(|v| v.parse::<i64>().ok())
    };
    assert_eq!(listened(&mut con), Some(0));
}

#[test]
fn a_waiter_granted_the_lock_is_tracked_and_a_renewal_tracks_an_earlier_holding() {
    let server = Server::start();
    let mut con = server.conn();
    // Held before anyone listened: tracked from its next renewal.
    let early = int(&mut con, &["LOCK.ACQUIRE", "early", "app:9"]);
    let mut listener = Listener::open(&server);
    assert_eq!(int(&mut con, &["LOCK.RENEW", "early", "app:9"]), 1);
    raw(&mut con, &["DEL", "early"]);
    expect(&mut listener, "deleted", "lock", early, "early", "app:9");
    // A waiter the lock is handed to at its holder's lease end.
    int(&mut con, &["LOCK.ACQUIRE", "k", "other:1", "LEASE", "100"]);
    let mut waiter = server.conn();
    let token: i64 = redis::cmd("LOCK.ACQUIRE")
        .arg(&["k", "app:2", "WAIT", "0"])
        .query(&mut waiter)
        .expect("handed the lock");
    raw(&mut con, &["DEL", "k"]);
    expect(&mut listener, "deleted", "lock", token, "k", "app:2");
}

#[test]
fn a_closed_listener_stops_the_tracking_and_bad_prefixes_are_refused() {
    let server = Server::start();
    let mut con = server.conn();
    let listened = |con: &mut redis::Connection| {
        support::info_field(con, "rlock", "rlock_listened_holdings")
            .and_then(|v| v.parse::<i64>().ok())
    };
    {
        let _listener = Listener::open(&server);
        int(&mut con, &["LOCK.ACQUIRE", "k", "app:1"]);
        assert_eq!(listened(&mut con), Some(1));
    }
    assert!(wait_until(LIMIT, || {
        let list: String = redis::cmd("CLIENT")
            .arg(&["LIST", "TYPE", "pubsub"])
            .query(&mut con)
            .unwrap_or_default();
        list.is_empty()
    }));
    int(&mut con, &["LOCK.ACQUIRE", "k2", "app:1"]);
    assert_eq!(listened(&mut con), Some(1));
    assert_eq!(
        support::error_text(&raw(&mut con, &["LOCK.LISTEN", ""])),
        Some("ERR prefix must be 1 to 256 bytes".to_owned())
    );
    let long = "a".repeat(257);
    assert!(support::error_text(&raw(&mut con, &["LOCK.LISTEN", &long])).is_some());
    assert!(support::error_text(&raw(&mut con, &["LOCK.LISTEN"])).is_some());
}

#[test]
fn an_evicted_holding_is_announced() {
    let server = Server::start();
    let mut listener = Listener::open(&server);
    let mut con = server.conn();
    let token = int(&mut con, &["LOCK.ACQUIRE", "k", "app:1"]);
    raw(
        &mut con,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-random"],
    );
    raw(&mut con, &["CONFIG", "SET", "maxmemory", "1"]);
    // Any write makes the server evict until it fits: every key goes.
    let _ = raw(&mut con, &["SET", "filler", "x"]);
    raw(&mut con, &["CONFIG", "SET", "maxmemory", "0"]);
    expect(&mut listener, "evicted", "lock", token, "k", "app:1");
}
