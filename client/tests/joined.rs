//! Futures that run together in one task (`tokio::join!`, `join_all`, `buffer_unordered`)
//! and each acquire a lock through `client.lock(...)` contend for it, as with tokio's
//! `Mutex`: one holder at a time, and every one of them gets its turn.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::stream::{self, StreamExt};
use rlock_client::Client;
use support::Server;

/// Bounds an acquisition that would otherwise wait for ever.
const HUNG: Duration = Duration::from_secs(20);

/// How many hold the lock now, and the most that ever held it at once.
#[derive(Default)]
struct Holders {
    now: AtomicUsize,
    most: AtomicUsize,
}

/// Acquires `key`, holds it across a few awaits (where the other futures of the task run),
/// releases it; returns the holding's token.
async fn hold_a_while(client: &Client, key: &str, holders: &Holders) -> u64 {
    let acquired = tokio::time::timeout(HUNG, client.lock(key).acquire()).await;
    let guard = acquired
        .expect("hung: a joined future never got the lock")
        .unwrap();
    let now = holders.now.fetch_add(1, Ordering::SeqCst) + 1;
    holders.most.fetch_max(now, Ordering::SeqCst);
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    holders.now.fetch_sub(1, Ordering::SeqCst);
    let token = guard.token();
    guard.release().await.unwrap();
    token
}

/// One holder at a time, and five distinct holdings whose tokens grow in turn.
fn assert_took_turns(holders: &Holders, mut tokens: Vec<u64>) {
    assert_eq!(holders.most.load(Ordering::SeqCst), 1, "holders overlapped");
    tokens.sort_unstable();
    tokens.dedup();
    assert_eq!(tokens.len(), 5, "holdings shared a token: {tokens:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_futures_joined_with_join_macro_take_turns() {
    let server = Server::start();
    let client = server.client().await;
    let holders = Holders::default();
    let (h, c) = (&holders, &client);
    let (a, b, d, e, f) = tokio::join!(
        hold_a_while(c, "joined", h),
        hold_a_while(c, "joined", h),
        hold_a_while(c, "joined", h),
        hold_a_while(c, "joined", h),
        hold_a_while(c, "joined", h),
    );
    assert_took_turns(&holders, vec![a, b, d, e, f]);
    assert_eq!(server.info("joined"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_futures_joined_in_a_spawned_task_take_turns() {
    let server = Server::start();
    let client = server.client().await;
    let task = tokio::spawn(async move {
        let holders = Holders::default();
        let (h, c) = (&holders, &client);
        let all = (0..5).map(|_| hold_a_while(c, "joined-task", h));
        let tokens = futures_util::future::join_all(all).await;
        assert_took_turns(&holders, tokens);
    });
    task.await.unwrap();
    assert_eq!(server.info("joined-task"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_futures_of_buffer_unordered_take_turns() {
    let server = Server::start();
    let client = server.client().await;
    let holders = Holders::default();
    let (h, c) = (&holders, &client);
    let tokens: Vec<u64> = stream::iter(0..5)
        .map(|_| hold_a_while(c, "buffered", h))
        .buffer_unordered(5)
        .collect()
        .await;
    assert_took_turns(&holders, tokens);
    assert_eq!(server.info("buffered"), None);
}
