//! Cancelled acquisitions leak no hold, even when the grant and the cancellation cross.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use support::{eventually, Server};
use tokio::task::JoinSet;
use tokio::time::{sleep, timeout};

/// A small xorshift generator: random moments without a dependency.
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let seed = (nanos as u64) | 1;
        eprintln!("cancellation seed: {seed}");
        Rng(seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    fn micros(&mut self, max: u64) -> Duration {
        Duration::from_micros(self.below(max))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_wait_leaves_the_queue_and_gets_nothing() {
    let server = Server::start();
    let client = server.client().await;
    // Held by another owner.
    let held = client.owner().lock("queue").acquire().await.unwrap();
    let waiting = timeout(Duration::from_millis(100), client.lock("queue").acquire()).await;
    assert!(waiting.is_err(), "the lock was busy");
    assert!(
        eventually(Duration::from_secs(10), || server
            .info("queue")
            .unwrap()
            .waiters
            == 0)
        .await
    );
    let clients: String = server.cmd(&["CLIENT", "LIST"]);
    assert!(
        !clients.contains("flags=b"),
        "the wait's connection lives on:\n{clients}"
    );
    held.release().await.unwrap();
    assert_eq!(
        server.info("queue"),
        None,
        "the lock went to a cancelled waiter"
    );
    // The killed connection was not pooled: the next wait works.
    let held = client.lock("queue").acquire().await.unwrap();
    let lock = client.lock("queue");
    let waiter = tokio::spawn(async move { lock.acquire().await });
    assert!(
        eventually(Duration::from_secs(10), || server
            .info("queue")
            .unwrap()
            .waiters
            == 1)
        .await
    );
    held.release().await.unwrap();
    let next = timeout(Duration::from_secs(5), waiter).await.unwrap();
    next.unwrap().unwrap().release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_acquires_cancelled_at_random_moments_leak_no_hold() {
    support::trace();
    let server = Server::start();
    let holder = server.client().await;
    let client = server.client().await;
    let mut rng = Rng::seeded();
    let stop = Arc::new(AtomicBool::new(false));
    let contention = {
        let (lock, stop) = (holder.lock("contended"), stop.clone());
        let mut rng = Rng(rng.below(u64::MAX) | 1);
        tokio::spawn(async move {
            let mut holdings = 0;
            while !stop.load(Ordering::Relaxed) {
                let guard = lock.acquire().await.unwrap();
                sleep(rng.micros(3000)).await;
                guard.release().await.unwrap();
                holdings += 1;
            }
            holdings
        })
    };
    // The contention is under way before the acquisitions start, however late it began.
    let contended = eventually(Duration::from_secs(10), || {
        server.info("contended").is_some()
    });
    assert!(contended.await, "the contending holder never took the lock");
    let (mut granted, mut cancelled) = (0, 0);
    for _ in 0..10 {
        let mut batch = JoinSet::new();
        for i in 0..10 {
            let lock = client.lock("contended");
            let (start, limit) = (rng.micros(2000), rng.micros(6000));
            let acquire = async move {
                sleep(start).await;
                match timeout(limit, lock.acquire()).await {
                    Ok(guard) => {
                        guard.unwrap().release().await.unwrap();
                        true
                    }
                    Err(_) => false,
                }
            };
            if i % 2 == 0 {
                batch.spawn(acquire);
            } else {
                // Cancelled by aborting the task that awaits the acquire.
                let task = tokio::spawn(acquire);
                let abort_after = rng.micros(6000);
                batch.spawn(async move {
                    sleep(abort_after).await;
                    task.abort();
                    task.await.unwrap_or(false)
                });
            }
        }
        while let Some(done) = batch.join_next().await {
            if done.unwrap() {
                granted += 1;
            } else {
                cancelled += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let holdings = match timeout(Duration::from_secs(10), contention).await {
        Ok(done) => done.unwrap(),
        Err(_) => panic!(
            "the contending holder {} is stuck (other client {}); LOCK.INFO {:?}; clients:\n{}",
            holder.id(),
            client.id(),
            server.info("contended"),
            server.cmd::<String>(&["CLIENT", "LIST"])
        ),
    };
    eprintln!("{cancelled} cancelled, {granted} granted, {holdings} contending holdings");
    assert_eq!(cancelled + granted, 100);
    assert!(cancelled > 0 && holdings > 0, "no contention happened");
    let free = eventually(Duration::from_secs(10), || {
        server.info("contended").is_none()
    });
    assert!(free.await, "a hold leaked: {:?}", server.info("contended"));
    assert!(
        eventually(Duration::from_secs(10), || client.watchdog_stats().holdings
            == 0)
        .await
    );
    assert_eq!(holder.watchdog_stats().holdings, 0);
}
