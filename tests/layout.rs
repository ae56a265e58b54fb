//! SPEC.md §1: the hash layout of a lock, owner id rules, and keys that are not locks.

mod support;

use support::{
    expect_error, hash_of, hgetall, int, key_state, pttl, raw, Server, NOT_A_LOCK, WRONGTYPE,
};

const INVALID_EMPTY: &str = "ERR invalid owner: must not be empty";
const INVALID_LONG: &str = "ERR invalid owner: longer than 256 bytes";
const INVALID_RESERVED: &str = "ERR invalid owner: must not start with '@'";

#[test]
fn acquire_writes_owner_count_and_token_fields() {
    let server = Server::start();
    let mut con = server.conn();
    let token = int(
        &mut con,
        &["LOCK.ACQUIRE", "lock:1", "client-a:1", "LEASE", "10000"],
    );
    assert!(token > 0, "token {token} must be positive");
    assert_eq!(
        hgetall(&mut con, b"lock:1"),
        hash_of(&[
            (b"client-a:1", b"1"),
            (b"@token", token.to_string().as_bytes())
        ])
    );
    let ttl = pttl(&mut con, b"lock:1");
    assert!((9000..=10000).contains(&ttl), "PTTL {ttl} for LEASE 10000");
    assert_eq!(
        raw(&mut con, &["TYPE", "lock:1"]),
        redis::Value::SimpleString("hash".into())
    );
}

#[test]
fn reentry_counts_up_in_the_owner_field() {
    let server = Server::start();
    let mut con = server.conn();
    let token = int(&mut con, &["LOCK.ACQUIRE", "lock:1", "a"]);
    int(&mut con, &["LOCK.ACQUIRE", "lock:1", "a"]);
    int(&mut con, &["LOCK.ACQUIRE", "lock:1", "a"]);
    assert_eq!(
        hgetall(&mut con, b"lock:1"),
        hash_of(&[(b"a", b"3"), (b"@token", token.to_string().as_bytes())])
    );
}

#[test]
fn default_lease_is_thirty_seconds() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "lock:1", "a"]);
    let ttl = pttl(&mut con, b"lock:1");
    assert!(
        (29000..=30000).contains(&ttl),
        "PTTL {ttl} for the default lease"
    );
}

#[test]
fn default_lease_follows_the_config() {
    let server = Server::start();
    let mut con = server.conn();
    let ok = raw(&mut con, &["CONFIG", "SET", "rlock.default-lease", "5000"]);
    assert_eq!(ok, redis::Value::Okay);
    int(&mut con, &["LOCK.ACQUIRE", "lock:1", "a"]);
    let ttl = pttl(&mut con, b"lock:1");
    assert!(
        (4000..=5000).contains(&ttl),
        "PTTL {ttl} for default lease 5000"
    );
}

#[test]
fn owner_of_256_bytes_is_accepted() {
    let server = Server::start();
    let mut con = server.conn();
    let owner = vec![b'o'; 256];
    int(&mut con, &[&b"LOCK.ACQUIRE"[..], b"lock:1", &owner]);
    let fields = hgetall(&mut con, b"lock:1");
    assert_eq!(fields.get(&owner).map(Vec::as_slice), Some(&b"1"[..]));
    assert_eq!(int(&mut con, &[&b"LOCK.RENEW"[..], b"lock:1", &owner]), 1);
    assert_eq!(int(&mut con, &[&b"LOCK.RELEASE"[..], b"lock:1", &owner]), 0);
}

#[test]
fn owner_with_non_utf8_bytes_is_stored_verbatim() {
    let server = Server::start();
    let mut con = server.conn();
    let owner: &[u8] = b"\xff\xfe\x00 \r\nowner@\x80";
    let token = int(&mut con, &[&b"LOCK.ACQUIRE"[..], b"lock:bin", owner]);
    assert_eq!(
        hgetall(&mut con, b"lock:bin"),
        hash_of(&[(owner, b"1"), (b"@token", token.to_string().as_bytes())])
    );
    let again = int(&mut con, &[&b"LOCK.ACQUIRE"[..], b"lock:bin", owner]);
    assert_eq!(again, token);
    assert_eq!(
        int(&mut con, &[&b"LOCK.RELEASE"[..], b"lock:bin", owner]),
        1
    );
    assert_eq!(
        int(&mut con, &[&b"LOCK.RELEASE"[..], b"lock:bin", owner]),
        0
    );
    assert_eq!(int(&mut con, &["EXISTS", "lock:bin"]), 0);
}

#[test]
fn invalid_owners_are_refused_by_every_command_that_takes_one() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "lock:1", "a", "LEASE", "60000"]);
    let before = key_state(&mut con, b"lock:1");
    let long = vec![b'x'; 257];
    let cases: [(&[u8], &str); 4] = [
        (b"", INVALID_EMPTY),
        (&long, INVALID_LONG),
        (b"@token", INVALID_RESERVED),
        (b"@", INVALID_RESERVED),
    ];
    for key in [&b"lock:1"[..], b"lock:absent"] {
        for (owner, text) in cases {
            for cmd in ["LOCK.ACQUIRE", "LOCK.RELEASE", "LOCK.RENEW"] {
                expect_error(&mut con, &[cmd.as_bytes(), key, owner], text);
            }
            expect_error(
                &mut con,
                &[&b"LOCK.ACQUIRE"[..], key, owner, b"LEASE", b"1000"],
                text,
            );
        }
    }
    assert_eq!(key_state(&mut con, b"lock:1"), before);
    assert_eq!(int(&mut con, &["EXISTS", "lock:absent"]), 0);
}

/// Every command, given `key`, with the arguments that would otherwise succeed.
fn every_command(key: &str) -> Vec<Vec<String>> {
    [
        vec!["LOCK.ACQUIRE", key, "a"],
        vec!["LOCK.ACQUIRE", key, "a", "LEASE", "1000"],
        vec!["LOCK.ACQUIRE", key, "someone-else"],
        vec!["LOCK.RELEASE", key, "a"],
        vec!["LOCK.RENEW", key, "a"],
        vec!["LOCK.RENEW", key, "a", "LEASE", "1000"],
        vec!["LOCK.INFO", key],
        vec!["LOCK.FORCERELEASE", key],
    ]
    .into_iter()
    .map(|v| v.into_iter().map(String::from).collect())
    .collect()
}

#[test]
fn keys_that_are_not_hashes_are_wrongtype_and_unchanged() {
    let server = Server::start();
    let mut con = server.conn();
    raw(&mut con, &["SET", "s", "a"]);
    raw(&mut con, &["PEXPIRE", "s", "600000"]);
    raw(&mut con, &["RPUSH", "l", "a", "1"]);
    raw(&mut con, &["SADD", "set", "a"]);
    raw(&mut con, &["ZADD", "z", "1", "a"]);
    for key in ["s", "l", "set", "z"] {
        let before = key_state(&mut con, key.as_bytes());
        for cmd in every_command(key) {
            expect_error(&mut con, &cmd, WRONGTYPE);
        }
        assert_eq!(key_state(&mut con, key.as_bytes()), before, "key {key}");
    }
}

#[test]
fn hashes_not_in_lock_shape_are_not_locks_and_unchanged() {
    let server = Server::start();
    let mut con = server.conn();
    let shapes: &[(&str, &[&str])] = &[
        ("two-owners", &["a", "1", "b", "1"]),
        ("count-zero", &["a", "0"]),
        ("count-negative", &["a", "-1"]),
        ("count-text", &["a", "x"]),
        ("count-float", &["a", "1.5"]),
        ("count-empty", &["a", ""]),
        ("extra-at-field", &["a", "1", "@other", "1"]),
        ("token-only", &["@token", "5"]),
        ("bad-token", &["a", "1", "@token", "t"]),
        ("two-owners-token", &["a", "1", "b", "2", "@token", "3"]),
    ];
    for (i, (name, fields)) in shapes.iter().enumerate() {
        let key = format!("hash:{name}");
        let mut hset = vec!["HSET", key.as_str()];
        hset.extend_from_slice(fields);
        raw(&mut con, &hset);
        if i % 2 == 0 {
            raw(&mut con, &["PEXPIRE", key.as_str(), "600000"]);
        }
        let before = key_state(&mut con, key.as_bytes());
        for cmd in every_command(&key) {
            expect_error(&mut con, &cmd, NOT_A_LOCK);
        }
        assert_eq!(key_state(&mut con, key.as_bytes()), before, "key {key}");
    }
}

#[test]
fn a_hash_written_by_hand_in_lock_shape_is_a_lock() {
    let server = Server::start();
    let mut con = server.conn();
    raw(&mut con, &["HSET", "lock:h", "a", "2", "@token", "77"]);
    raw(&mut con, &["PEXPIRE", "lock:h", "60000"]);
    assert_eq!(int(&mut con, &["LOCK.ACQUIRE", "lock:h", "a"]), 77);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "lock:h", "a"]), 2);
}

/// A lock whose hash is a hashtable with many empty buckets (it once had many fields, and
/// was not shrunk while a fork ran) is read whole: every command sees the lock, not
/// `WRONGTYPE key is not a lock`.
#[test]
fn a_lock_in_a_large_hashtable_is_a_lock() {
    let server = Server::start();
    let mut con = server.conn();
    for key in ["pad:1", "pad:2", "pad:3"] {
        raw(&mut con, &["SET", key, "x"]);
    }
    // A BGSAVE child that takes ~0.3 s: the hash is not resized meanwhile.
    raw(&mut con, &["CONFIG", "SET", "rdb-key-save-delay", "100000"]);
    raw(&mut con, &["BGSAVE"]);
    let mut pipe = redis::pipe();
    for i in 0..2000 {
        pipe.cmd("HSET")
            .arg("big")
            .arg(format!("f{i}"))
            .arg("v")
            .ignore();
    }
    pipe.cmd("HSET")
        .arg("big")
        .arg("o")
        .arg("1")
        .arg("@token")
        .arg("7")
        .ignore();
    for i in 0..2000 {
        pipe.cmd("HDEL").arg("big").arg(format!("f{i}")).ignore();
    }
    let _: () = pipe.query(&mut con).expect("build the hash");
    raw(&mut con, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    assert_eq!(
        raw(&mut con, &["PEXPIRE", "big", "60000"]),
        redis::Value::Int(1)
    );
    let info = support::pairs(&raw(&mut con, &["LOCK.INFO", "big"]));
    assert_eq!(support::field(&info, "token"), Some(&redis::Value::Int(7)));
    assert_eq!(support::field(&info, "holds"), Some(&redis::Value::Int(1)));
    assert_eq!(
        raw(&mut con, &["LOCK.ACQUIRE", "big", "p"]),
        redis::Value::Nil
    );
    assert_eq!(int(&mut con, &["LOCK.ACQUIRE", "big", "o"]), 7);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "big", "o"]), 1);
    assert_eq!(int(&mut con, &["LOCK.FORCERELEASE", "big"]), 1);
}
