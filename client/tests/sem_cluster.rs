//! Semaphores and countdown latches in a Redis Cluster: each on the node of its slot, waits
//! as pulled tickets, permits renewed by the watchdog's pipeline of each node; a wait
//! follows its key when the key's slot moves to another node.

mod support;

use std::time::Duration;

use rlock_client::Client;
use support::cluster::Cluster;
use support::{eventually, watched};
use tokio::time::{sleep, timeout};

const LEASE: Duration = Duration::from_millis(900);
const LIMIT: Duration = Duration::from_secs(10);

/// Waits queued on `key` at node `node` (`INFO rlock`'s `rlock_waiters` counts them all).
fn queued(cluster: &Cluster, node: usize) -> u64 {
    cluster.nodes[node].rlock_stat("waiters")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphores_and_latches_on_every_node_wait_and_are_renewed_there() {
    let cluster = Cluster::start(3);
    let client = Client::open(cluster.nodes[0].url()).await.unwrap();
    let keys: Vec<String> = (0..3).map(|node| cluster.key_on(node, "sem")).collect();
    let latches: Vec<String> = (0..3).map(|node| cluster.key_on(node, "done")).collect();
    let mut holders = Vec::new();
    for key in &keys {
        let sem = client
            .owner()
            .semaphore(key.as_str())
            .options(watched(LEASE));
        assert_eq!(sem.set_permits(1).await.unwrap(), 1);
        holders.push(sem.acquire(1).await.unwrap());
    }
    let mut waits = Vec::new();
    for (key, latch) in keys.iter().zip(&latches) {
        assert!(client.latch(latch.as_str()).set(1).await.unwrap());
        let sem = client
            .owner()
            .semaphore(key.as_str())
            .options(watched(LEASE));
        let latch = client.latch(latch.as_str());
        waits.push((
            tokio::spawn(async move { sem.acquire(1).await }),
            tokio::spawn(async move { latch.wait().await }),
        ));
    }
    for node in 0..3 {
        let both = || queued(&cluster, node) == 2;
        assert!(
            eventually(LIMIT, both).await,
            "node {node}: waits not queued"
        );
    }
    // Held for three leases: renewed on each node.
    sleep(3 * LEASE).await;
    for (node, holder) in holders.iter().enumerate() {
        assert!(
            !holder.is_lost(),
            "{}: {:?}",
            holder.key(),
            holder.loss_reason()
        );
        assert!(
            cluster.nodes[node].calls("sem.renew") > 0,
            "node {node} renewed nothing"
        );
    }
    for holder in holders {
        assert_eq!(holder.release().await.unwrap(), 0);
    }
    for latch in &latches {
        assert_eq!(client.latch(latch.as_str()).count_down().await.unwrap(), 0);
    }
    for (node, (permit, opened)) in waits.into_iter().enumerate() {
        let permit = timeout(LIMIT, permit).await.unwrap().unwrap().unwrap();
        timeout(LIMIT, opened).await.unwrap().unwrap().unwrap();
        assert!(
            cluster.nodes[node].calls("sem.wait") > 0,
            "node {node}: no ticket"
        );
        assert!(
            cluster.nodes[node].calls("latch.wait") > 0,
            "node {node}: no latch ticket"
        );
        assert_eq!(permit.release().await.unwrap(), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_follow_a_semaphore_and_a_latch_whose_slot_moves() {
    let cluster = Cluster::start(3);
    let client = Client::open(cluster.nodes[0].url()).await.unwrap();
    // A semaphore and a latch in one slot ({tag}), on node 0, moved to node 1.
    let tag = cluster.key_on(0, "tag");
    let (key, latch_key) = (format!("{{{tag}}}:sem"), format!("{{{tag}}}:done"));
    let slot = cluster.slot(&key);
    let sem = client
        .owner()
        .semaphore(key.as_str())
        .options(watched(LEASE));
    sem.set_permits(1).await.unwrap();
    let holder = sem.acquire(1).await.unwrap();
    assert!(client.latch(latch_key.as_str()).set(1).await.unwrap());
    let waiter = client
        .owner()
        .semaphore(key.as_str())
        .options(watched(LEASE));
    let permit = tokio::spawn(async move { waiter.acquire(1).await });
    let latch = client.latch(latch_key.as_str());
    let opened = tokio::spawn(async move { latch.wait().await });
    assert!(eventually(LIMIT, || queued(&cluster, 0) == 2).await);

    cluster.begin_migration(slot, 0, 1);
    cluster.migrate_keys(0, 1, &[&key, &latch_key]);
    cluster.finish_migration(slot, 1);

    // The waits are sent to node 1 and queue there; the latch has not opened.
    let moved = eventually(LIMIT, || queued(&cluster, 1) == 2).await;
    assert!(moved, "the waits did not queue again on node 1");
    assert!(!opened.is_finished(), "a latch that moved opened");
    assert!(!permit.is_finished());
    sleep(2 * LEASE).await;
    assert!(!holder.is_lost(), "{:?}", holder.loss_reason());
    assert!(
        cluster.nodes[1].calls("sem.renew") > 0,
        "not renewed on node 1"
    );
    assert_eq!(holder.release().await.unwrap(), 0);
    let permit = timeout(LIMIT, permit).await.unwrap().unwrap().unwrap();
    assert_eq!(
        client.latch(latch_key.as_str()).count_down().await.unwrap(),
        0
    );
    timeout(LIMIT, opened).await.unwrap().unwrap().unwrap();
    assert_eq!(permit.release().await.unwrap(), 0);
}
