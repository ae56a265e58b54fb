//! `Guard::fenced`: a write that runs on the server only while the guard's holding is the
//! lock's current one (`LOCK.FENCED`), sent to the lock's node; a refusal marks the guard
//! lost.

mod support;

use std::time::Duration;

use rlock_client::blocking::BlockingClient;
use rlock_client::{Error, LockOptions, LossReason};
use support::cluster::Cluster;
use support::Server;

fn hset(key: &str, field: &str, value: &str) -> redis::Cmd {
    let mut cmd = redis::cmd("HSET");
    cmd.arg(key).arg(field).arg(value);
    cmd
}

fn is_lost(result: &Result<i64, Error>) -> bool {
    matches!(
        result,
        Err(Error::Lost {
            reason: LossReason::NotHeld,
            ..
        })
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_write_lands_while_held_and_returns_the_reply() {
    let server = Server::start();
    let client = server.client().await;
    let guard = client.lock("lock:{o}").acquire().await.unwrap();
    let added: i64 = guard.fenced(&hset("{o}:d", "f", "v")).await.unwrap();
    assert_eq!(added, 1);
    let mut eval = redis::cmd("EVAL");
    eval.arg("return redis.call('HGET', KEYS[1], 'f')")
        .arg(1)
        .arg("{o}:d");
    let value: String = guard.fenced(&eval).await.unwrap();
    assert_eq!(value, "v");
    // An error of the command itself is the command's, and the guard stays held.
    let refused = guard.fenced::<i64>(&redis::cmd("FLUSHALL")).await;
    assert!(matches!(refused, Err(Error::Redis(_))), "{refused:?}");
    assert!(!guard.is_lost());
    assert_eq!(guard.release().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_lock_was_taken_cannot_write_and_its_guard_is_lost() {
    let server = Server::start();
    let client = server.client().await;
    let guard = client.lock("lock:{o}").acquire().await.unwrap();
    // The holding ends on the server while the guard's deadline is far away: another
    // holder takes the lock and writes.
    assert_eq!(server.cmd::<i64>(&["LOCK.FORCERELEASE", "lock:{o}"]), 1);
    server.hold("lock:{o}", "other", &[]);
    server.cmd::<i64>(&["HSET", "{o}:d", "f", "new"]);
    assert!(is_lost(&guard.fenced(&hset("{o}:d", "f", "stale")).await));
    // Announced by the server, or found by the refused write if that came first.
    let forced = LossReason::Ended(rlock_client::EndCause::ForceReleased);
    let reason = guard.loss_reason();
    assert!(
        matches!(reason, Some(LossReason::NotHeld)) || reason == Some(forced),
        "{reason:?}"
    );
    assert_eq!(server.cmd::<String>(&["HGET", "{o}:d", "f"]), "new");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_holding_of_the_same_owner_fences_the_older_guard() {
    let server = Server::start();
    let client = server.client().await;
    let guard = client.lock("lock:{o}").acquire().await.unwrap();
    assert_eq!(server.cmd::<i64>(&["LOCK.FORCERELEASE", "lock:{o}"]), 1);
    let newer: u64 = server.cmd(&["LOCK.ACQUIRE", "lock:{o}", guard.owner()]);
    assert!(newer > guard.token());
    assert!(is_lost(&guard.fenced(&hset("{o}:d", "f", "stale")).await));
    assert!(guard.is_lost());
    assert_eq!(server.cmd::<i64>(&["EXISTS", "{o}:d"]), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_blocked_past_its_lease_cannot_write_after_the_next_holder() {
    let server = Server::start();
    let client = server.client().await;
    let lease = LockOptions::new().lease(Duration::from_millis(300));
    let old = client
        .lock("lock:{o}")
        .options(lease)
        .acquire()
        .await
        .unwrap();
    // The holder's task stalls (no watchdog, nothing renews) past the lease.
    std::thread::sleep(Duration::from_millis(600));
    let other = server.client().await;
    let new = other.lock("lock:{o}").acquire().await.unwrap();
    let _: i64 = new
        .fenced(redis::cmd("RPUSH").arg("{o}:log").arg("new"))
        .await
        .unwrap();
    let stale = old
        .fenced(redis::cmd("RPUSH").arg("{o}:log").arg("old"))
        .await;
    assert!(is_lost(&stale), "{stale:?}");
    let log: Vec<String> = server.cmd(&["LRANGE", "{o}:log", "0", "-1"]);
    assert_eq!(log, ["new"]);
}

#[test]
fn the_blocking_guard_writes_fenced_too() {
    let server = Server::start();
    let client = BlockingClient::open(server.url()).unwrap();
    let guard = client.lock("lock:{o}").acquire().unwrap();
    assert_eq!(guard.fenced::<i64>(&hset("{o}:d", "f", "v")).unwrap(), 1);
    assert_eq!(server.cmd::<i64>(&["LOCK.FORCERELEASE", "lock:{o}"]), 1);
    let stale = guard.fenced::<i64>(&hset("{o}:d", "f", "stale"));
    assert!(is_lost(&stale), "{stale:?}");
    assert_eq!(server.cmd::<String>(&["HGET", "{o}:d", "f"]), "v");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_cluster_the_write_goes_to_the_locks_node_and_cross_slot_is_refused() {
    let cluster = Cluster::start(3);
    let client = rlock_client::Client::open(cluster.nodes[0].url())
        .await
        .unwrap();
    for tag in ["a", "b", "c", "d"] {
        let (lock, data) = (format!("lock:{{{tag}}}"), format!("order:{{{tag}}}"));
        let node = &cluster.nodes[cluster.owner(&lock)];
        let before = node.calls("lock.fenced");
        let guard = client.lock(lock.as_str()).acquire().await.unwrap();
        let added: i64 = guard.fenced(&hset(&data, "f", tag)).await.unwrap();
        assert_eq!(added, 1);
        assert_eq!(
            node.calls("lock.fenced"),
            before + 1,
            "sent to the lock's node"
        );
        assert_eq!(node.cmd::<String>(&["HGET", &data, "f"]), tag);
        let cross = guard
            .fenced::<i64>(&hset("order:elsewhere", "f", tag))
            .await;
        let code = match &cross {
            Err(Error::Redis(e)) => e.code().map(str::to_owned),
            _ => None,
        };
        assert_eq!(code.as_deref(), Some("CROSSSLOT"), "{cross:?}");
        assert!(!guard.is_lost());
        guard.release().await.unwrap();
    }
}
