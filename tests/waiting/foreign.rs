//! Locks freed behind the module's back (a Redisson script's unlock, `DEL`, `FLUSHALL`)
//! still go to the queued waiters; a handoff publishes nothing; a handoff reaches the
//! replica as the master wrote it.

use redis::Value;

use crate::support::redisson::{TRY_LOCK, UNLOCK};
use crate::support::{channel, hgetall, int, pexpiretime, raw, Server, Subscriber, DEFAULT_PREFIX};
use crate::wire::Reply;
use crate::{enqueue, owner, stat, token};

fn script_lock(con: &mut redis::Connection, key: &str, owner: &str) {
    let reply = raw(con, &["EVAL", TRY_LOCK, "1", key, "30000", owner]);
    assert_eq!(reply, Value::Nil, "the script did not take {key}");
}

fn script_unlock(con: &mut redis::Connection, key: &str, owner: &str) -> Value {
    let ch = String::from_utf8(channel(DEFAULT_PREFIX, key.as_bytes())).expect("utf-8");
    raw(con, &["EVAL", UNLOCK, "2", key, &ch, "0", "30000", owner])
}

#[test]
fn a_script_unlock_hands_the_lock_to_a_module_waiter() {
    let server = Server::start();
    let mut con = server.conn();
    script_lock(&mut con, "k", "uuid:1");
    let mut waiter = enqueue(&server, &mut con, "k", &["w", "WAIT", "0"]);
    assert_eq!(script_unlock(&mut con, "k", "uuid:1"), Value::Int(1));
    assert!(token(waiter.reply()) > 0);
    assert_eq!(owner(&mut con, "k").as_deref(), Some("w"));
    assert_eq!(stat(&mut con, "handoffs"), 1);
}

#[test]
fn a_script_lock_reentered_then_unlocked_twice_is_handed_once() {
    let server = Server::start();
    let mut con = server.conn();
    script_lock(&mut con, "k", "uuid:1");
    script_lock(&mut con, "k", "uuid:1");
    let mut waiter = enqueue(&server, &mut con, "k", &["w", "WAIT", "0"]);
    assert_eq!(script_unlock(&mut con, "k", "uuid:1"), Value::Int(0));
    assert_eq!(owner(&mut con, "k").as_deref(), Some("uuid:1"));
    assert_eq!(script_unlock(&mut con, "k", "uuid:1"), Value::Int(1));
    token(waiter.reply());
    assert_eq!(owner(&mut con, "k").as_deref(), Some("w"));
}

#[test]
fn a_plain_del_hands_the_lock_to_a_waiter() {
    let server = Server::start();
    let mut con = server.conn();
    script_lock(&mut con, "k", "uuid:1");
    let mut waiter = enqueue(&server, &mut con, "k", &["w", "WAIT", "0"]);
    assert_eq!(int(&mut con, &["DEL", "k"]), 1);
    token(waiter.reply());
    assert_eq!(owner(&mut con, "k").as_deref(), Some("w"));
}

#[test]
fn flushall_hands_the_lock_to_a_waiter() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "k", "holder"]);
    let mut waiter = enqueue(&server, &mut con, "k", &["w", "LEASE", "7000", "WAIT", "0"]);
    assert_eq!(raw(&mut con, &["FLUSHALL"]), Value::Okay);
    token(waiter.reply());
    assert_eq!(owner(&mut con, "k").as_deref(), Some("w"));
    let ttl = int(&mut con, &["PTTL", "k"]);
    assert!((6000..=7000).contains(&ttl), "{ttl}");
}

#[test]
fn a_handoff_publishes_nothing() {
    let server = Server::start();
    let mut con = server.conn();
    let ch = channel(DEFAULT_PREFIX, b"k");
    let mut sub = Subscriber::both(&server, &ch);
    int(&mut con, &["LOCK.ACQUIRE", "k", "holder"]);
    let mut waiter = enqueue(&server, &mut con, "k", &["w", "WAIT", "0"]);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", "holder"]), 0);
    token(waiter.reply());
    let mut next = enqueue(&server, &mut con, "k", &["w2", "WAIT", "0"]);
    assert_eq!(int(&mut con, &["DEL", "k"]), 1);
    token(next.reply());
    assert_eq!(owner(&mut con, "k").as_deref(), Some("w2"));

    raw(&mut con, &[&b"PUBLISH"[..], &ch, b"sentinel"]);
    assert_eq!(sub.until(b"sentinel"), []);
}

#[test]
fn a_handoff_is_replicated() {
    let master = Server::start();
    let replica = master.replica();
    let mut con = master.conn();
    let first = int(&mut con, &["LOCK.ACQUIRE", "k", "holder", "LEASE", "60000"]);
    let mut waiter = enqueue(
        &master,
        &mut con,
        "k",
        &["w", "LEASE", "45000", "WAIT", "0"],
    );
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", "holder"]), 0);
    let handed = token(waiter.reply());
    assert!(handed > first);
    assert_eq!(int(&mut con, &["WAIT", "1", "5000"]), 1);

    let mut rep = replica.conn();
    let on_master = hgetall(&mut con, b"k");
    assert_eq!(hgetall(&mut rep, b"k"), on_master);
    assert_eq!(
        on_master.get(&b"@token"[..]).map(Vec::as_slice),
        Some(handed.to_string().as_bytes())
    );
    assert!(on_master.contains_key(&b"w"[..]));
    assert_eq!(pexpiretime(&mut rep, b"k"), pexpiretime(&mut con, b"k"));
    assert_eq!(waiter.call(&["LOCK.RELEASE", "k", "w"]), Reply::Int(0));
}
