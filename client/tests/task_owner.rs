//! The default owner of an acquisition: the calling task (outside any task, the calling
//! thread), so that nested acquisitions in one task reenter and other tasks contend.

mod support;

use std::time::Duration;

use rlock_client::{Client, Guard};
use support::Server;

/// Bounds an acquisition that would otherwise wait for ever.
const HUNG: Duration = Duration::from_secs(10);

async fn acquire_in_time(client: &Client, key: &str) -> Guard {
    let lock = client.lock(key);
    tokio::time::timeout(HUNG, lock.acquire())
        .await
        .expect("hung: a nested acquisition waited on its own task")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_acquisitions_in_one_task_reenter_and_a_waiter_gets_the_lock_after_the_outer_release(
) {
    let server = Server::start();
    let client = server.client().await;
    let nested = {
        let client = client.clone();
        tokio::spawn(async move {
            let lock = client.lock("nest");
            let outer = lock.acquire().await.unwrap();
            let inner = tokio::time::timeout(HUNG, lock.acquire())
                .await
                .expect("hung: the same task waited on its own holding")
                .unwrap();
            (outer, inner)
        })
    };
    let (outer, inner) = nested.await.unwrap();
    assert_eq!(inner.token(), outer.token(), "a reentry keeps the token");
    assert_eq!(inner.owner(), outer.owner());
    assert!(outer.owner().starts_with(&format!("{}:t", client.id())));
    assert_eq!(server.info("nest").unwrap().holds, 2);

    // Another task queues behind the holding.
    let waiter = {
        let client = client.clone();
        tokio::spawn(async move { client.lock("nest").acquire().await.unwrap() })
    };
    assert_eq!(inner.release().await.unwrap(), 1, "the inner release");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished(), "the waiter got a lock still held");
    assert_eq!(server.info("nest").unwrap().holds, 1);
    // The guards were moved out of their task: releasing them here works.
    let (owner, token) = (outer.owner().to_owned(), outer.token());
    assert_eq!(outer.release().await.unwrap(), 0);
    let got = tokio::time::timeout(HUNG, waiter)
        .await
        .expect("hung")
        .unwrap();
    assert_ne!(got.owner(), owner);
    assert!(got.token() > token);
    got.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_outside_any_task_reenters_per_thread() {
    let server = Server::start();
    let client = server.client().await;
    // A `#[tokio::test]` body is run by `block_on`: it is no task.
    assert!(tokio::task::try_id().is_none());
    let outer = acquire_in_time(&client, "main").await;
    let inner = acquire_in_time(&client, "main").await;
    assert_eq!(inner.token(), outer.token());
    assert!(outer.owner().starts_with(&format!("{}:h", client.id())));
    assert_eq!(inner.release().await.unwrap(), 1);
    assert_eq!(outer.release().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_task_contends_and_a_moved_guard_releases_from_there() {
    let server = Server::start();
    let client = server.client().await;
    let held = acquire_in_time(&client, "shared").await;
    let other = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .lock("shared")
                .try_acquire(Duration::from_millis(100))
                .await
                .unwrap()
        })
    };
    assert!(other.await.unwrap().is_none(), "another task reentered");
    let owner = held.owner().to_owned();
    let released = tokio::spawn(async move {
        assert_eq!(held.owner(), owner, "a moved guard keeps its owner");
        held.release().await.unwrap()
    });
    assert_eq!(released.await.unwrap(), 0);
    assert_eq!(server.info("shared"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_task_reenters_as_a_task() {
    let server = Server::start();
    let client = server.client().await;
    let handle = tokio::runtime::Handle::current();
    let (owners, tokens) = tokio::task::spawn_blocking(move || {
        handle.block_on(async {
            let outer = acquire_in_time(&client, "blocking").await;
            let inner = acquire_in_time(&client, "blocking").await;
            let owners = (outer.owner().to_owned(), inner.owner().to_owned());
            let tokens = (outer.token(), inner.token());
            assert_eq!(inner.release().await.unwrap(), 1);
            assert_eq!(outer.release().await.unwrap(), 0);
            (owners, tokens)
        })
    })
    .await
    .unwrap();
    assert_eq!(owners.0, owners.1);
    assert!(owners.0.contains(":t"), "{}", owners.0);
    assert_eq!(tokens.0, tokens.1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_set_s_tasks_are_tasks_and_its_own_future_is_its_thread_s() {
    let server = Server::start();
    let client = server.client().await;
    let local = tokio::task::LocalSet::new();
    let (outside, inside) = local
        .run_until(async {
            let outer = acquire_in_time(&client, "local").await;
            let moved = client.clone();
            let spawned = tokio::task::spawn_local(async move {
                let got = moved
                    .lock("local")
                    .try_acquire(Duration::from_millis(100))
                    .await
                    .unwrap();
                assert!(got.is_none(), "a spawned local task reentered");
                let first = acquire_in_time(&moved, "other").await;
                let second = acquire_in_time(&moved, "other").await;
                assert_eq!(second.release().await.unwrap(), 1);
                let owner = first.owner().to_owned();
                first.release().await.unwrap();
                owner
            });
            let inside = spawned.await.unwrap();
            let outside = outer.owner().to_owned();
            outer.release().await.unwrap();
            (outside, inside)
        })
        .await;
    assert!(
        outside.starts_with(&format!("{}:h", client.id())),
        "{outside}"
    );
    assert!(
        inside.starts_with(&format!("{}:t", client.id())),
        "{inside}"
    );
}
