//! A Redis Cluster failover under the client: a master dies and its replica takes over.
//! The client reloads the slot map after a connection error, without being opened again;
//! the watchdog and waiters go to the promoted replica (`reshard.rs` moves a slot instead).
//! Real cluster nodes with the module, one replica each.

mod support;

use std::time::{Duration, Instant};

use rlock_client::Client;
use support::cluster::Cluster;
use support::{eventually, watched};
use tokio::task::block_in_place;
use tokio::time::sleep;

const SOON: Duration = Duration::from_secs(10);

async fn client(cluster: &Cluster) -> Client {
    Client::open(cluster.nodes[0].url())
        .await
        .expect("open a cluster client")
}

/// Whether node `i` says it is a master (`ROLE`); false if it does not answer.
fn is_master(cluster: &Cluster, i: usize) -> bool {
    let Ok(mut conn) = cluster.nodes[i]
        .redis()
        .get_connection_with_timeout(Duration::from_millis(200))
    else {
        return false;
    };
    let role: redis::RedisResult<Vec<redis::Value>> = redis::cmd("ROLE").query(&mut conn);
    let first = role.ok().and_then(|r| r.into_iter().next());
    first.and_then(|v| redis::from_redis_value::<String>(v).ok()) == Some("master".into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: make test-all"]
async fn after_a_failover_the_client_finds_the_promoted_replica() {
    support::trace();
    // A short node timeout: the replica takes over a second or two after its master dies.
    let args = ["--cluster-node-timeout", "1000"];
    let mut cluster = block_in_place(|| Cluster::start_replicated(3, 1, &args));
    let client = client(&cluster).await;
    // On the seed itself: the map must come from another node once it is gone.
    let key = cluster.key_on(0, "lock:failover");
    let replica = cluster.replica_of(0);
    // Confirmed by the replica, so that it has the lock when it takes over. The lease
    // outlasts the failover; the watchdog renews it every 3 s.
    let options = watched(Duration::from_secs(9)).min_replicas(1, Duration::from_secs(2));
    let guard = client.lock(key.as_str()).options(options).acquire().await;
    let guard = guard.expect("acquired and replicated");

    cluster.nodes[0].kill();
    let promoted = eventually(Duration::from_secs(30), || is_master(&cluster, replica));
    assert!(promoted.await, "the replica was not promoted");

    // The first commands fail with the dead node; one of them reloads the slot map.
    let started = Instant::now();
    let info = loop {
        match client.info(&key).await {
            Ok(info) => break info.expect("the promoted replica has the lock"),
            Err(err) => {
                assert!(started.elapsed() < SOON, "still failing: {err}");
                sleep(Duration::from_millis(50)).await;
            }
        }
    };
    assert_eq!(
        (info.owner.as_str(), info.token),
        (guard.owner(), guard.token())
    );

    // The watchdog renews on the new master, in time.
    let new_master = &cluster.nodes[replica];
    let renews = new_master.calls("lock.renew");
    let renewed = eventually(SOON, || new_master.calls("lock.renew") > renews);
    assert!(renewed.await, "no renewal reached the promoted replica");
    assert!(!guard.is_lost(), "lost: {:?}", guard.loss_reason());
    assert_eq!(
        guard.release().await.expect("released on the new master"),
        0
    );
    assert_eq!(new_master.info(&key), None);
}

/// A waiter whose master dies ends at once, with the lock or an I/O error (the client
/// cannot tell a grant the dead node made); the application's next try goes to the promoted
/// replica, which hands it the lock once the failover delay has passed, after the holder
/// knew its loss.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: make test-all"]
async fn a_waiter_whose_master_dies_gets_the_lock_from_the_promoted_replica() {
    support::trace();
    let args = [
        "--cluster-node-timeout",
        "1000",
        "--rlock.failover-delay",
        "2000",
    ];
    let mut cluster = block_in_place(|| Cluster::start_replicated(3, 1, &args));
    let key = cluster.key_on(1, "lock:waiter");
    let replica = cluster.replica_of(1);
    let holder = client(&cluster).await;
    let waiter = client(&cluster).await;
    let options = watched(Duration::from_millis(1000)).min_replicas(1, Duration::from_secs(2));
    let held = holder.lock(key.as_str()).options(options).acquire().await;
    let held = held.expect("acquired and replicated");
    let lost = held.lost_signal();
    let lost = tokio::spawn(async move { (lost.lost().await, Instant::now()) });
    let lock = waiter.lock(key.as_str());
    let waiting = tokio::spawn(async move {
        let limit = Duration::from_secs(20);
        let started = Instant::now();
        let mut errors = Vec::new();
        while started.elapsed() < limit {
            match lock.try_acquire(limit - started.elapsed()).await {
                Ok(guard) => return (guard, Instant::now(), errors),
                Err(err) => {
                    errors.push(err.to_string());
                    sleep(Duration::from_millis(100)).await;
                }
            }
        }
        (None, Instant::now(), errors)
    });
    let queued = eventually(SOON, || {
        cluster.nodes[1].info(&key).is_some_and(|i| i.waiters == 1)
    });
    assert!(queued.await, "the waiter did not queue");

    cluster.nodes[1].kill();
    let (guard, granted_at, errors) = waiting.await.expect("no panic");
    let guard = guard.unwrap_or_else(|| panic!("no lock within the limit: {errors:?}"));
    let info = cluster.nodes[replica]
        .info(&key)
        .expect("on the promoted replica");
    assert_eq!(info.owner, guard.owner());
    assert!(guard.token() > held.token());
    let (reason, lost_at) = lost.await.expect("no panic");
    assert!(
        lost_at < granted_at,
        "the holder lost the lock only after the grant ({reason})"
    );
    eprintln!(
        "waiter: {} errors before the grant: {errors:?}",
        errors.len()
    );
}
