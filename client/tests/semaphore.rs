//! Semaphores with leased permits (`Client::semaphore`): permits shared up to the total, FIFO
//! service without barging, the watchdog's renewals, a forced release seen as a loss, a
//! dropped acquisition leaving nothing on the server, and the blocking API.

mod support;

use std::time::Duration;

use rlock_client::blocking::BlockingClient;
use rlock_client::{LockOptions, LossReason};
use support::{eventually, Server};
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_are_shared_up_to_the_total_and_a_release_lets_the_next_in() {
    let server = Server::start();
    let client = server.client().await;
    let sem = client.semaphore("pool");
    assert_eq!(sem.set_permits(3).await.unwrap(), 3);
    let (a, b) = (client.owner(), client.owner());
    let two = a.semaphore("pool").acquire(2).await.unwrap();
    let one = b.semaphore("pool").acquire(1).await.unwrap();
    assert_ne!(two.token(), one.token());
    let other = client.owner().semaphore("pool");
    assert!(other
        .try_acquire(1, Duration::ZERO)
        .await
        .unwrap()
        .is_none());
    let waiting = tokio::spawn(async move { other.acquire(1).await });
    let queued = eventually(LIMIT, || info_waiters(&server) == 1).await;
    assert!(queued, "the fourth permit's wait is queued");
    assert!(!waiting.is_finished());
    assert_eq!(
        one.release().await.unwrap(),
        0,
        "b holds no permit any more"
    );
    let third = timeout(LIMIT, waiting).await.unwrap().unwrap().unwrap();
    let info = sem.info().await.unwrap().expect("the semaphore exists");
    assert_eq!((info.permits, info.available), (3, 0));
    assert_eq!(info.holders.len(), 2);
    drop((two, third));
    let freed = eventually(LIMIT, || info_available(&server) == 3).await;
    assert!(freed, "dropped guards give their permits back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_wait_at_the_head_is_not_overtaken_by_a_smaller_one() {
    let server = Server::start();
    let client = server.client().await;
    client.semaphore("fifo").set_permits(2).await.unwrap();
    let held = client.owner().semaphore("fifo").acquire(1).await.unwrap();
    let big = client.owner().semaphore("fifo");
    let big = tokio::spawn(async move { big.acquire(2).await });
    assert!(eventually(LIMIT, || info_waiters(&server) == 1).await);
    let small = client.owner().semaphore("fifo");
    let no_wait = small.try_acquire(1, Duration::ZERO).await.unwrap();
    assert!(
        no_wait.is_none(),
        "a permit is free, but the large wait is first"
    );
    let small = tokio::spawn(async move { small.acquire(1).await });
    assert!(eventually(LIMIT, || info_waiters(&server) == 2).await);
    held.release().await.unwrap();
    let big = timeout(LIMIT, big).await.unwrap().unwrap().unwrap();
    assert!(
        !small.is_finished(),
        "the smaller wait comes after the large one"
    );
    big.release().await.unwrap();
    let small = timeout(LIMIT, small).await.unwrap().unwrap().unwrap();
    small.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_renews_permits_past_their_lease() {
    let server = Server::start();
    let client = server.client().await;
    let sem = client.semaphore("renewed");
    sem.set_permits(1).await.unwrap();
    let options = LockOptions::new()
        .lease(Duration::from_millis(600))
        .watchdog(true);
    let guard = sem.clone().options(options).acquire(1).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert!(!guard.is_lost());
    let info = sem.info().await.unwrap().unwrap();
    assert_eq!(info.holders.len(), 1, "still held after three leases");
    assert_eq!(info.holders[0].token, guard.token());
    assert_eq!(guard.release().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_release_is_a_loss() {
    let server = Server::start();
    let client = server.client().await;
    let sem = client.semaphore("forced");
    sem.set_permits(2).await.unwrap();
    let options = LockOptions::new()
        .lease(Duration::from_millis(600))
        .watchdog(true);
    let guard = sem.clone().options(options).acquire(2).await.unwrap();
    assert!(sem.force_release().await.unwrap());
    let reason = timeout(LIMIT, guard.lost())
        .await
        .expect("the loss is seen");
    let forced = LossReason::Ended(rlock_client::EndCause::ForceReleased);
    assert_eq!(reason, forced);
    assert!(guard.release().await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_acquisition_leaves_no_holder_and_no_waiter() {
    let server = Server::start();
    let client = server.client().await;
    let sem = client.semaphore("dropped");
    sem.set_permits(1).await.unwrap();
    let held = client
        .owner()
        .semaphore("dropped")
        .acquire(1)
        .await
        .unwrap();
    let late = client.owner().semaphore("dropped");
    let gave_up = timeout(Duration::from_millis(300), late.acquire(1)).await;
    assert!(gave_up.is_err(), "the permit stayed taken");
    held.release().await.unwrap();
    let empty = eventually(LIMIT, || {
        let info = server.redis_info("dropped");
        info.holders == 0 && info.waiters == 0
    })
    .await;
    assert!(empty, "{:?}", server.redis_info("dropped"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_adds_permits_in_its_scope_and_each_guard_gives_back_its_own() {
    let server = Server::start();
    let client = server.client().await;
    let sem = client.semaphore("again");
    sem.set_permits(5).await.unwrap();
    let first = sem.acquire(2).await.unwrap();
    let second = first.scope(sem.acquire(1)).await.unwrap();
    assert_eq!(first.token(), second.token(), "the same holding");
    // Outside the scope, an acquisition is a holding of its own.
    let third = sem.acquire(1).await.unwrap();
    assert_ne!(third.owner(), first.owner());
    assert_eq!(third.release().await.unwrap(), 0);
    assert_eq!(first.release().await.unwrap(), 1, "one permit left");
    assert_eq!(second.release().await.unwrap(), 0);
    assert_eq!(info_available(&server), 5);
}

#[test]
fn the_blocking_api_takes_and_gives_back_permits() {
    let server = Server::start();
    let client = BlockingClient::open(server.url()).unwrap();
    let sem = client.semaphore("blocking");
    assert_eq!(sem.set_permits(2).unwrap(), 2);
    let guard = sem.acquire(2).unwrap();
    let busy = std::thread::scope(|s| {
        let other = s.spawn(|| client.semaphore("blocking").try_acquire(1, Duration::ZERO));
        other.join().unwrap()
    });
    assert!(busy.unwrap().is_none(), "another thread finds no permit");
    assert_eq!(guard.release().unwrap(), 0);
    assert_eq!(sem.info().unwrap().unwrap().available, 2);
}

/// `SEM.INFO`'s `waiters` (-1 when the key is missing).
fn info_waiters(server: &Server) -> i64 {
    sem_field(server, "pool", "waiters")
        .max(sem_field(server, "fifo", "waiters"))
        .max(sem_field(server, "dropped", "waiters"))
}

fn info_available(server: &Server) -> i64 {
    ["pool", "again"]
        .iter()
        .map(|k| sem_field(server, k, "available"))
        .max()
        .unwrap_or(-1)
}

fn sem_field(server: &Server, key: &str, field: &str) -> i64 {
    let reply: Vec<redis::Value> = server.cmd(&["SEM.INFO", key]);
    let mut items = reply.into_iter();
    while let (Some(name), Some(value)) = (items.next(), items.next()) {
        let name: String = redis::from_redis_value(name).unwrap_or_default();
        if name == field {
            return redis::from_redis_value(value).unwrap_or(-1);
        }
    }
    -1
}

#[derive(Debug)]
struct Counts {
    holders: usize,
    waiters: i64,
}

trait SemInfo {
    fn redis_info(&self, key: &str) -> Counts;
}

impl SemInfo for Server {
    fn redis_info(&self, key: &str) -> Counts {
        let reply: Vec<redis::Value> = self.cmd(&["SEM.INFO", key]);
        let holders = reply
            .chunks(2)
            .find(|p| {
                redis::from_redis_value::<String>(p[0].clone())
                    .ok()
                    .as_deref()
                    == Some("holders")
            })
            .and_then(|p| redis::from_redis_value::<Vec<redis::Value>>(p[1].clone()).ok())
            .map_or(0, |h| h.len());
        Counts {
            holders,
            waiters: sem_field(self, key, "waiters"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_client_gives_back_every_permit() {
    let server = Server::start();
    let client = server.client().await;
    let sem = client.semaphore("again");
    sem.set_permits(4).await.unwrap();
    let first = sem.acquire(2).await.unwrap();
    let second = sem.acquire(1).await.unwrap();
    assert_eq!(info_available(&server), 1);
    client.close().await.unwrap();
    assert_eq!(info_available(&server), 4, "both guards' permits came back");
    drop((first, second));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asking_for_more_than_the_total_or_none_fails_at_once() {
    let server = Server::start();
    let client = server.client().await;
    let sem = client.semaphore("small");
    sem.set_permits(3).await.unwrap();
    let err = timeout(LIMIT, sem.acquire(4)).await.unwrap().unwrap_err();
    assert!(err.to_string().contains("asks for 4 permits"), "{err}");
    assert!(
        matches!(
            err,
            rlock_client::Error::TooManyPermits {
                asked: 4,
                total: 3,
                ..
            }
        ),
        "{err:?}"
    );
    let err = timeout(LIMIT, sem.acquire(0)).await.unwrap().unwrap_err();
    assert!(err.to_string().contains("permits must be"), "{err}");
    let info = sem.info().await.unwrap().unwrap();
    assert!(info.holders.is_empty() && info.waiters == 0, "{info:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_permits_changes_the_total_without_knowing_it() {
    let server = Server::start();
    let client = server.client().await;
    let sem = client.semaphore("added");
    assert_eq!(sem.add_permits(2).await.unwrap(), 2, "created from 0");
    let held = sem.acquire(2).await.unwrap();
    let more = client.semaphore("added");
    let waiting = tokio::spawn(async move { more.acquire(1).await });
    assert!(eventually(LIMIT, || server.redis_info("added").waiters == 1).await);
    assert_eq!(sem.add_permits(1).await.unwrap(), 3);
    let got = timeout(LIMIT, waiting)
        .await
        .expect("served")
        .unwrap()
        .unwrap();
    assert_eq!(sem.add_permits(-3).await.unwrap(), 0);
    let refused = sem.add_permits(-1).await.unwrap_err();
    assert!(
        refused.to_string().contains("total of permits"),
        "{refused}"
    );
    assert_eq!(sem.info().await.unwrap().unwrap().permits, 0);
    got.release().await.unwrap();
    held.release().await.unwrap();
}
