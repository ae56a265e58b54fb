//! A waiter whose lock's slot is migrated to another node while it waits is redirected by
//! its node (`ASK`, `MOVED` or `TRYAGAIN`) and queues again at the lock's new node, within
//! its wait limit. Three real masters with the module.

mod support;

use std::time::{Duration, Instant};

use rlock_client::Client;
use support::cluster::Cluster;
use support::eventually;

const SOON: Duration = Duration::from_secs(10);

/// `LOCK.INFO key` on `node` after `ASKING` (the target of a migration answers `MOVED`
/// otherwise): the owner and the queued waiters, or `None` if free.
fn info_asking(node: &support::Server, key: &str) -> Option<(String, i64)> {
    let mut pipe = redis::pipe();
    pipe.cmd("ASKING").ignore().cmd("LOCK.INFO").arg(key);
    let (reply,): (Option<Vec<redis::Value>>,) = pipe.query(&mut node.conn()).expect("LOCK.INFO");
    let fields = reply?;
    let field = |name: &str| {
        let at = fields.iter().position(|f| {
            redis::from_redis_value::<String>(f.clone()).ok().as_deref() == Some(name)
        });
        at.and_then(|i| fields.get(i + 1)).cloned()
    };
    let owner = redis::from_redis_value(field("owner")?).ok()?;
    let waiters = redis::from_redis_value(field("waiters")?).ok()?;
    Some((owner, waiters))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_follows_its_lock_to_the_node_it_migrates_to() {
    let cluster = Cluster::start(3);
    let holder = Client::open(cluster.nodes[0].url()).await.unwrap();
    let waiter = Client::open(cluster.nodes[0].url()).await.unwrap();
    let key = format!("{{{}}}:job", cluster.key_on(2, "wait"));
    let slot = cluster.slot(&key);
    let (from, to) = (&cluster.nodes[2], &cluster.nodes[0]);
    let held = holder.lock(key.as_str()).acquire().await.unwrap();
    let lock = waiter.lock(key.as_str());
    let waiting = tokio::spawn(async move { lock.try_acquire(3 * SOON).await });
    let queued_on = |node: &support::Server| info_asking(node, &key).is_some_and(|i| i.1 == 1);
    assert!(eventually(SOON, || queued_on(from)).await, "never queued");

    let started = Instant::now();
    cluster.begin_migration(slot, 2, 0);
    cluster.migrate_keys(2, 0, &[&key]);
    assert!(
        eventually(SOON, || queued_on(to)).await,
        "the waiter did not queue again on the target: {:?}",
        info_asking(to, &key)
    );
    let redirected = ["ASK", "MOVED", "TRYAGAIN"].map(|code| from.errors(code));
    eprintln!(
        "the waiter queued again on the target {:?} after the migration began (ASK, MOVED, TRYAGAIN from the source: {redirected:?})",
        started.elapsed()
    );
    let held_token = held.token();
    assert_eq!(held.release().await.unwrap(), 0);
    let handed = waiting.await.unwrap().unwrap().expect("handed the lock");
    assert!(handed.token() > held_token);
    assert_eq!(info_asking(to, &key).unwrap().0, handed.owner());
    assert_eq!(handed.release().await.unwrap(), 0);
    cluster.finish_migration(slot, 0);
}
