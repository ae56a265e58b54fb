//! Reentrancy: through an owner handle in async code, and per thread in the blocking API.

mod support;

use std::time::Duration;

use rlock_client::blocking::BlockingClient;
use rlock_client::LockOptions;
use support::{watched, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_handle_reenters_and_needs_as_many_releases() {
    let server = Server::start();
    let client = server.client().await;
    let me = client.owner();
    assert!(me.id().starts_with(&format!("{}:", client.id())));
    let outer = me.lock("tree").acquire().await.unwrap();
    let inner = me.lock("tree").acquire().await.unwrap();
    assert_eq!(inner.token(), outer.token(), "reentry keeps the token");
    assert_eq!(inner.owner(), me.id());
    let info = server.info("tree").unwrap();
    assert_eq!((info.owner.as_str(), info.holds), (me.id(), 2));
    // Anyone else is kept out, including the same client without the handle.
    let stranger = client
        .lock("tree")
        .try_acquire(Duration::ZERO)
        .await
        .unwrap();
    assert!(stranger.is_none());
    assert_eq!(inner.release().await.unwrap(), 1);
    assert_eq!(server.info("tree").unwrap().holds, 1);
    assert_eq!(outer.release().await.unwrap(), 0);
    assert_eq!(server.info("tree"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reentry_with_a_shorter_lease_leaves_the_watched_outer_guard_renewed() {
    let server = Server::start();
    let client = server.client().await;
    let me = client.owner();
    // Default options: a 30 s lease the watchdog renews every 10 s.
    let outer = me.lock("mixed").acquire().await.unwrap();
    let short = LockOptions::new().lease(Duration::from_secs(3));
    let inner = me.lock("mixed").options(short).acquire().await.unwrap();
    assert_eq!(inner.token(), outer.token());
    // Past the short lease (and the watchdog's next round at 10 s would come too late).
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(outer.loss_reason(), None, "the outer guard is lost");
    let ttl = server.info("mixed").expect("the lock lives").ttl;
    assert!(
        ttl > 20_000,
        "the watchdog did not renew the lease: {ttl} ms left"
    );
    assert!(outer.remaining() > Duration::from_secs(20));
    assert_eq!(inner.release().await.unwrap(), 1);
    assert_eq!(outer.release().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_without_an_owner_handle_are_not_reentrant_across_tasks() {
    let server = Server::start();
    let client = server.client().await;
    let lock = client.lock("plain");
    let held = lock.acquire().await.unwrap();
    let elsewhere = lock.clone();
    let other_task = tokio::spawn(async move {
        elsewhere
            .try_acquire(Duration::from_millis(50))
            .await
            .unwrap()
    });
    assert!(other_task.await.unwrap().is_none());
    let other_owner = client
        .owner()
        .lock("plain")
        .try_acquire(Duration::ZERO)
        .await
        .unwrap();
    assert!(other_owner.is_none());
    held.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_keeps_renewing_while_one_reentrant_hold_remains() {
    let server = Server::start();
    let client = server.client().await;
    let me = client.owner();
    let watched = watched(Duration::from_millis(300));
    let outer = me.lock("nested").options(watched).acquire().await.unwrap();
    let inner = me.lock("nested").options(watched).acquire().await.unwrap();
    assert_eq!(inner.release().await.unwrap(), 1);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let info = server
        .info("nested")
        .expect("the remaining hold must be renewed");
    assert_eq!(info.holds, 1);
    assert!(!outer.is_lost());
    assert_eq!(outer.release().await.unwrap(), 0);
}

#[test]
fn the_blocking_api_reenters_per_thread() {
    let server = Server::start();
    let client = BlockingClient::open(server.url()).unwrap();
    let lock = client.lock("per-thread");
    let outer = lock.acquire().unwrap();
    let inner = lock.acquire().unwrap();
    assert_eq!(outer.owner(), inner.owner());
    assert_eq!(outer.owner(), client.thread_owner());
    assert_eq!(outer.token(), inner.token());
    assert_eq!(server.info("per-thread").unwrap().holds, 2);

    let other = client.clone();
    let main_owner = client.thread_owner();
    std::thread::spawn(move || {
        assert_ne!(
            other.thread_owner(),
            main_owner,
            "each thread is its own owner"
        );
        let lock = other.lock("per-thread");
        assert!(lock
            .try_acquire(Duration::from_millis(100))
            .unwrap()
            .is_none());
    })
    .join()
    .unwrap();

    assert_eq!(inner.release().unwrap(), 1);
    assert_eq!(server.info("per-thread").unwrap().holds, 1);
    // Dropping a blocking guard releases before `drop` returns.
    drop(outer);
    assert_eq!(server.info("per-thread"), None);
}

#[test]
fn blocking_threads_take_turns_and_see_loss() {
    let server = Server::start();
    let client = BlockingClient::open(server.url()).unwrap();
    let held = client.lock("turns").acquire().unwrap();
    let waiter = {
        let client = client.clone();
        std::thread::spawn(move || client.lock("turns").acquire().map(|g| g.release()))
    };
    let queued = || server.info("turns").unwrap().waiters == 1;
    assert!(
        support::poll(Duration::from_secs(10), queued),
        "the waiter never queued"
    );
    held.release().unwrap();
    assert_eq!(waiter.join().unwrap().unwrap().unwrap(), 0);

    let watched = watched(Duration::from_millis(300));
    let guard = client.lock("turns").options(watched).acquire().unwrap();
    assert!(client.force_release("turns").unwrap());
    assert!(guard.wait_lost(Duration::from_secs(1)).is_some());
    assert!(guard.is_lost());
    assert!(guard.release().is_err());
}
