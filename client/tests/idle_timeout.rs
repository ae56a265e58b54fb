//! A server whose idle `timeout` is shorter than the client's pauses between commands: the
//! connections it closes cost no lock and no wait.

mod support;

use std::time::Duration;

use support::{watched, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_lock_outlives_a_server_timeout_below_a_third_of_its_lease() {
    support::trace();
    let server = Server::start_with(&["--timeout", "1"]);
    let client = server.client().await;
    let lock = client.lock("idle").options(watched(Duration::from_secs(6)));
    let guard = lock.acquire().await.unwrap();
    // Renewals every 2 s, each on a connection the server closed after 1 s idle.
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert_eq!(guard.loss_reason(), None, "the lock was lost");
    let info = server.info("idle").expect("the lock lives");
    assert_eq!(
        (info.owner.as_str(), info.token),
        (guard.owner(), guard.token())
    );
    assert_eq!(guard.release().await.unwrap(), 0);
    assert_eq!(server.info("idle"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_served_on_a_server_with_a_short_idle_timeout() {
    let server = Server::start_with(&["--timeout", "1"]);
    let holder = server.client().await;
    let held = holder.lock("idle").acquire().await.unwrap();
    let waiter = server.client().await;
    let waiting = tokio::spawn(async move { waiter.lock("idle").acquire().await });
    // Past the keepalive (5 s): its `PING` goes on a shared connection closed while idle.
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert!(
        !waiting.is_finished(),
        "the wait ended: {:?}",
        waiting.await
    );
    held.release().await.unwrap();
    let served = tokio::time::timeout(Duration::from_secs(5), waiting).await;
    let guard = served.expect("served in time").unwrap().expect("the lock");
    assert_eq!(server.info("idle").unwrap().owner, guard.owner());
    guard.release().await.unwrap();
}
