//! Holds the client does not leave behind: a grant whose reply was lost, added to a holding
//! the owner already has, is adopted or given back (counted in permits for a semaphore);
//! a release whose connection broke is delivered on a fresh one, so the hold is gone at
//! once and the next waiter served, for a lock, a read hold and permits.

mod support;

use std::time::Duration;

use rlock_client::{Client, ClientOptions, Error};
use support::{eventually, Server};
use tokio::time::{sleep, timeout};

const SOON: Duration = Duration::from_secs(1);
const LIMIT: Duration = Duration::from_secs(10);

/// The permits `owner` holds on the semaphore `key`, as the server counts them.
async fn permits_held(client: &Client, key: &str, owner: &str) -> u64 {
    let info = client.semaphore(key).info().await.expect("SEM.INFO");
    let holder = info.as_ref().and_then(|info| info.holder(owner));
    holder.map_or(0, |h| h.permits)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_added_to_a_holding_whose_reply_was_lost_are_adopted_or_given_back() {
    support::trace();
    let server = Server::start();
    let options = ClientOptions::new().response_timeout(Duration::from_millis(500));
    let client = Client::open_with(server.url(), options).await.unwrap();
    let me = client.owner();
    let sem = me.semaphore("pool");
    sem.set_permits(5).await.unwrap();
    let first = sem.acquire(1).await.unwrap();
    let owner = first.owner().to_owned();
    let _: String = server.cmd(&["CLIENT", "PAUSE", "800", "ALL"]);
    let more = sem.acquire(2).await;
    sleep(Duration::from_millis(500)).await; // past the pause
    let held = permits_held(&client, "pool", &owner).await;
    match more {
        Ok(more) => {
            assert_eq!(held, 3, "adopted: the guards stand for every permit held");
            assert_eq!(more.release().await.unwrap(), 1);
        }
        Err(err) => {
            assert!(matches!(err, Error::Unresponsive { .. }), "{err:?}");
            assert_eq!(held, 1, "given back: only the first guard's permit is held");
        }
    }
    assert_eq!(first.release().await.unwrap(), 0);
    assert_eq!(permits_held(&client, "pool", &owner).await, 0);
}

/// `SEM.INFO`'s `waiters` (-1 when the key is missing).
fn sem_waiters(server: &Server, key: &str) -> i64 {
    let reply: Vec<redis::Value> = server.cmd(&["SEM.INFO", key]);
    let mut items = reply.into_iter();
    while let (Some(name), Some(value)) = (items.next(), items.next()) {
        let name: String = redis::from_redis_value(name).unwrap_or_default();
        if name == "waiters" {
            return redis::from_redis_value(value).unwrap_or(-1);
        }
    }
    -1
}

/// Kills every normal connection (the client's shared ones), then releases `guard` at once
/// (before the idle check would notice): the release meets the broken connection.
async fn release_after_kill(
    server: &Server,
    guard: rlock_client::Guard,
) -> rlock_client::Result<u64> {
    let killed: i64 = server.cmd(&["CLIENT", "KILL", "TYPE", "normal"]);
    assert!(killed >= 1, "the shared connection was killed");
    timeout(LIMIT, guard.release())
        .await
        .expect("the release hung")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_released_on_a_killed_connection_is_released_and_handed_on() {
    support::trace();
    let server = Server::start();
    let (client, other) = (server.client().await, server.client().await);
    let guard = client.lock("k").acquire().await.unwrap();
    let next = other.lock("k");
    let waiter = tokio::spawn(async move { next.try_acquire(LIMIT).await });
    assert!(eventually(LIMIT, || server.info("k").is_some_and(|i| i.waiters == 1)).await);
    let released = release_after_kill(&server, guard).await;
    assert_eq!(released.unwrap(), 0, "delivered on a fresh connection");
    let served = timeout(SOON, waiter)
        .await
        .expect("the waiter was served at once");
    let guard = served.unwrap().unwrap().expect("handed the lock");
    assert_eq!(guard.release().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_hold_released_on_a_killed_connection_lets_the_queued_writer_in() {
    support::trace();
    let server = Server::start();
    let (client, other) = (server.client().await, server.client().await);
    let rw = client.rw_lock("rw");
    let reading = rw.read().acquire().await.unwrap();
    let writer = other.rw_lock("rw").write();
    let queued = tokio::spawn(async move { writer.try_acquire(LIMIT).await });
    let waiting = || {
        let info: Vec<redis::Value> = server.cmd(&["RWLOCK.INFO", "rw"]);
        info.contains(&redis::Value::Int(1)) // `waiters`, the only integer at the top
    };
    assert!(eventually(LIMIT, waiting).await, "the writer queued");
    let released = release_after_kill(&server, reading).await;
    assert_eq!(released.unwrap(), 0, "delivered on a fresh connection");
    let served = timeout(SOON, queued)
        .await
        .expect("the writer was served at once");
    let writing = served.unwrap().unwrap().expect("handed the write hold");
    assert_eq!(writing.release().await.unwrap(), 0);
    // This task holds nothing now: its write hold is not an upgrade.
    let mine = rw.write().try_acquire(LIMIT).await.unwrap();
    assert_eq!(mine.expect("the write hold").release().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_released_on_a_killed_connection_go_to_the_next_waiter() {
    support::trace();
    let server = Server::start();
    let (client, other) = (server.client().await, server.client().await);
    let sem = client.semaphore("pool");
    sem.set_permits(2).await.unwrap();
    let both = sem.acquire(2).await.unwrap();
    let owner = both.owner().to_owned();
    let next = other.semaphore("pool");
    let waiter = tokio::spawn(async move { next.try_acquire(2, LIMIT).await });
    let waiting = || sem_waiters(&server, "pool") == 1;
    assert!(eventually(LIMIT, waiting).await, "the waiter queued");
    let released = release_after_kill(&server, both).await;
    assert_eq!(released.unwrap(), 0, "delivered on a fresh connection");
    let served = timeout(SOON, waiter)
        .await
        .expect("the waiter was served at once");
    let permits = served.unwrap().unwrap().expect("handed both permits");
    assert_eq!(permits_held(&client, "pool", &owner).await, 0);
    assert_eq!(permits.release().await.unwrap(), 0);
}
