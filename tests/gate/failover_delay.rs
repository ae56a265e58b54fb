//! Issue: two holders during the failover delay. A promoted replica's copy of a lock can be
//! stale: the old master handed it on, and that write died with it. Releasing the stale
//! holding during the delay must free it for nobody until the delay ends.

use std::time::{Duration, Instant};

use redis::Value;

use super::support::proxy::Proxy;
use super::support::{int, raw, Server};
use super::wire::Reply;
use super::{enqueue, owner, replica_through};

/// The failover delay of the promoted replica (ms).
const DELAY_MS: u64 = 5000;

/// M holds `L` for `a` with `b` queued; the link to the replica is cut; the release on M
/// hands `L` to `b` (lease 2 s), and M dies. The replica, promoted, still has `a`'s
/// holding. Returns (the promoted replica, when it was promoted, a's token, b's token).
fn stale_holding_on_a_promoted_replica() -> (Server, Instant, i64, i64) {
    let master = Server::start();
    let proxy = Proxy::start(master.port());
    let replica = replica_through(&master, proxy.port());
    let mut m = master.conn();
    let token_a = int(&mut m, &["LOCK.ACQUIRE", "L", "a", "LEASE", "60000"]);
    assert_eq!(int(&mut m, &["WAIT", "1", "5000"]), 1);
    let mut b = enqueue(&master, "L", &["b", "LEASE", "2000", "WAIT", "0"]);
    proxy.cut();
    assert_eq!(int(&mut m, &["LOCK.RELEASE", "L", "a"]), 0);
    let token_b = match b.reply() {
        Reply::Int(t) => t,
        other => panic!("b got {other:?}"),
    };
    master.signal("KILL");
    let mut r = replica.conn();
    let delay = DELAY_MS.to_string();
    assert_eq!(
        raw(&mut r, &["CONFIG", "SET", "rlock.failover-delay", &delay]),
        Value::Okay
    );
    assert_eq!(raw(&mut r, &["REPLICAOF", "NO", "ONE"]), Value::Okay);
    let promoted = Instant::now();
    assert_eq!(
        owner(&mut r, "L").as_deref(),
        Some("a"),
        "the link was not cut"
    );
    (replica, promoted, token_a, token_b)
}

/// `c`, queued on the promoted replica, gets `L` only when the delay ends.
fn assert_served_after_the_delay(promoted_node: &Server, c: &mut super::wire::Wire, at: Instant) {
    let quiet = Duration::from_millis(DELAY_MS - 300).saturating_sub(at.elapsed());
    assert_eq!(
        c.reply_within(quiet),
        None,
        "a waiter was granted the lock during the failover delay, while b's lease ran"
    );
    match c.reply() {
        Reply::Int(t) => assert!(t > 0),
        other => panic!("c got {other:?}"),
    }
    assert!(at.elapsed() >= Duration::from_millis(DELAY_MS - 100));
    assert_eq!(owner(&mut promoted_node.conn(), "L").as_deref(), Some("c"));
}

#[test]
fn a_stale_holding_released_during_the_delay_is_handed_on_only_after_it() {
    let (promoted, at, token_a, token_b) = stale_holding_on_a_promoted_replica();
    let mut c = enqueue(&promoted, "L", &["c", "WAIT", "20000"]);
    let mut r = promoted.conn();
    let t = token_a.to_string();
    assert_eq!(int(&mut r, &["LOCK.RELEASE", "L", "a", "TOKEN", &t]), 0);
    assert_eq!(owner(&mut r, "L"), None);
    assert!(token_b > token_a);
    assert_served_after_the_delay(&promoted, &mut c, at);
}

#[test]
fn a_stale_holding_force_released_during_the_delay_is_handed_on_only_after_it() {
    let (promoted, at, _, _) = stale_holding_on_a_promoted_replica();
    let mut c = enqueue(&promoted, "L", &["c", "WAIT", "20000"]);
    let mut r = promoted.conn();
    assert_eq!(int(&mut r, &["LOCK.FORCERELEASE", "L"]), 1);
    assert_served_after_the_delay(&promoted, &mut c, at);
}

#[test]
fn setting_the_delay_shorter_serves_queued_waiters_at_the_new_end() {
    let master = Server::start();
    let replica = master.replica();
    let mut r = replica.conn();
    let delay = DELAY_MS.to_string();
    let set = |con: &mut redis::Connection, ms: &str| {
        let set = ["CONFIG", "SET", "rlock.failover-delay", ms];
        assert_eq!(raw(con, &set), Value::Okay);
    };
    set(&mut r, &delay);
    assert_eq!(raw(&mut r, &["REPLICAOF", "NO", "ONE"]), Value::Okay);
    let at = Instant::now();
    let mut c = enqueue(&replica, "free", &["c", "WAIT", "20000"]);
    assert_eq!(c.reply_within(Duration::from_millis(300)), None);
    set(&mut r, "0");
    match c.reply_within(Duration::from_millis(2000)) {
        Some(Reply::Int(t)) => assert!(t > 0),
        other => panic!("c was not served when the delay was ended: {other:?}"),
    }
    assert!(at.elapsed() < Duration::from_millis(DELAY_MS - 500));
}

/// The chaos checker's find: `a` released `L` on the old master, which handed it to `b` in
/// writes that died with it; the promoted replica still has `a`'s holding. `a` acquiring `L`
/// again must not be a reentry of that copy while `b`'s lease may run.
#[test]
fn a_reentry_of_a_stale_holding_during_the_delay_is_refused() {
    let (promoted, _, token_a, _) = stale_holding_on_a_promoted_replica();
    let mut r = promoted.conn();
    let reply = raw(&mut r, &["LOCK.ACQUIRE", "L", "a", "LEASE", "60000"]);
    let text = super::support::error_text(&reply).unwrap_or_default();
    assert!(
        text.starts_with("TRYAGAIN rlock: this node was promoted"),
        "a reentered its stale holding: {reply:?} (its token was {token_a})"
    );
    assert_eq!(owner(&mut r, "L").as_deref(), Some("a"));
    let holds = super::support::hget(&mut r, "L", "a");
    assert_eq!(
        holds.as_deref(),
        Some("1"),
        "the refused reentry changed the count"
    );
}
