//! Reentrancy per task, an option of the client (`ClientOptions::reentrant_per_task`): the
//! owner of an acquisition through `client.lock(...)` is then the calling task (outside any
//! task, the calling thread), so that nested acquisitions in one task reenter and other
//! tasks contend. Without the option, each acquisition outside a scope is a holding of its
//! own.

mod support;

use std::time::Duration;

use rlock_client::{Client, ClientOptions, Guard};
use support::Server;

/// A client of `server` whose acquisitions are owned by their task.
async fn per_task(server: &Server) -> Client {
    let options = ClientOptions::new().reentrant_per_task();
    Client::open_with(server.url(), options).await.unwrap()
}

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
    let client = per_task(&server).await;
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
    let client = per_task(&server).await;
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
    let client = per_task(&server).await;
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
    let client = per_task(&server).await;
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
    let client = per_task(&server).await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_each_acquisition_of_a_task_outside_a_scope_is_a_holding_of_its_own() {
    let server = Server::start();
    let client = server.client().await;
    let task = tokio::spawn(async move {
        let held = acquire_in_time(&client, "own").await;
        let lock = client.lock("own");
        let again = lock.try_acquire(Duration::from_millis(100)).await;
        assert!(again.unwrap().is_none(), "the same task reentered");
        let owner = held.owner().to_owned();
        held.release().await.unwrap();
        let next = acquire_in_time(&client, "own").await;
        assert_ne!(next.owner(), owner, "an owner id served two holdings");
        let id = next.owner().strip_prefix(&format!("{}:", client.id()));
        assert!(
            id.is_some_and(|n| n.parse::<u64>().is_ok()),
            "{}",
            next.owner()
        );
        next.release().await.unwrap()
    });
    assert_eq!(task.await.unwrap(), 0);
}
