//! RedLock waits with servers stopped or dead, and how rounds go (issue item 5 and the
//! minors): a stopped gate costs an acquisition about one per-server try, not a response
//! timeout per round; with one server dead or stopped and 1 s leases a waiting party is
//! served while another loops take/release; a majority won with too little validity left
//! is not returned; a gate holder keeps the first server's gate while the others are held
//! longer than a lease.

mod redlock_support;
mod support;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redlock_support::{clients, clients_with, in_canonical_order};
use rlock_client::{ClientOptions, LockOptions, RedLock};
use support::{eventually, watched};
use tokio::time::timeout;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_gate_stopped_acquisitions_take_about_one_try_more() {
    let servers = in_canonical_order(3).await;
    // The default response timeout (2 s), a 1 s lease: a try counts as failed after 200 ms.
    let defaults = ClientOptions::new();
    let lock = RedLock::new(clients_with(&servers, defaults).await, "job").unwrap();
    let lock = lock.options(watched(Duration::from_secs(1)));
    servers[0].stop();
    let mut took = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let guard = timeout(Duration::from_secs(20), lock.acquire()).await;
        guard
            .expect("granted in time")
            .expect("granted")
            .release()
            .await
            .unwrap();
        took.push(started.elapsed());
    }
    servers[0].resume();
    // A response timeout is 2 s: none of them waited one out.
    let slowest = took.iter().max().copied().unwrap_or_default();
    assert!(
        slowest < Duration::from_millis(1500),
        "acquisitions took {took:?}"
    );
}

/// Over `n` servers, with those at `killed` killed and those at `stopped` stopped, and 1 s
/// leases, B waits (5 s limit) three times while A loops take/release: B is served each
/// time.
async fn a_waiting_party_is_served(n: usize, killed: &[usize], stopped: &[usize]) {
    let mut servers = in_canonical_order(n).await;
    let options = LockOptions::new().lease(Duration::from_secs(1));
    let a = RedLock::new(clients(&servers).await, "job")
        .unwrap()
        .options(options);
    let b = RedLock::new(clients(&servers).await, "job")
        .unwrap()
        .options(options);
    for &i in killed {
        servers[i].kill();
    }
    for &i in stopped {
        servers[i].stop();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let a_holdings = Arc::new(AtomicU32::new(0));
    let (a_stop, a_count) = (stop.clone(), a_holdings.clone());
    let looping = tokio::spawn(async move {
        while !a_stop.load(Ordering::SeqCst) {
            if let Ok(Some(guard)) = a.try_acquire(Duration::from_secs(5)).await {
                a_count.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
                let _ = guard.release().await;
            }
        }
    });
    let mut served = 0;
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if let Ok(Some(guard)) = b.try_acquire(Duration::from_secs(5)).await {
            served += 1;
            let _ = guard.release().await;
        }
    }
    stop.store(true, Ordering::SeqCst);
    timeout(Duration::from_secs(15), looping)
        .await
        .expect("A stops")
        .unwrap();
    for &i in stopped {
        servers[i].resume();
    }
    let a_holdings = a_holdings.load(Ordering::SeqCst);
    assert_eq!(
        served, 3,
        "B served {served} of 3 times; A held {a_holdings} times"
    );
    assert!(a_holdings > 0, "A was never served");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_gate_dead_a_waiting_party_is_served_beside_a_looping_one() {
    a_waiting_party_is_served(3, &[0], &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_last_server_dead_a_waiting_party_is_served_beside_a_looping_one() {
    a_waiting_party_is_served(3, &[2], &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_last_server_stopped_a_waiting_party_is_served_beside_a_looping_one() {
    a_waiting_party_is_served(3, &[], &[2]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_majority_won_with_little_validity_left_is_not_returned() {
    let servers = in_canonical_order(3).await;
    let lease = Duration::from_millis(1000);
    let lock = RedLock::new(clients(&servers).await, "job").unwrap();
    let lock = lock.options(LockOptions::new().lease(lease));
    // Another holder keeps the second and third servers: the RedLock holds the gate and
    // queues on them.
    for server in &servers[1..] {
        let _: u64 = server.cmd(&["LOCK.ACQUIRE", "job", "other:1", "LEASE", "60000"]);
    }
    let contender = lock.clone();
    let waiting = tokio::spawn(async move { contender.try_acquire(Duration::from_secs(10)).await });
    let gate_held = || servers[0].info("job").is_some_and(|i| i.owner != "other:1");
    assert!(
        eventually(Duration::from_secs(10), gate_held).await,
        "the gate is held"
    );
    // When the gate has about 60 ms left, the others are freed: handed to the RedLock.
    let nearly_over = || {
        servers[0]
            .info("job")
            .is_some_and(|i| (0..=60).contains(&i.ttl))
    };
    assert!(eventually(Duration::from_secs(10), nearly_over).await);
    for server in &servers[1..] {
        let _: i64 = server.cmd(&["LOCK.FORCERELEASE", "job"]);
    }
    let guard = timeout(Duration::from_secs(12), waiting).await;
    let guard = guard.expect("ends").unwrap().unwrap().expect("granted");
    let left = guard.remaining();
    assert!(
        left >= lease / 10,
        "returned with {left:?} of validity left"
    );
    guard.release().await.unwrap();
}

/// A gate holder whose gate is the first server keeps it as long as the others are held
/// (its round no longer ends after one lease, handing the gate to the next contender and
/// queueing again behind it): the contender that queued first is served first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_holder_keeps_the_gate_while_the_others_are_held_longer_than_a_lease() {
    let servers = in_canonical_order(3).await;
    let lease = Duration::from_millis(500);
    // Another holder keeps the second and third servers for a minute.
    for server in &servers[1..] {
        let _: u64 = server.cmd(&["LOCK.ACQUIRE", "job", "other:1", "LEASE", "60000"]);
    }
    let redlock = || async {
        let lock = RedLock::new(clients(&servers).await, "job").unwrap();
        lock.options(watched(lease))
    };
    let (first, second) = (redlock().await, redlock().await);
    let first = tokio::spawn(async move { first.acquire().await.map(|g| (Instant::now(), g)) });
    // The first holds the gate once it queues on the others.
    let queued = || {
        servers[1..]
            .iter()
            .all(|s| s.info("job").is_some_and(|i| i.waiters == 1))
    };
    assert!(
        eventually(Duration::from_secs(10), queued).await,
        "the first holds the gate"
    );
    let gate_owner = || servers[0].info("job").map(|i| i.owner);
    let gate = gate_owner().expect("the gate is held");
    let second = tokio::spawn(async move { second.acquire().await.map(|g| (Instant::now(), g)) });
    let behind = || servers[0].info("job").is_some_and(|i| i.waiters >= 1);
    assert!(
        eventually(Duration::from_secs(10), behind).await,
        "the second queues on the gate"
    );
    // Three leases: an old round would have given the gate up twice.
    let changed = || gate_owner().is_some_and(|owner| owner != gate);
    let gave_up = eventually(lease * 3, changed).await;
    assert!(
        !gave_up,
        "the first gave the gate up while the others were held"
    );
    for server in &servers[1..] {
        let _: i64 = server.cmd(&["LOCK.FORCERELEASE", "job"]);
    }
    let first_at = served(first).await;
    let second_at = served(second).await;
    assert!(
        first_at < second_at,
        "the contender that queued first was served second"
    );
}

type Served = tokio::task::JoinHandle<rlock_client::Result<(Instant, rlock_client::RedLockGuard)>>;

/// When `task`'s acquisition was granted; releases it.
async fn served(task: Served) -> Instant {
    let done = timeout(Duration::from_secs(10), task).await;
    let (at, guard) = done.expect("served").unwrap().unwrap();
    guard.release().await.unwrap();
    at
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_two_of_five_down_a_waiting_party_is_served_beside_a_looping_one() {
    a_waiting_party_is_served(5, &[0], &[3]).await;
}
