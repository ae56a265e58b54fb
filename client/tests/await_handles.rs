//! A lock handle is a future: awaiting it acquires it, as `acquire()` does (the same owners,
//! the same waits), for a plain lock, each side of a read-write lock and a semaphore's
//! permits.

mod support;

use std::time::Duration;

use support::Server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn awaiting_a_lock_handle_acquires_it_and_reenters_in_a_scope() {
    let server = Server::start();
    let client = server.client().await;
    let guard = client.lock("k").await.unwrap();
    let info = server.info("k").expect("held");
    assert_eq!(
        (info.owner.as_str(), info.token),
        (guard.owner(), guard.token())
    );
    let again = guard.scope(client.lock("k")).await.unwrap();
    assert_eq!(again.token(), guard.token(), "its scope reenters");
    assert_eq!(again.release().await.unwrap(), 1);
    let other = client.owner().lock("k");
    let waiting = tokio::spawn(async move { other.await.map(|g| g.token()) });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "another owner waits");
    guard.release().await.unwrap();
    let token = waiting.await.unwrap().unwrap();
    assert!(token > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn awaiting_a_side_of_a_read_write_lock_or_permits_acquires_them() {
    let server = Server::start();
    let client = server.client().await;
    let config = client.rw_lock("rw");
    let reading = config.read().await.unwrap();
    let writer = client.owner().rw_lock("rw");
    let writing = tokio::spawn(async move { writer.write().await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!writing.is_finished(), "the writer waits for the reader");
    reading.release().await.unwrap();
    let writing = writing.await.unwrap().unwrap();
    writing.release().await.unwrap();
    let pool = client.semaphore("pool");
    pool.set_permits(2).await.unwrap();
    let both = pool.permits(2).await.unwrap();
    assert_eq!(pool.available_permits().await.unwrap(), 0);
    assert_eq!(both.release().await.unwrap(), 0);
}
