//! Redis Cluster: a lock whose key migrates while clients wait on it, and release messages
//! in a cluster with a replica. Nodes are test servers with `--cluster-enabled yes`, joined
//! with `CLUSTER MEET` on loopback.

use redis::Value;

use crate::support::{channel, free_port, int, raw, text_of, wait_until, Server, Subscriber};
use crate::wire::Reply;
use crate::{assert_alive, enqueue, enqueue_command, owner, SETTLE};

/// A cluster node with the module, its bus on a port of its own.
fn node() -> Server {
    let bus = free_port().to_string();
    Server::start_with(&["--cluster-enabled", "yes", "--cluster-port", &bus])
}

fn text(con: &mut redis::Connection, args: &[&str]) -> String {
    text_of(&raw(con, args)).unwrap_or_else(|| panic!("{args:?} gave no text"))
}

fn id(server: &Server) -> String {
    text(&mut server.conn(), &["CLUSTER", "MYID"])
}

/// Makes `b` meet `a`, and waits until both know two nodes and the cluster is up.
fn join(a: &Server, b: &Server) {
    let port = a.port().to_string();
    let config = raw(&mut a.conn(), &["CONFIG", "GET", "cluster-port"]);
    let bus = crate::support::pairs(&config)
        .first()
        .and_then(|(_, v)| text_of(v))
        .expect("cluster-port");
    let meet = ["CLUSTER", "MEET", "127.0.0.1", &port, &bus];
    assert_eq!(raw(&mut b.conn(), &meet), Value::Okay);
    for server in [a, b] {
        let mut con = server.conn();
        let ready = wait_until(SETTLE, || {
            let info = text(&mut con, &["CLUSTER", "INFO"]);
            info.contains("cluster_state:ok") && info.contains("cluster_known_nodes:2")
        });
        assert!(ready, "the cluster did not form:\n{}", server.log());
    }
}

/// Two masters: the first serves slots 0-8191, the second 8192-16383.
fn two_masters() -> (Server, Server) {
    let (a, b) = (node(), node());
    let add = |s: &Server, first: &str, last: &str| {
        let reply = raw(&mut s.conn(), &["CLUSTER", "ADDSLOTSRANGE", first, last]);
        assert_eq!(reply, Value::Okay);
    };
    add(&a, "0", "8191");
    add(&b, "8192", "16383");
    join(&a, &b);
    (a, b)
}

/// A key whose slot the first master of [`two_masters`] serves.
const KEY: &str = "lock:a";

fn slot_of(con: &mut redis::Connection, key: &str) -> String {
    int(con, &["CLUSTER", "KEYSLOT", key]).to_string()
}

/// Starts moving `slot` from `source` to `target` and migrates [`KEY`] there (the slot is
/// left migrating and importing); the target's port.
fn move_key(source: &Server, target: &Server, slot: &str) -> String {
    move_keys(source, target, slot, &[KEY])
}

/// [`move_key`] for `keys` (of `slot`).
fn move_keys(source: &Server, target: &Server, slot: &str, keys: &[&str]) -> String {
    let (source_id, target_id) = (id(source), id(target));
    let importing = ["CLUSTER", "SETSLOT", slot, "IMPORTING", &source_id];
    assert_eq!(raw(&mut target.conn(), &importing), Value::Okay);
    let migrating = ["CLUSTER", "SETSLOT", slot, "MIGRATING", &target_id];
    assert_eq!(raw(&mut source.conn(), &migrating), Value::Okay);
    let port = target.port().to_string();
    let mut moved = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
    moved.extend_from_slice(keys);
    assert_eq!(raw(&mut source.conn(), &moved), Value::Okay);
    port
}

/// Ends the move of `slot`: it belongs to `target`, on both nodes.
fn finish_move(source: &Server, target: &Server, slot: &str) {
    let target_id = id(target);
    for server in [target, source] {
        let done = ["CLUSTER", "SETSLOT", slot, "NODE", &target_id];
        assert_eq!(raw(&mut server.conn(), &done), Value::Okay);
    }
}

#[test]
fn a_lock_migrated_away_is_not_recreated_and_its_waiters_are_redirected() {
    let (mut source, target) = two_masters();
    let (mut s, mut t) = (source.conn(), target.conn());
    let slot = slot_of(&mut s, KEY);
    assert!(slot.parse::<u16>().is_ok_and(|n| n <= 8191), "{slot}");
    let token = int(&mut s, &["LOCK.ACQUIRE", KEY, "a", "LEASE", "60000"]);
    let mut waiter = enqueue(&source, KEY, &["b", "WAIT", "0"]);

    let target_id = id(&target);
    let port = move_key(&source, &target, &slot);

    // The waiter is sent after the key, as Redis sends a client.
    match waiter.reply() {
        Reply::Error(e) => assert_eq!(e, format!("ASK {slot} 127.0.0.1:{port}")),
        other => panic!("the waiter got {other:?}"),
    }
    assert!(!waiter.has_pending(), "the waiter got a second reply");
    // One holder: a, on the target; nothing was re-created on the source.
    let count = ["CLUSTER", "COUNTKEYSINSLOT", &slot];
    assert_eq!(int(&mut s, &count), 0);
    let holder: Vec<Value> = redis::pipe()
        .cmd("ASKING")
        .cmd("LOCK.INFO")
        .arg(KEY)
        .query(&mut t)
        .expect("asking + LOCK.INFO");
    let info = crate::support::pairs(&holder[1]);
    let field = |name: &str| crate::support::field(&info, name).cloned();
    assert_eq!(
        field("owner").as_ref().and_then(text_of).as_deref(),
        Some("a")
    );
    assert_eq!(field("token"), Some(Value::Int(token)));

    // The reshard finishes, and b waits on the new owner and gets the lock from a.
    for con in [&mut s, &mut t] {
        let done = ["CLUSTER", "SETSLOT", &slot, "NODE", &target_id];
        assert_eq!(raw(con, &done), Value::Okay);
    }
    let mut waiter = enqueue(&target, KEY, &["b", "WAIT", "0"]);
    assert_eq!(int(&mut t, &["LOCK.RELEASE", KEY, "a"]), 0);
    match waiter.reply() {
        Reply::Int(t) => assert!(t > 0),
        other => panic!("the waiter got {other:?}"),
    }
    assert_eq!(owner(&mut t, KEY).as_deref(), Some("b"));
    assert_eq!(int(&mut s, &count), 0);
    assert_alive(&mut source);
}

/// A master serving every slot, and its replica.
fn master_and_replica() -> (Server, Server) {
    let (master, replica) = (node(), node());
    let all = ["CLUSTER", "ADDSLOTSRANGE", "0", "16383"];
    assert_eq!(raw(&mut master.conn(), &all), Value::Okay);
    join(&master, &replica);
    let master_id = id(&master);
    let mut r = replica.conn();
    assert_eq!(
        raw(&mut r, &["CLUSTER", "REPLICATE", &master_id]),
        Value::Okay
    );
    let synced = wait_until(SETTLE, || {
        crate::replication_field(&replica, "master_link_status").as_deref() == Some("up")
    });
    assert!(synced, "the replica did not sync:\n{}", replica.log());
    (master, replica)
}

#[test]
fn each_subscriber_of_a_cluster_gets_one_release_message() {
    let (master, replica) = master_and_replica();
    let name = channel("redisson_lock__channel", KEY.as_bytes());
    let mut on_master = Subscriber::plain(&master, &name);
    let mut on_replica = Subscriber::plain(&replica, &name);
    let mut m = master.conn();
    int(&mut m, &["LOCK.ACQUIRE", KEY, "a"]);
    assert_eq!(int(&mut m, &["LOCK.RELEASE", KEY, "a"]), 0);
    assert_eq!(int(&mut m, &["WAIT", "1", "5000"]), 1);
    // Sent by the replica after it replayed the release: whatever the replica published
    // for it reaches every subscriber before this.
    let mut r = replica.conn();
    let _: i64 = redis::cmd("PUBLISH")
        .arg(&name)
        .arg("done")
        .query(&mut r)
        .expect("publish");
    for (who, sub) in [("master", &mut on_master), ("replica", &mut on_replica)] {
        let messages = sub.until(b"done");
        let payloads: Vec<&[u8]> = messages.iter().map(|m| &m.payload[..]).collect();
        assert_eq!(payloads, [b"0"], "subscriber on the {who}");
    }
}

/// A waiter sent away gets the redirect Redis itself gives for the key: the node named as
/// `cluster-preferred-endpoint-type` says (here its announced hostname), not the first IP
/// and port of `CLUSTER NODES`.
#[test]
fn a_waiter_is_redirected_to_the_endpoint_redis_would_name() {
    let source = node();
    let bus = free_port().to_string();
    let target = Server::start_with(&[
        "--cluster-enabled",
        "yes",
        "--cluster-port",
        &bus,
        "--cluster-announce-hostname",
        "lock-target.test",
    ]);
    for (server, first, last) in [(&source, "0", "8191"), (&target, "8192", "16383")] {
        let reply = raw(
            &mut server.conn(),
            &["CLUSTER", "ADDSLOTSRANGE", first, last],
        );
        assert_eq!(reply, Value::Okay);
    }
    join(&source, &target);
    let mut s = source.conn();
    let prefer = [
        "CONFIG",
        "SET",
        "cluster-preferred-endpoint-type",
        "hostname",
    ];
    assert_eq!(raw(&mut s, &prefer), Value::Okay);
    let named = wait_until(SETTLE, || {
        text(&mut s, &["CLUSTER", "NODES"]).contains("lock-target.test")
    });
    assert!(named, "the source never learned the target's hostname");
    let slot = slot_of(&mut s, KEY);
    int(&mut s, &["LOCK.ACQUIRE", KEY, "a", "LEASE", "60000"]);
    let mut waiter = enqueue(&source, KEY, &["b", "WAIT", "0"]);
    let port = move_key(&source, &target, &slot);
    let redis_says = crate::support::error_text(&raw(&mut s, &["HGETALL", KEY]));
    assert_eq!(
        redis_says,
        Some(format!("ASK {slot} lock-target.test:{port}"))
    );
    match waiter.reply() {
        Reply::Error(e) => assert_eq!(Some(e), redis_says),
        other => panic!("the waiter got {other:?}"),
    }
}

#[test]
fn a_ticket_in_a_cluster_is_mailed_and_its_slot_moving_refuses_it_with_the_redirect() {
    let (source, target) = two_masters();
    let mut s = source.conn();
    let slot = slot_of(&mut s, KEY);
    int(&mut s, &["LOCK.ACQUIRE", KEY, "a", "LEASE", "60000"]);
    // A push would go over the cluster bus to every node: a ticket needs a mailbox here.
    let mut resp3 = source.conn_resp3();
    let refused = raw(&mut resp3, &["LOCK.WAIT", KEY, "b"]);
    let text = crate::support::error_text(&refused).unwrap_or_default();
    assert!(
        text.starts_with("ERR LOCK.WAIT in a cluster needs TO"),
        "{refused:?}"
    );
    let mut mailbox = source.conn();
    let to = int(&mut mailbox, &["CLIENT", "ID"]).to_string();
    let queued = raw(&mut s, &["LOCK.WAIT", KEY, "b", "TO", &to]);
    let Value::Array(answer) = &queued else {
        panic!("LOCK.WAIT: {queued:?}");
    };
    let wait = answer[1].clone();

    let port = move_key(&source, &target, &slot);

    let outcome = raw(&mut mailbox, &["LOCK.GRANTS", "BLOCK", "10000"]);
    let redirect = Value::BulkString(format!("-ASK {slot} 127.0.0.1:{port}").into_bytes());
    assert_eq!(outcome, Value::Array(vec![wait, redirect]));
    assert_eq!(raw(&mut mailbox, &["LOCK.GRANTS"]), Value::Array(vec![]));
}

#[test]
fn a_read_write_locks_waiter_is_redirected_when_its_slot_moves() {
    let (mut source, target) = two_masters();
    let (mut s, mut t) = (source.conn(), target.conn());
    let slot = slot_of(&mut s, KEY);
    let token = int(
        &mut s,
        &["RWLOCK.ACQUIRE", KEY, "w", "WRITE", "LEASE", "60000"],
    );
    let read = ["RWLOCK.ACQUIRE", KEY, "r", "READ", "WAIT", "0"];
    let mut waiter = enqueue_command(&source, &read);
    let port = move_key(&source, &target, &slot);
    match waiter.reply() {
        Reply::Error(e) => assert_eq!(e, format!("ASK {slot} 127.0.0.1:{port}")),
        other => panic!("the waiter got {other:?}"),
    }
    finish_move(&source, &target, &slot);
    // The writer holds it on the target with its token; the reader waits there and gets it.
    let mut waiter = enqueue_command(&target, &read);
    let renew = ["RWLOCK.RENEW", KEY, "w", "TOKEN", &token.to_string()];
    assert_eq!(int(&mut t, &renew), 1);
    assert_eq!(int(&mut t, &["RWLOCK.RELEASE", KEY, "w", "WRITE"]), 0);
    match waiter.reply() {
        Reply::Int(r) => assert!(r > token),
        other => panic!("the waiter got {other:?}"),
    }
    assert_eq!(int(&mut s, &["CLUSTER", "COUNTKEYSINSLOT", &slot]), 0);
    assert_alive(&mut source);
}

#[test]
fn a_semaphores_waiter_is_redirected_when_its_slot_moves_and_holders_keep_their_permits() {
    let (mut source, target) = two_masters();
    let (mut s, mut t) = (source.conn(), target.conn());
    let slot = slot_of(&mut s, KEY);
    int(&mut s, &["SEM.PERMITS", KEY, "2"]);
    let token = int(&mut s, &["SEM.ACQUIRE", KEY, "a", "2", "LEASE", "60000"]);
    let ask = ["SEM.ACQUIRE", KEY, "b", "1", "WAIT", "0"];
    let mut waiter = enqueue_command(&source, &ask);
    let port = move_key(&source, &target, &slot);
    match waiter.reply() {
        Reply::Error(e) => assert_eq!(e, format!("ASK {slot} 127.0.0.1:{port}")),
        other => panic!("the waiter got {other:?}"),
    }
    finish_move(&source, &target, &slot);
    // The holder keeps its permits and token on the target; the waiter waits there.
    let mut waiter = enqueue_command(&target, &ask);
    let renew = ["SEM.RENEW", KEY, "a", "TOKEN", &token.to_string()];
    assert_eq!(int(&mut t, &renew), 1);
    assert_eq!(int(&mut t, &["SEM.RELEASE", KEY, "a", "1"]), 1);
    match waiter.reply() {
        Reply::Int(b) => assert!(b > token),
        other => panic!("the waiter got {other:?}"),
    }
    assert_eq!(int(&mut s, &["CLUSTER", "COUNTKEYSINSLOT", &slot]), 0);
    assert_alive(&mut source);
}

/// A latch that moves to another node has not reached zero: its waiters are sent where it
/// went, never released.
#[test]
fn a_latchs_waiter_is_redirected_when_its_slot_moves_not_released() {
    let (mut source, target) = two_masters();
    let (mut s, mut t) = (source.conn(), target.conn());
    let slot = slot_of(&mut s, KEY);
    assert_eq!(int(&mut s, &["LATCH.SET", KEY, "2"]), 1);
    let mut waiter = enqueue_command(&source, &["LATCH.AWAIT", KEY, "WAIT", "0"]);
    let port = move_key(&source, &target, &slot);
    match waiter.reply() {
        Reply::Error(e) => assert_eq!(e, format!("ASK {slot} 127.0.0.1:{port}")),
        other => panic!("a latch that moved released its waiter: {other:?}"),
    }
    finish_move(&source, &target, &slot);
    assert_eq!(int(&mut t, &["LATCH.COUNT", KEY]), 2);
    let mut waiter = enqueue_command(&target, &["LATCH.AWAIT", KEY, "WAIT", "0"]);
    assert_eq!(int(&mut t, &["LATCH.COUNTDOWN", KEY]), 1);
    assert_eq!(
        waiter.reply_within(std::time::Duration::from_millis(200)),
        None
    );
    assert_eq!(int(&mut t, &["LATCH.COUNTDOWN", KEY]), 0);
    assert_eq!(waiter.reply(), Reply::Int(1));
    assert_alive(&mut source);
}

/// A node whose token counter runs ahead (by `LOCK.RAISE`, as a RedLock raises it): the
/// tokens of the semaphore and the read-write lock it hands to another node are above that
/// node's counter, which must learn them so that the key's tokens never go back.
#[test]
fn a_semaphore_or_read_write_lock_moved_to_another_node_teaches_it_its_tokens() {
    let (source, target) = two_masters();
    let (mut s, mut t) = (source.conn(), target.conn());
    let other = "{lock:a}:raise";
    let token = int(&mut s, &["LOCK.ACQUIRE", other, "o", "LEASE", "60000"]);
    let ahead = (token + 1_500_000).to_string();
    let raise = ["LOCK.RAISE", other, "o", &token.to_string(), &ahead];
    assert!(int(&mut s, &raise) >= token + 1_500_000);
    let (sem, rw) = ("{lock:a}:sem", "{lock:a}:rw");
    int(&mut s, &["SEM.PERMITS", sem, "2"]);
    let held = [
        int(&mut s, &["SEM.ACQUIRE", sem, "a", "1", "LEASE", "60000"]),
        int(
            &mut s,
            &["RWLOCK.ACQUIRE", rw, "r", "READ", "LEASE", "60000"],
        ),
    ];
    let slot = slot_of(&mut s, KEY);
    move_keys(&source, &target, &slot, &[sem, rw, other]);
    finish_move(&source, &target, &slot);
    // The read-write lock first: its holder's token is the later one.
    let fresh_rw = int(
        &mut t,
        &["RWLOCK.ACQUIRE", rw, "r2", "READ", "LEASE", "60000"],
    );
    let fresh = [
        int(&mut t, &["SEM.ACQUIRE", sem, "b", "1", "LEASE", "60000"]),
        fresh_rw,
    ];
    for (what, (before, after)) in ["semaphore", "read-write lock"]
        .iter()
        .zip(held.iter().zip(fresh))
    {
        assert!(
            after > *before,
            "{what}: token {after} after {before}: back"
        );
    }
}
