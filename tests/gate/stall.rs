//! Issue: a live master failed over by Sentinel granted and renewed after it resumed. A
//! node that did not run for a while (SIGSTOP here) grants, renews and reenters nothing
//! until its view of its replicas is fresh again, and a waiter past its own `WAIT` gets
//! nil, never a grant.

use std::time::{Duration, Instant};

use super::support::sentinel::Deployment;
use super::support::{info_field, int, wait_until, Server};
use super::wire::{Reply, Wire};
use super::{assert_alive, enqueue, lease_ends_in_the_stall, rlock_info, SETTLE};

/// Sentinel's guidance for a fenced deployment: a master without a replica accepts no
/// write, and a promoted replica grants nothing of what it does not have for a while.
const FENCED: [&str; 6] = [
    "--min-replicas-to-write",
    "1",
    "--min-replicas-max-lag",
    "10",
    "--rlock.failover-delay",
    "5000",
];

/// The code a stalled node answers a renewal with.
const STALLED: &str = "TRYAGAIN rlock: this node stalled";

fn good_replicas(server: &Server) -> Option<String> {
    info_field(&mut server.conn(), "replication", "min_slaves_good_slaves")
}

#[test]
fn a_master_that_stalled_renews_and_grants_nothing_when_it_resumes() {
    let mut master = Server::start_with(&FENCED);
    let _replica = master.replica();
    let counted = wait_until(SETTLE, || good_replicas(&master).as_deref() == Some("1"));
    assert!(counted, "the replica never counted");
    let mut con = master.conn();
    int(&mut con, &["LOCK.ACQUIRE", "held", "a", "LEASE", "30000"]);
    int(&mut con, &["LOCK.ACQUIRE", "ending", "b", "LEASE", "60000"]);
    // d comes first, and its WAIT runs out while the node stands still; c waits longer.
    let mut d = enqueue(&master, "ending", &["d", "WAIT", "1500"]);
    let mut c = enqueue(&master, "ending", &["c", "WAIT", "0"]);
    let mut renewal = Wire::connect(&master);
    let mut reentry = Wire::connect(&master);
    lease_ends_in_the_stall(&mut con, "LOCK", ("ending", "b"), 1000);
    master.signal("STOP");
    // The stall itself is what is tested: nothing to wait for but time.
    std::thread::sleep(Duration::from_millis(2500));
    renewal.send(&["LOCK.RENEW", "held", "a"]);
    reentry.send(&["LOCK.ACQUIRE", "held", "a"]);
    master.signal("CONT");
    let resumed = Instant::now();
    for (what, wire) in [("renewal", &mut renewal), ("reentry", &mut reentry)] {
        match wire.reply() {
            Reply::Error(e) => assert!(e.starts_with(STALLED), "{what}: {e}"),
            other => panic!("the stalled master accepted a {what}: {other:?}"),
        }
    }
    assert_eq!(d.reply(), Reply::Nil, "a waiter past its WAIT got the lock");
    let quiet = Duration::from_millis(1500).saturating_sub(resumed.elapsed());
    assert_eq!(c.reply_within(quiet), None, "a grant right after the stall");
    // Its replica is still there: once the node knows it again, the queue is served.
    match c.reply() {
        Reply::Int(t) => assert!(t > 0),
        other => panic!("c got {other:?}"),
    }
    assert_eq!(int(&mut con, &["LOCK.RENEW", "held", "a"]), 1);
    assert_alive(&mut master);
}

/// Failovers of a live master per run (`RLOCK_STALL_ROUNDS`, default 20).
fn rounds() -> usize {
    std::env::var("RLOCK_STALL_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20)
}

#[test]
#[ignore = "long: make test-all"]
fn a_live_master_failed_over_by_sentinel_grants_and_renews_nothing_after_it_resumes() {
    let mut deployment = Deployment::start(&FENCED);
    let mut master = 0;
    for round in 0..rounds() {
        let (held, ending) = (format!("held{round}"), format!("ending{round}"));
        let server = &deployment.servers[master];
        let mut con = server.conn();
        // A master promoted in the round before grants no fresh holding for its delay.
        let delay_over = wait_until(Duration::from_secs(30), || {
            rlock_info(&mut con, "rlock_failover_delay_remaining") == 0
        });
        assert!(delay_over, "round {round}: the failover delay never ended");
        int(&mut con, &["LOCK.ACQUIRE", &held, "a", "LEASE", "60000"]);
        int(&mut con, &["LOCK.ACQUIRE", &ending, "b", "LEASE", "60000"]);
        let mut waiter = enqueue(server, &ending, &["c", "WAIT", "0"]);
        let mut renewal = Wire::connect(server);
        lease_ends_in_the_stall(&mut con, "LOCK", (&ending, "b"), 1500);
        server.signal("STOP");
        // Seconds, or 30 s more if a sentinel held up on a loaded machine enters TILT mode.
        let new = deployment.await_new_master(master, Duration::from_secs(90));
        let new = new.unwrap_or_else(|| {
            deployment.servers[master].signal("CONT");
            panic!("round {round}: no failover:\n{}", deployment.logs())
        });
        let server = &deployment.servers[master];
        renewal.send(&["LOCK.RENEW", &held, "a"]);
        server.signal("CONT");
        // Sentinel makes the old master a replica in the end, and kills its clients: a
        // closed connection is no grant either.
        let renewed = renewal.reply_or_close(Duration::from_secs(30));
        let accepted = Ok(Some(Reply::Int(1)));
        assert_ne!(renewed, accepted, "round {round}: the old master renewed");
        match waiter.reply_or_close(Duration::from_secs(60)) {
            Ok(Some(Reply::Int(t))) => panic!(
                "round {round}: the old master granted token {t}:\n{}",
                deployment.logs()
            ),
            Ok(None) => panic!("round {round}: no reply:\n{}", deployment.logs()),
            Ok(Some(_)) | Err(_) => {}
        }
        let stable = deployment.await_stable(Duration::from_secs(60));
        master =
            stable.unwrap_or_else(|| panic!("round {round}: not stable:\n{}", deployment.logs()));
        assert_eq!(master, new, "round {round}: the master changed again");
        assert_alive(&mut deployment.servers[master]);
    }
}
