//! SPEC.md §1 and §4: locks made by the module and by Redisson's `RLock` Lua scripts are
//! the same locks. The scripts below follow Redisson's `tryLockInner`, `unlockInner` and
//! `renewExpiration`, and run through `SCRIPT LOAD` + `EVALSHA` as Redisson does.

mod support;

use redis::Value;
use support::redisson::{RENEW, TRY_LOCK, UNLOCK};
use support::{
    channel, field, hget, hgetall, int, pairs, pttl, raw, text_of, Message, Server, Subscriber,
    DEFAULT_PREFIX,
};

/// A connection with the three scripts loaded.
struct Redisson {
    con: redis::Connection,
    try_lock: String,
    unlock: String,
    renew: String,
}

impl Redisson {
    fn new(server: &Server) -> Redisson {
        let mut con = server.conn();
        let mut load = |body: &str| {
            let sha = raw(&mut con, &["SCRIPT", "LOAD", body]);
            text_of(&sha).expect("SCRIPT LOAD replies a sha")
        };
        let try_lock = load(TRY_LOCK);
        let unlock = load(UNLOCK);
        let renew = load(RENEW);
        Redisson {
            con,
            try_lock,
            unlock,
            renew,
        }
    }

    fn try_lock(&mut self, key: &str, owner: &str, lease: u64) -> Value {
        let sha = self.try_lock.clone();
        raw(
            &mut self.con,
            &["EVALSHA", &sha, "1", key, &lease.to_string(), owner],
        )
    }

    fn unlock(&mut self, key: &str, owner: &str, lease: u64) -> Value {
        let sha = self.unlock.clone();
        let ch = String::from_utf8(channel(DEFAULT_PREFIX, key.as_bytes())).expect("utf-8");
        raw(
            &mut self.con,
            &[
                "EVALSHA",
                &sha,
                "2",
                key,
                &ch,
                "0",
                &lease.to_string(),
                owner,
            ],
        )
    }

    fn renew(&mut self, key: &str, owner: &str, lease: u64) -> Value {
        let sha = self.renew.clone();
        raw(
            &mut self.con,
            &["EVALSHA", &sha, "1", key, &lease.to_string(), owner],
        )
    }
}

fn info(con: &mut redis::Connection, key: &str) -> Vec<(Value, Value)> {
    pairs(&raw(con, &["LOCK.INFO", key]))
}

fn info_int(pairs: &[(Value, Value)], name: &str) -> i64 {
    match field(pairs, name) {
        Some(Value::Int(n)) => *n,
        other => panic!("LOCK.INFO {name}: {other:?}"),
    }
}

#[test]
fn script_reenters_renews_and_releases_a_module_lock() {
    let server = Server::start();
    let mut con = server.conn();
    let mut rs = Redisson::new(&server);
    let token = int(
        &mut con,
        &["LOCK.ACQUIRE", "lock:1", "uuid:1", "LEASE", "60000"],
    );

    assert_eq!(rs.try_lock("lock:1", "uuid:1", 120_000), Value::Nil);
    let fields = hgetall(&mut con, b"lock:1");
    assert_eq!(
        fields.get(&b"uuid:1"[..]).map(Vec::as_slice),
        Some(&b"2"[..])
    );
    assert_eq!(
        fields.get(&b"@token"[..]).map(Vec::as_slice),
        Some(token.to_string().as_bytes()),
        "the token must survive a script reentry"
    );
    assert!(pttl(&mut con, b"lock:1") > 110_000);
    assert_eq!(int(&mut con, &["LOCK.ACQUIRE", "lock:1", "uuid:1"]), token);

    assert_eq!(rs.renew("lock:1", "uuid:1", 90_000), Value::Int(1));
    let ttl = pttl(&mut con, b"lock:1");
    assert!((80_000..=90_000).contains(&ttl), "{ttl}");
    assert_eq!(rs.renew("lock:1", "uuid:2", 90_000), Value::Int(0));

    assert_eq!(rs.unlock("lock:1", "uuid:2", 30_000), Value::Nil);
    assert_eq!(rs.unlock("lock:1", "uuid:1", 30_000), Value::Int(0));
    assert_eq!(rs.unlock("lock:1", "uuid:1", 30_000), Value::Int(0));
    let i = info(&mut con, "lock:1");
    assert_eq!((info_int(&i, "holds"), info_int(&i, "token")), (1, token));
    assert_eq!(rs.unlock("lock:1", "uuid:1", 30_000), Value::Int(1));
    assert_eq!(int(&mut con, &["EXISTS", "lock:1"]), 0);
    assert_eq!(rs.unlock("lock:1", "uuid:1", 30_000), Value::Nil);
}

#[test]
fn module_commands_work_on_a_script_lock() {
    let server = Server::start();
    let mut con = server.conn();
    let mut rs = Redisson::new(&server);
    assert_eq!(rs.try_lock("lock:1", "uuid:1", 60_000), Value::Nil);

    let i = info(&mut con, "lock:1");
    assert_eq!(
        text_of(field(&i, "owner").expect("owner")).as_deref(),
        Some("uuid:1")
    );
    assert_eq!((info_int(&i, "holds"), info_int(&i, "token")), (1, 0));
    let ttl = info_int(&i, "ttl");
    assert!((50_000..=60_000).contains(&ttl), "{ttl}");

    assert_eq!(
        int(
            &mut con,
            &["LOCK.ACQUIRE", "lock:1", "uuid:1", "LEASE", "120000"]
        ),
        0
    );
    assert_eq!(hget(&mut con, "lock:1", "uuid:1").as_deref(), Some("2"));
    assert!(pttl(&mut con, b"lock:1") > 110_000);
    assert_eq!(
        int(
            &mut con,
            &["LOCK.RENEW", "lock:1", "uuid:1", "LEASE", "40000"]
        ),
        1
    );
    let ttl = pttl(&mut con, b"lock:1");
    assert!((30_000..=40_000).contains(&ttl), "{ttl}");
    assert_eq!(int(&mut con, &["LOCK.RENEW", "lock:1", "uuid:2"]), 0);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "lock:1", "uuid:1"]), 1);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "lock:1", "uuid:1"]), 0);
    assert_eq!(int(&mut con, &["EXISTS", "lock:1"]), 0);

    assert_eq!(rs.try_lock("lock:2", "uuid:1", 60_000), Value::Nil);
    assert_eq!(int(&mut con, &["LOCK.FORCERELEASE", "lock:2"]), 1);
    assert_eq!(int(&mut con, &["EXISTS", "lock:2"]), 0);
}

#[test]
fn script_gets_the_pttl_when_the_module_holds_the_lock() {
    let server = Server::start();
    let mut con = server.conn();
    let mut rs = Redisson::new(&server);
    int(
        &mut con,
        &["LOCK.ACQUIRE", "lock:1", "uuid:1", "LEASE", "60000"],
    );
    let before = hgetall(&mut con, b"lock:1");
    match rs.try_lock("lock:1", "uuid:2", 30_000) {
        Value::Int(ttl) => assert!((50_000..=60_000).contains(&ttl), "{ttl}"),
        other => panic!("contended script lock replied {other:?}"),
    }
    assert_eq!(hgetall(&mut con, b"lock:1"), before);
}

#[test]
fn module_gets_nil_when_a_script_holds_the_lock() {
    let server = Server::start();
    let mut con = server.conn();
    let mut rs = Redisson::new(&server);
    assert_eq!(rs.try_lock("lock:1", "uuid:1", 60_000), Value::Nil);
    let before = hgetall(&mut con, b"lock:1");
    assert_eq!(
        raw(&mut con, &["LOCK.ACQUIRE", "lock:1", "uuid:2"]),
        Value::Nil
    );
    assert_eq!(hgetall(&mut con, b"lock:1"), before);
    assert_eq!(rs.unlock("lock:1", "uuid:1", 30_000), Value::Int(1));
    let token = int(&mut con, &["LOCK.ACQUIRE", "lock:1", "uuid:2"]);
    assert!(token > 0);
    match rs.try_lock("lock:1", "uuid:1", 30_000) {
        Value::Int(ttl) => assert!(ttl > 0),
        other => panic!("contended script lock replied {other:?}"),
    }
}

#[test]
fn subscriber_hears_both_kinds_of_release() {
    let server = Server::start();
    let mut con = server.conn();
    let mut rs = Redisson::new(&server);
    let ch = channel(DEFAULT_PREFIX, b"lock:1");
    let mut sub = Subscriber::both(&server, &ch);
    let release = Message {
        kind: "message".into(),
        channel: ch.clone(),
        payload: b"0".to_vec(),
    };

    assert_eq!(rs.try_lock("lock:1", "uuid:1", 60_000), Value::Nil);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "lock:1", "uuid:1"]), 0);
    assert_eq!(sub.next(), release);

    int(&mut con, &["LOCK.ACQUIRE", "lock:1", "uuid:1"]);
    assert_eq!(rs.unlock("lock:1", "uuid:1", 30_000), Value::Int(1));
    assert_eq!(sub.next(), release);

    raw(&mut con, &[&b"PUBLISH"[..], &ch, b"sentinel"]);
    assert_eq!(sub.until(b"sentinel"), []);
}
