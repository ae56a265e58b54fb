//! `LOCK.FENCED` with ACL users, a replica and Redis Cluster.

use redis::Value;

use crate::support::{
    error_text, free_port, int, keyspace, pairs, raw, text_of, wait_until, Server,
};
use crate::{fenced, SETTLE};

#[track_caller]
fn assert_code(reply: &Value, code: &str) {
    let text = error_text(reply).unwrap_or_else(|| panic!("expected {code}, got {reply:?}"));
    assert!(text.starts_with(code), "expected {code}, got {text:?}");
}

#[test]
fn a_user_without_permission_for_the_inner_command_or_its_keys_gets_noperm() {
    let server = Server::start();
    let mut admin = server.conn();
    let mut user = |rules: &[&str]| {
        let mut args = vec!["ACL", "SETUSER"];
        args.extend_from_slice(rules);
        assert_eq!(raw(&mut admin, &args), Value::Okay);
    };
    user(&["nohset", "on", ">pw", "+@all", "-hset", "~*"]);
    user(&["ordersonly", "on", ">pw", "+@all", "~lock:*", "~{o}:*"]);
    user(&["readslock", "on", ">pw", "+@all", "%R~lock:*", "~{o}:*"]);
    let token = int(&mut admin, &["LOCK.ACQUIRE", "lock:{o}", "a"]).to_string();
    let before = keyspace(&mut admin);

    let mut nohset = server.conn_as("nohset", "pw");
    let hset = fenced("lock:{o}", "a", &token, &["HSET", "{o}:d", "f", "v"]);
    assert_code(&raw(&mut nohset, &hset), "NOPERM");
    let script = "return redis.call('HSET', KEYS[1], 'f', 'v')";
    let direct = ["EVAL", script, "1", "{o}:d"];
    let eval = fenced("lock:{o}", "a", &token, &direct);
    // Inside a script the server's own check answers, as it does to the script alone (its
    // code is NOPERM from Redis 7.2 on, ERR on 7.0).
    let refused = raw(&mut nohset, &eval);
    assert!(error_text(&refused).is_some(), "{refused:?}");
    assert_eq!(refused, raw(&mut nohset, &direct));

    let mut orders = server.conn_as("ordersonly", "pw");
    let elsewhere = fenced("lock:{o}", "a", &token, &["SET", "secret", "v"]);
    assert_code(&raw(&mut orders, &elsewhere), "NOPERM");
    assert_eq!(keyspace(&mut admin), before, "nothing was written");
    // The same users may do what they are allowed to.
    let set = fenced("lock:{o}", "a", &token, &["SET", "{o}:x", "v"]);
    assert_eq!(raw(&mut nohset, &set), Value::Okay);
    assert_eq!(int(&mut orders, &hset), 1);
    // LOCK.FENCED only reads the lock: a read-only pattern on locks is enough.
    let mut reads_lock = server.conn_as("readslock", "pw");
    let other = fenced("lock:{o}", "a", &token, &["HSET", "{o}:e", "f", "v"]);
    assert_eq!(int(&mut reads_lock, &other), 1);
    assert_code(
        &raw(&mut reads_lock, &["LOCK.RELEASE", "lock:{o}", "a"]),
        "NOPERM",
    );
}

#[test]
fn the_replica_equals_the_master_after_fenced_writes_and_scripts() {
    let master = Server::start();
    let replica = master.replica();
    let mut con = master.conn();
    let token = int(
        &mut con,
        &["LOCK.ACQUIRE", "lock:{o}", "a", "LEASE", "60000"],
    )
    .to_string();
    let script = "redis.call('HSET', KEYS[1], 'n', ARGV[1]); redis.call('RPUSH', KEYS[2], ARGV[1]); \
                  redis.call('PEXPIRE', KEYS[2], 600000); return redis.call('HINCRBY', KEYS[1], 'c', 1)";
    for i in 0..5 {
        let n = i.to_string();
        int(
            &mut con,
            &fenced("lock:{o}", "a", &token, &["HSET", "{o}:d", &n, &n]),
        );
        let eval = ["EVAL", script, "2", "{o}:h", "{o}:l", &n];
        assert_eq!(
            int(&mut con, &fenced("lock:{o}", "a", &token, &eval)),
            i + 1
        );
    }
    // A refused write replicates nothing.
    let stale = fenced("lock:{o}", "a", "1", &["SET", "{o}:stale", "v"]);
    assert_code(&raw(&mut con, &stale), "FENCED");
    assert_eq!(int(&mut con, &["WAIT", "1", "5000"]), 1);
    let mut rep = replica.conn();
    let same = wait_until(SETTLE, || keyspace(&mut rep) == keyspace(&mut con));
    assert!(same, "replica differs from master");
    assert_eq!(int(&mut rep, &["EXISTS", "{o}:stale"]), 0);
    assert_eq!(int(&mut rep, &["LLEN", "{o}:l"]), 5);
}

#[test]
fn an_aof_replays_the_effects_of_fenced_writes() {
    let server = Server::start_with(&["--appendonly", "yes", "--enable-debug-command", "yes"]);
    let mut con = server.conn();
    let token = int(
        &mut con,
        &["LOCK.ACQUIRE", "lock:{o}", "a", "LEASE", "60000"],
    )
    .to_string();
    let script = "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('INCR', KEYS[2])";
    int(
        &mut con,
        &fenced("lock:{o}", "a", &token, &["HSET", "{o}:d", "f", "v"]),
    );
    let eval = ["EVAL", script, "2", "{o}:s", "{o}:n", "x"];
    int(&mut con, &fenced("lock:{o}", "a", &token, &eval));
    let before = keyspace(&mut con);
    assert_eq!(raw(&mut con, &["DEBUG", "LOADAOF"]), Value::Okay);
    assert_eq!(
        keyspace(&mut con),
        before,
        "the AOF gives back the same data"
    );
}

/// A cluster node with the module, its bus on a port of its own.
fn node() -> Server {
    let bus = free_port().to_string();
    Server::start_with(&["--cluster-enabled", "yes", "--cluster-port", &bus])
}

fn text(con: &mut redis::Connection, args: &[&str]) -> String {
    text_of(&raw(con, args)).unwrap_or_else(|| panic!("{args:?} gave no text"))
}

/// Two masters: the first serves slots 0-8191, the second 8192-16383.
fn two_masters() -> (Server, Server) {
    let (a, b) = (node(), node());
    for (s, first, last) in [(&a, "0", "8191"), (&b, "8192", "16383")] {
        let reply = raw(&mut s.conn(), &["CLUSTER", "ADDSLOTSRANGE", first, last]);
        assert_eq!(reply, Value::Okay);
    }
    let config = raw(&mut a.conn(), &["CONFIG", "GET", "cluster-port"]);
    let bus = pairs(&config)
        .first()
        .and_then(|(_, v)| text_of(v))
        .expect("port");
    let port = a.port().to_string();
    let meet = ["CLUSTER", "MEET", "127.0.0.1", &port, &bus];
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

fn slot(con: &mut redis::Connection, key: &str) -> i64 {
    int(con, &["CLUSTER", "KEYSLOT", key])
}

#[test]
fn in_a_cluster_keys_must_share_the_locks_slot_and_go_to_its_node() {
    let (a, b) = two_masters();
    let mut con = a.conn();
    // lock:{a} is in slot 15495 (the second master), lock:{b} in 3300 (the first).
    let (here, there) = ("lock:{b}", "lock:{a}");
    assert!(slot(&mut con, here) <= 8191 && slot(&mut con, there) > 8191);
    let token = int(&mut con, &["LOCK.ACQUIRE", here, "o"]).to_string();
    let same = fenced(here, "o", &token, &["HSET", "order:{b}", "f", "v"]);
    assert_eq!(int(&mut con, &same), 1);
    // A key of another slot: refused before anything runs.
    let cross = fenced(here, "o", &token, &["HSET", "order:{a}", "f", "v"]);
    assert_code(&raw(&mut con, &cross), "CROSSSLOT");
    let script = fenced(
        here,
        "o",
        &token,
        &["EVAL", "return 1", "2", "x:{b}", "x:{a}"],
    );
    assert_code(&raw(&mut con, &script), "CROSSSLOT");
    // A lock and data served by the other node: the node redirects, by the lock's slot.
    let moved = fenced(there, "o", "1", &["HSET", "order:{a}", "f", "v"]);
    let reply = raw(&mut con, &moved);
    let text = error_text(&reply).unwrap_or_default();
    let port = b.port().to_string();
    assert!(
        text.starts_with("MOVED") && text.ends_with(&port),
        "{reply:?}"
    );
    assert_eq!(int(&mut b.conn(), &["EXISTS", "order:{a}"]), 0);
}
