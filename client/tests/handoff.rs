//! A wait ends on time, with the truth, when the lock is handed over just as the wait ends:
//! at its own deadline it answers the token or nil, never nothing (SPEC.md §2, §3); and a
//! cancelled wait (its connection killed) leaves no hold, whatever it crossed.

mod support;

use std::time::{Duration, Instant};

use support::{eventually, Server};
use tokio::time::{sleep, timeout};

const WAIT: Duration = Duration::from_millis(100);
/// Far more than a handoff or a timeout takes; less than the 2 s after which the client gives
/// up on a reply that never comes (and fails the wait).
const ON_TIME: Duration = Duration::from_millis(1000);
const TRIES: u32 = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_whose_deadline_meets_a_handoff_answers_on_time() {
    support::trace();
    let server = Server::start();
    let holder = server.client().await;
    let client = server.client().await;
    let mut late = Vec::new();
    for i in 0..TRIES {
        let held = holder.lock("edge").acquire().await.unwrap();
        let lock = client.lock("edge");
        let started = Instant::now();
        let waiter = tokio::spawn(async move { lock.try_acquire(WAIT).await });
        // Release from 95 ms to 104.5 ms after the wait began, across its deadline.
        sleep(WAIT - Duration::from_millis(5) + Duration::from_micros(500) * i).await;
        held.release().await.unwrap();
        let answer = waiter.await.unwrap().unwrap();
        if started.elapsed() > WAIT + ON_TIME {
            late.push((i, started.elapsed()));
        }
        if let Some(guard) = answer {
            guard.release().await.unwrap();
        }
        assert_eq!(server.info("edge"), None, "try {i}: a hold remained");
    }
    assert!(
        late.is_empty(),
        "waits answered late (server reply lost?): {late:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_wait_crossing_a_handoff_frees_the_lock_at_once() {
    support::trace();
    let server = Server::start();
    let holder = server.client().await;
    let client = server.client().await;
    let third = server.client().await;
    for i in 0..2 * TRIES {
        let held = holder.lock("crossing").acquire().await.unwrap();
        let lock = client.lock("crossing");
        // The cancellation lands from 1 ms before to 1 ms after the release.
        let cancel_after = Duration::from_millis(49) + Duration::from_micros(50) * i;
        let waiting = tokio::spawn(async move { timeout(cancel_after, lock.acquire()).await });
        sleep(Duration::from_millis(50)).await;
        held.release().await.unwrap();
        if let Ok(guard) = waiting.await.unwrap() {
            guard.unwrap().release().await.unwrap();
        }
        let free = eventually(ON_TIME, || server.info("crossing").is_none()).await;
        assert!(
            free,
            "try {i}: a hold remained: {:?}",
            server.info("crossing")
        );
        let next = third.lock("crossing").try_acquire(ON_TIME).await.unwrap();
        let next = next.unwrap_or_else(|| {
            panic!(
                "try {i}: the lock stayed taken: {:?}",
                server.info("crossing")
            )
        });
        next.release().await.unwrap();
    }
}
