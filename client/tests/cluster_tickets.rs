//! Ticket waits in a Redis Cluster, where the module wants `LOCK.WAIT ... TO <id>`: the
//! outcomes are mailed to a receiver connection per node, which reads them with
//! `LOCK.GRANTS`. Three real masters with the module.

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rlock_client::Client;
use support::cluster::Cluster;
use support::Server;
use tokio::task::JoinSet;
use tokio::time::timeout;

const PHASE: Duration = Duration::from_secs(120);

fn waiters(node: &Server, key: &str) -> i64 {
    node.info(key).map_or(0, |info| info.waiters)
}

/// The client connections `node` has, but the test's own (`CLIENT LIST` runs on a fresh one).
fn connections(node: &Server) -> usize {
    let list: String = node.cmd(&["CLIENT", "LIST"]);
    list.lines()
        .filter(|l| !l.contains("cmd=client|list"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_waits_on_a_cluster_node_take_four_connections_and_are_granted_in_order() {
    const WAITS: usize = 1_000;
    let cluster = Cluster::start(3);
    let key = format!("{{{}}}:many", cluster.key_on(1, "pull"));
    let node = &cluster.nodes[1];
    let before = connections(node);
    node.hold(&key, "holder", &["LEASE", "600000"]);
    let client = Client::open(cluster.nodes[0].url()).await.unwrap();
    let granted = Arc::new(Mutex::new(Vec::new()));
    let mut waits = JoinSet::new();
    for i in 0..WAITS {
        let (lock, granted) = (client.lock(key.as_str()), granted.clone());
        waits.spawn(async move {
            let guard = lock.acquire().await.unwrap();
            granted.lock().unwrap().push(i);
            guard.release().await.unwrap();
        });
        let started = Instant::now();
        while waiters(node, &key) != i as i64 + 1 {
            assert!(started.elapsed() < PHASE, "wait {i} never queued");
            tokio::task::yield_now().await;
        }
    }
    let theirs = connections(node) - before;
    // The shared connection, the pull pair, the listening connection.
    assert!(
        theirs <= 4,
        "the client has {theirs} connections to the node"
    );
    node.cmd::<u64>(&["LOCK.RELEASE", &key, "holder"]);
    let all = async {
        while let Some(done) = waits.join_next().await {
            done.unwrap();
        }
    };
    timeout(PHASE, all).await.expect("every wait was granted");
    assert_eq!(*granted.lock().unwrap(), (0..WAITS).collect::<Vec<_>>());
    // Counted once answered (Valkey counts a blocked call when it ends).
    let pulled = node.calls("lock.grants");
    assert!(pulled >= 1, "the outcomes were not pulled");
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_waits_on_a_cluster_node_leave_nothing_behind() {
    const ROUNDS: u64 = 100;
    let cluster = Cluster::start(3);
    let key = format!("{{{}}}:cancel", cluster.key_on(2, "pull"));
    let node = &cluster.nodes[2];
    let client = Client::open(cluster.nodes[0].url()).await.unwrap();
    for round in 0..ROUNDS {
        node.hold(&key, "holder", &[]);
        let lock = client.lock(key.as_str());
        let (cancel, cancelled) = tokio::sync::oneshot::channel::<()>();
        let wait = tokio::spawn(async move {
            tokio::select! {
                guard = lock.acquire() => Some(guard.unwrap()),
                _ = cancelled => None,
            }
        });
        let started = Instant::now();
        while waiters(node, &key) != 1 {
            assert!(started.elapsed() < PHASE, "round {round}: never queued");
            tokio::task::yield_now().await;
        }
        // Released (and granted to the mailbox) a moment before or after the cancel.
        let apart = Duration::from_micros(round * 37 % 1_000);
        if round % 2 == 0 {
            node.cmd::<u64>(&["LOCK.RELEASE", &key, "holder"]);
            tokio::time::sleep(apart).await;
            let _ = cancel.send(());
        } else {
            let _ = cancel.send(());
            tokio::time::sleep(apart).await;
            node.cmd::<u64>(&["LOCK.RELEASE", &key, "holder"]);
        }
        if let Some(guard) = timeout(PHASE, wait).await.unwrap().unwrap() {
            guard.release().await.unwrap();
        }
        let free = async {
            while node.info(&key).is_some() {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        };
        let left = timeout(Duration::from_secs(10), free).await;
        assert!(left.is_ok(), "round {round}: left {:?}", node.info(&key));
    }
    assert!(node.calls("lock.cancel") >= 1, "no cancel was sent");
    client.close().await.unwrap();
}
