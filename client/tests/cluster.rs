//! Redis Cluster (SPEC.md §6): each command goes to the node that serves its key's slot, the
//! watchdog renews with one pipeline per node, and a lock keeps working while its slot is
//! migrated to another node (`ASK`) and after (`MOVED`). Three real masters with the module.

mod support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use rlock_client::{Client, Error, LockOptions, WatchdogStats};
use support::cluster::Cluster;
use support::{eventually, watched};
use tokio::time::sleep;

const LEASE: Duration = Duration::from_millis(900);
const SOON: Duration = Duration::from_secs(10);

async fn client(cluster: &Cluster) -> Client {
    Client::open(cluster.nodes[0].url())
        .await
        .expect("open a cluster client")
}

/// Waits for the next watchdog round to finish.
async fn after_next_round(client: &Client) -> WatchdogStats {
    let rounds = client.watchdog_stats().rounds;
    let started = Instant::now();
    while client.watchdog_stats().rounds == rounds {
        assert!(started.elapsed() < SOON, "no renewal round");
        sleep(Duration::from_millis(5)).await;
    }
    client.watchdog_stats()
}

/// Redirections the cluster's nodes have answered so far.
fn redirections(cluster: &Cluster, code: &str) -> u64 {
    cluster.nodes.iter().map(|n| n.errors(code)).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_on_every_node_go_to_the_node_of_their_slot() {
    support::trace();
    let cluster = Cluster::start(3);
    let client = client(&cluster).await;
    let keys: Vec<String> = (0..30).map(|i| format!("lock:spread:{i}")).collect();
    let owners: Vec<usize> = keys.iter().map(|k| cluster.owner(k)).collect();
    let used: BTreeSet<usize> = owners.iter().copied().collect();
    assert_eq!(used, BTreeSet::from([0, 1, 2]), "keys on every node");
    let renews_before: Vec<u64> = cluster
        .nodes
        .iter()
        .map(|n| n.calls("lock.renew"))
        .collect();

    let me = client.owner();
    let mut guards = Vec::new();
    for (key, &node) in keys.iter().zip(&owners) {
        let lock = me.lock(key.as_str()).options(watched(LEASE));
        let outer = lock.acquire().await.unwrap();
        let inner = lock.acquire().await.unwrap();
        assert_eq!(
            inner.token(),
            outer.token(),
            "{key}: reentry keeps the token"
        );
        let info = cluster.nodes[node]
            .info(key)
            .expect("the lock is on its node");
        assert_eq!((info.owner.as_str(), info.holds), (me.id(), 2), "{key}");
        assert_eq!(info.token, outer.token());
        guards.push((key, node, outer, inner));
    }

    // The first round may split the locks by acquisition time; they then run together.
    sleep(LEASE / 3).await;
    let first = after_next_round(&client).await;
    let mut last = first.clone();
    for _ in 0..2 {
        last = after_next_round(&client).await;
    }
    let rounds = last.rounds - first.rounds;
    assert_eq!(
        last.round_trips - first.round_trips,
        3 * rounds,
        "one pipeline per node per round"
    );
    assert_eq!(last.renewals - first.renewals, rounds * keys.len() as u64);
    assert_eq!(last.failed_rounds, 0);
    for (i, node) in cluster.nodes.iter().enumerate() {
        let renewed = node.calls("lock.renew") - renews_before[i];
        assert!(renewed >= rounds, "node {i} renewed only {renewed} locks");
    }

    for (key, node, outer, inner) in guards {
        assert!(!outer.is_lost(), "{key} lost");
        assert_eq!(inner.release().await.unwrap(), 1, "{key}");
        assert_eq!(outer.release().await.unwrap(), 0, "{key}");
        assert_eq!(cluster.nodes[node].info(key), None, "{key} not released");
    }
    // The slot map was right all along: no node had to redirect.
    assert_eq!(redirections(&cluster, "MOVED"), 0);
    assert_eq!(redirections(&cluster, "ASK"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_handed_the_lock_on_the_node_of_its_slot() {
    support::trace();
    let cluster = Cluster::start(3);
    let holder = client(&cluster).await;
    let waiter = client(&cluster).await;
    for node in 0..3 {
        let key = cluster.key_on(node, "lock:handoff");
        let server = &cluster.nodes[node];
        let held = holder.lock(key.as_str()).acquire().await.unwrap();
        let lock = waiter.lock(key.as_str());
        let waiting = tokio::spawn(async move { lock.try_acquire(SOON).await });
        let queued = eventually(SOON, || server.info(&key).is_some_and(|i| i.waiters == 1));
        assert!(
            queued.await,
            "node {node}: no waiter queued: {:?}",
            server.info(&key)
        );
        let held_token = held.token();
        assert_eq!(held.release().await.unwrap(), 0);
        let guard = waiting.await.unwrap().unwrap().expect("handed the lock");
        assert!(guard.token() > held_token, "node {node}: a fresh token");
        let info = server.info(&key).expect("held by the waiter");
        assert_eq!((info.owner.as_str(), info.waiters), (guard.owner(), 0));
        guard.release().await.unwrap();
        assert_eq!(server.info(&key), None);
    }
    assert_eq!(redirections(&cluster, "MOVED"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_lock_follows_its_slot_to_another_node() {
    support::trace();
    let cluster = Cluster::start(3);
    let client = client(&cluster).await;
    // Opened before the move: their slot maps go stale.
    let stale = self::client(&cluster).await;
    let stale_too = self::client(&cluster).await;
    let key = cluster.key_on(0, "lock:moving");
    let slot = cluster.slot(&key);
    let (from, to) = (&cluster.nodes[0], &cluster.nodes[1]);
    let me = client.owner();
    let outer = me
        .lock(key.as_str())
        .options(watched(LEASE))
        .acquire()
        .await
        .unwrap();

    cluster.begin_migration(slot, 0, 1);
    cluster.migrate_keys(0, 1, &[&key]);
    cluster.finish_migration(slot, 1);
    assert!(to.serves(slot) && !from.serves(slot));
    assert_eq!(to.info(&key).expect("moved with its slot").owner, me.id());

    // The watchdog's next renewal is redirected, and lands on the new node.
    let (moved, renews) = (from.errors("MOVED"), to.calls("lock.renew"));
    let renewed = eventually(SOON, || to.calls("lock.renew") > renews);
    assert!(renewed.await, "no renewal reached the new node");
    assert!(
        from.errors("MOVED") > moved,
        "the renewal was not redirected"
    );
    after_next_round(&client).await;
    assert!(!outer.is_lost(), "lost: {:?}", outer.loss_reason());
    assert!(to.info(&key).expect("still held").ttl > 0);

    // Reentry and release go straight to the new node: the map learned the move.
    let moved = from.errors("MOVED");
    let inner = me.lock(key.as_str()).acquire().await.unwrap();
    assert_eq!(inner.token(), outer.token());
    assert_eq!(to.info(&key).expect("held").holds, 2);
    assert_eq!(inner.release().await.unwrap(), 1);
    assert_eq!(outer.release().await.unwrap(), 0);
    assert_eq!(to.info(&key), None);
    assert_eq!(
        from.errors("MOVED"),
        moved,
        "the map did not learn the move"
    );

    // A client that did not see the move is redirected, on its shared connection...
    let guard = stale
        .lock(key.as_str())
        .try_acquire(Duration::ZERO)
        .await
        .unwrap();
    let guard = guard.expect("the free lock");
    assert!(
        from.errors("MOVED") > moved,
        "the stale client was not redirected"
    );
    assert_eq!(to.info(&key).expect("on the new node").owner, guard.owner());
    assert_eq!(guard.release().await.unwrap(), 0);

    // ...and on a connection of its own: `WAIT` (min_replicas) then runs on the node that
    // granted, where no replica acknowledges, so the grant is given back.
    let (moved, from_waits, to_waits) =
        (from.errors("MOVED"), from.calls("wait"), to.calls("wait"));
    let options = LockOptions::new().min_replicas(1, Duration::from_millis(50));
    let err = stale_too
        .lock(key.as_str())
        .options(options)
        .acquire()
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotReplicated {
                wanted: 1,
                acked: 0,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(from.errors("MOVED") > moved, "not redirected");
    assert_eq!(
        (from.calls("wait"), to.calls("wait")),
        (from_waits, to_waits + 1)
    );
    assert_eq!(to.info(&key), None, "the unconfirmed grant was kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_in_migration_is_followed_with_asking() {
    support::trace();
    let cluster = Cluster::start(3);
    let client = client(&cluster).await;
    let waiter = self::client(&cluster).await;
    // Two keys of one slot: one migrated while held, one created during the migration.
    let tag = cluster.key_on(2, "mig");
    let (held_key, new_key) = (format!("{{{tag}}}:held"), format!("{{{tag}}}:new"));
    let slot = cluster.slot(&held_key);
    assert_eq!(cluster.slot(&new_key), slot);
    assert_eq!(cluster.owner(&held_key), 2);
    let (from, to) = (&cluster.nodes[2], &cluster.nodes[0]);
    let keys_on =
        |n: &support::Server| -> i64 { n.cmd(&["CLUSTER", "COUNTKEYSINSLOT", &slot.to_string()]) };
    let held = client
        .lock(held_key.as_str())
        .options(watched(LEASE))
        .acquire()
        .await
        .unwrap();

    cluster.begin_migration(slot, 2, 0);
    cluster.migrate_keys(2, 0, &[&held_key]);
    assert_eq!((keys_on(from), keys_on(to)), (0, 1));

    // The renewal is answered ASK by the source, and renews on the target after ASKING.
    let (asks, renews) = (from.errors("ASK"), to.calls("lock.renew"));
    let renewed = eventually(SOON, || to.calls("lock.renew") > renews);
    assert!(renewed.await, "no renewal reached the importing node");
    assert!(from.errors("ASK") > asks, "the renewal was not redirected");
    after_next_round(&client).await;
    assert!(!held.is_lost(), "lost: {:?}", held.loss_reason());

    // A new lock in the migrating slot is made on the target.
    let asks = from.errors("ASK");
    let other = client
        .lock(new_key.as_str())
        .try_acquire(Duration::ZERO)
        .await
        .unwrap();
    let other = other.expect("a free lock");
    assert!(from.errors("ASK") > asks);
    assert_eq!((keys_on(from), keys_on(to)), (0, 2));
    let info = client
        .info(&new_key)
        .await
        .unwrap()
        .expect("seen through ASK");
    assert_eq!(info.owner, other.owner());

    // A waiter is queued on the target through ASK, and handed the lock there.
    let lock = waiter.lock(held_key.as_str());
    let waiting = tokio::spawn(async move { lock.try_acquire(SOON).await });
    let started = Instant::now();
    loop {
        let info = client.info(&held_key).await.unwrap().expect("held");
        if info.waiters == 1 {
            break;
        }
        assert!(started.elapsed() < SOON, "no waiter queued: {info:?}");
        sleep(Duration::from_millis(10)).await;
    }
    let held_token = held.token();
    assert_eq!(held.release().await.unwrap(), 0);
    let handed = waiting.await.unwrap().unwrap().expect("handed the lock");
    assert!(handed.token() > held_token);
    let info = client
        .info(&held_key)
        .await
        .unwrap()
        .expect("held by the waiter");
    assert_eq!(info.owner, handed.owner());

    // Released through ASK too; nothing left on either node.
    assert_eq!(handed.release().await.unwrap(), 0);
    assert_eq!(other.release().await.unwrap(), 0);
    assert_eq!((keys_on(from), keys_on(to)), (0, 0));
    cluster.finish_migration(slot, 0);
    assert!(to.serves(slot) && !from.serves(slot));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_redirections_fail_with_too_many_redirects() {
    support::trace();
    let cluster = Cluster::start(3);
    let client = client(&cluster).await;
    let key = cluster.key_on(0, "lock:pingpong");
    let slot = cluster.slot(&key);
    // Node 0 is told its slot is node 1's, and node 1 still thinks it is node 0's.
    let to = cluster.nodes[1].node_id();
    let _: String = cluster.nodes[0].cmd(&["CLUSTER", "SETSLOT", &slot.to_string(), "NODE", &to]);
    let moved = redirections(&cluster, "MOVED");
    let started = std::time::Instant::now();
    let err = client
        .lock(key.as_str())
        .try_acquire(Duration::ZERO)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::TooManyRedirects { slot: s, .. } if *s == slot),
        "{err:?}"
    );
    // Followed back and forth, with growing pauses after the first 5, until the response
    // timeout (2 s) has passed since the first; the last answer points back to node 0.
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "gave up after {took:?}");
    let detail = format!(
        "for slot {slot} (the last to 127.0.0.1:{})",
        cluster.nodes[0].port()
    );
    assert!(err.to_string().contains(&detail), "{err}");
    // The first answer, then one per redirection followed: more than 5, and a bounded few.
    let answered = redirections(&cluster, "MOVED") - moved;
    assert!(
        answered > 1 + Error::MAX_REDIRECTS as u64 && answered < 60,
        "{answered} redirections"
    );
}
