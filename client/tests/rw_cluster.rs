//! Read-write locks in a Redis Cluster: each on the node of its slot, waits as pulled
//! tickets (`RWLOCK.WAIT ... TO`), renewed by the watchdog's pipeline of each node.

mod support;

use std::time::Duration;

use rlock_client::Client;
use support::cluster::Cluster;
use support::{eventually, watched};
use tokio::time::{sleep, timeout};

const LEASE: Duration = Duration::from_millis(900);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_write_locks_on_every_node_wait_and_are_renewed_there() {
    let cluster = Cluster::start(3);
    let client = Client::open(cluster.nodes[0].url()).await.unwrap();
    let keys: Vec<String> = (0..3).map(|node| cluster.key_on(node, "rw")).collect();
    let mut writers = Vec::new();
    for key in &keys {
        let write = client.owner().rw_lock(key.as_str()).write();
        writers.push(write.options(watched(LEASE)).acquire().await.unwrap());
    }
    let mut readers = Vec::new();
    for key in &keys {
        let read = client
            .owner()
            .rw_lock(key.as_str())
            .read()
            .options(watched(LEASE));
        readers.push(tokio::spawn(async move { read.acquire().await }));
    }
    for (node, key) in keys.iter().enumerate() {
        let queued = || {
            let info: Vec<redis::Value> = cluster.nodes[node].cmd(&["RWLOCK.INFO", key]);
            info.contains(&redis::Value::Int(1)) // `waiters`, the only integer at the top
        };
        assert!(
            eventually(Duration::from_secs(10), queued).await,
            "{key} never queued"
        );
    }
    // Held for three leases: renewed on each node.
    sleep(3 * LEASE).await;
    for (node, writer) in writers.iter().enumerate() {
        assert!(
            !writer.is_lost(),
            "{}: {:?}",
            writer.key(),
            writer.loss_reason()
        );
        assert!(
            cluster.nodes[node].calls("rwlock.renew") > 0,
            "node {node} renewed nothing"
        );
    }
    for writer in writers {
        assert_eq!(writer.release().await.unwrap(), 0);
    }
    for (node, reader) in readers.into_iter().enumerate() {
        let read = timeout(Duration::from_secs(10), reader)
            .await
            .unwrap()
            .unwrap();
        let read = read.unwrap();
        assert!(
            cluster.nodes[node].calls("rwlock.wait") > 0,
            "node {node}: no ticket"
        );
        assert_eq!(read.release().await.unwrap(), 0);
    }
    for key in &keys {
        assert_eq!(client.rw_lock(key.as_str()).info().await.unwrap(), None);
    }
}
