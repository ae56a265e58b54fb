//! Mutual exclusion under contention: a read-then-write counter stays exact.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::AsyncCommands;
use support::Server;
use tokio::task::JoinSet;

const CLIENTS: usize = 2;
const TASKS_PER_CLIENT: usize = 4;
const INCREMENTS: usize = 500;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_tasks_in_two_clients_increment_a_counter_exactly() {
    let server = Server::start();
    let tasks = CLIENTS * TASKS_PER_CLIENT;
    let tokens = Arc::new(Mutex::new(Vec::with_capacity(INCREMENTS)));
    let mut set = JoinSet::new();
    for c in 0..CLIENTS {
        let client = server.client().await;
        let data = server
            .redis()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        for t in 0..TASKS_PER_CLIENT {
            let n = c * TASKS_PER_CLIENT + t;
            // 500 increments split over 8 tasks: 63 for the first four, 62 for the rest.
            let share = INCREMENTS / tasks + usize::from(n < INCREMENTS % tasks);
            let (lock, mut data) = (client.lock("counter-lock"), data.clone());
            let tokens = tokens.clone();
            set.spawn(async move {
                for _ in 0..share {
                    let guard = lock.acquire().await.unwrap();
                    let value: i64 = data.get("counter").await.unwrap_or(0);
                    // Let the other tasks run between the read and the write.
                    tokio::time::sleep(Duration::from_micros(200)).await;
                    let () = data.set("counter", value + 1).await.unwrap();
                    tokens.lock().unwrap().push(guard.token());
                    assert!(!guard.is_lost());
                    guard.release().await.unwrap();
                }
            });
        }
    }
    let joined = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(done) = set.join_next().await {
            done.unwrap();
        }
    });
    joined.await.expect("contention did not finish in 60 s");
    let count: i64 = server.cmd(&["GET", "counter"]);
    assert_eq!(count, INCREMENTS as i64);
    let tokens = tokens.lock().unwrap();
    assert_eq!(tokens.len(), INCREMENTS);
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "fencing tokens must grow with every holding"
    );
    assert_eq!(server.info("counter-lock"), None);
}
