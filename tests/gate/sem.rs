//! Semaphores pass the same gate: a semaphore evicted with waiters is not handed on, and a
//! master that stalled renews, adds and grants no permits when it resumes.

use std::time::{Duration, Instant};

use super::memory::evicted_with_five_waiters;
use super::support::{int, wait_until, Server};
use super::wire::{Reply, Wire};
use super::{assert_alive, enqueue_command, lease_ends_in_the_stall, SETTLE};

#[test]
fn a_semaphore_evicted_with_waiters_is_not_handed_on() {
    // A semaphore's total has no time to live: only an allkeys policy evicts it.
    let server = Server::start_with(&["--maxmemory-policy", "allkeys-lru"]);
    let mut con = server.conn();
    int(&mut con, &["SEM.PERMITS", "s", "1"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "a", "1", "LEASE", "60000"]);
    evicted_with_five_waiters(&server, |i| {
        let owner = format!("w{i}");
        ["SEM.ACQUIRE", "s", &owner, "1", "WAIT", "0"]
            .map(str::to_owned)
            .to_vec()
    });
}

#[test]
fn a_master_that_stalled_renews_adds_and_grants_no_permits_when_it_resumes() {
    let fenced = [
        "--min-replicas-to-write",
        "1",
        "--min-replicas-max-lag",
        "10",
    ];
    let mut master = Server::start_with(&fenced);
    let _replica = master.replica();
    let counted = wait_until(SETTLE, || {
        super::support::info_field(&mut master.conn(), "replication", "min_slaves_good_slaves")
            .as_deref()
            == Some("1")
    });
    assert!(counted, "the replica never counted");
    let mut con = master.conn();
    int(&mut con, &["SEM.PERMITS", "s", "2"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "a", "1", "LEASE", "30000"]);
    int(&mut con, &["SEM.ACQUIRE", "s", "b", "1", "LEASE", "60000"]);
    // On t, with nobody queued, a may add a permit: but not on a node that stalled.
    int(&mut con, &["SEM.PERMITS", "t", "2"]);
    int(&mut con, &["SEM.ACQUIRE", "t", "a", "1", "LEASE", "30000"]);
    let mut c = enqueue_command(&master, &["SEM.ACQUIRE", "s", "c", "1", "WAIT", "0"]);
    let mut renewal = Wire::connect(&master);
    let mut more = Wire::connect(&master);
    lease_ends_in_the_stall(&mut con, "SEM", ("s", "b"), 1000);
    master.signal("STOP");
    // The stall itself is what is tested: nothing to wait for but time.
    std::thread::sleep(Duration::from_millis(2500));
    renewal.send(&["SEM.RENEW", "s", "a"]);
    more.send(&["SEM.ACQUIRE", "t", "a", "1"]);
    master.signal("CONT");
    let resumed = Instant::now();
    for (what, wire) in [("renewal", &mut renewal), ("added permit", &mut more)] {
        match wire.reply() {
            Reply::Error(e) => assert!(
                e.starts_with("TRYAGAIN rlock: this node stalled"),
                "{what}: {e}"
            ),
            other => panic!("the stalled master accepted a {what}: {other:?}"),
        }
    }
    // b's lease ended during the stall: its permit is not handed on right after it.
    let quiet = Duration::from_millis(1000).saturating_sub(resumed.elapsed());
    assert_eq!(c.reply_within(quiet), None, "a grant right after the stall");
    // Its replica is still there: once the node knows it again, the queue is served.
    match c.reply() {
        Reply::Int(t) => assert!(t > 0),
        other => panic!("c got {other:?}"),
    }
    assert_eq!(int(&mut con, &["SEM.RENEW", "s", "a"]), 1);
    assert_alive(&mut master);
}
