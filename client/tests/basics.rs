//! Acquire, try_acquire, waiting, release, drop, info, and errors from the server.

mod support;

use std::time::{Duration, Instant};

use rlock_client::{Client, Error, LockOptions};
use support::{eventually, Server};

const SECOND: Duration = Duration::from_secs(1);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_gives_a_guard_with_token_key_and_owner() {
    let server = Server::start();
    let client = server.client().await;
    let guard = client.lock("lock:a").acquire().await.unwrap();
    assert_eq!(guard.key(), "lock:a");
    assert!(guard.owner().starts_with(&format!("{}:", client.id())));
    assert!(guard.has_watchdog());
    let info = server.info("lock:a").expect("held");
    assert_eq!(info.owner, guard.owner());
    assert_eq!(info.holds, 1);
    assert_eq!(info.token, guard.token());
    assert!(
        info.ttl > 25_000 && info.ttl <= 30_000,
        "default lease 30 s, got {info:?}"
    );
    let via_client = client.info("lock:a").await.unwrap().expect("held");
    assert_eq!(via_client.owner, guard.owner());
    assert_eq!(via_client.token, guard.token());
    assert_eq!(guard.release().await.unwrap(), 0);
    assert_eq!(server.info("lock:a"), None);
    assert_eq!(client.info("lock:a").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_acquire_on_a_busy_lock_waits_then_answers_none() {
    let server = Server::start();
    let client = server.client().await;
    // Held by another owner.
    let held = client.owner().lock("busy").acquire().await.unwrap();
    let started = Instant::now();
    let got = client
        .lock("busy")
        .try_acquire(Duration::from_millis(200))
        .await
        .unwrap();
    assert!(got.is_none());
    assert!(
        started.elapsed() >= Duration::from_millis(190),
        "{:?}",
        started.elapsed()
    );
    let no_wait = client
        .lock("busy")
        .try_acquire(Duration::ZERO)
        .await
        .unwrap();
    assert!(no_wait.is_none());
    assert_eq!(server.info("busy").unwrap().waiters, 0);
    held.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_with_a_wait_limit_times_out_with_the_key() {
    let server = Server::start();
    let client = server.client().await;
    let _held = client.owner().lock("slow").acquire().await.unwrap();
    let limited = LockOptions::new().wait(Duration::from_millis(150));
    let err = client
        .lock("slow")
        .options(limited)
        .acquire()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Timeout { key, waited } if key == "slow" && *waited >= Duration::from_millis(150)),
        "{err:?}"
    );
    let Error::Timeout { waited, .. } = err else {
        unreachable!()
    };
    assert_eq!(
        err.to_string(),
        format!("timed out after {waited:?} waiting for lock 'slow'")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_says_how_long_it_waited_when_the_server_answered_late() {
    let server = Server::start();
    let client = server.client().await;
    let _held = server.client().await.lock("late").acquire().await.unwrap();
    let limited = LockOptions::new().wait(Duration::from_millis(100));
    let lock = client.lock("late").options(limited);
    server.stop();
    let started = std::time::Instant::now();
    let waiting = tokio::spawn(async move { lock.acquire().await });
    // The server answers once resumed, long after the wait limit (and long after the task
    // began, however late a loaded machine starts it).
    tokio::time::sleep(Duration::from_millis(1000)).await;
    server.resume();
    let err = waiting.await.unwrap().unwrap_err();
    let Error::Timeout { waited, .. } = err else {
        panic!("{err:?}")
    };
    assert!(waited >= Duration::from_millis(500), "waited {waited:?}");
    assert!(waited <= started.elapsed(), "waited {waited:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_gets_the_lock_with_a_higher_token_when_it_is_released() {
    let server = Server::start();
    let client = server.client().await;
    let first = client.lock("handoff").acquire().await.unwrap();
    let first_token = first.token();
    let lock = client.lock("handoff");
    let waiter = tokio::spawn(async move { lock.acquire().await });
    assert!(eventually(SECOND, || server.info("handoff").unwrap().waiters == 1).await);
    // The shared connection is not blocked by the waiter.
    let info = tokio::time::timeout(SECOND, client.info("handoff")).await;
    assert_eq!(info.unwrap().unwrap().unwrap().waiters, 1);
    first.release().await.unwrap();
    let second = tokio::time::timeout(5 * SECOND, waiter)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(second.token() > first_token);
    assert_eq!(server.info("handoff").unwrap().owner, second.owner());
    second.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_happens_on_the_wait_connection_as_a_ticket() {
    let server = Server::start();
    let client = server.client().await;
    let held = client.lock("own-conn").acquire().await.unwrap();
    let lock = client.lock("own-conn");
    let waiter = tokio::spawn(async move { lock.acquire().await });
    assert!(eventually(SECOND, || server.info("own-conn").unwrap().waiters == 1).await);
    let clients: String = server.cmd(&["CLIENT", "LIST"]);
    assert!(!clients.contains("flags=b"), "a blocked waiter:\n{clients}");
    // Subscribed: the wait connection, and the listening one (`cmd=subscribe`).
    let subscribed = clients.lines().filter(|l| l.contains(" sub=1 "));
    let waiting: Vec<_> = subscribed
        .filter(|l| !l.contains("cmd=subscribe"))
        .collect();
    assert_eq!(waiting.len(), 1, "{clients}");
    assert!(waiting[0].contains("cmd=lock.wait"), "{clients}");
    assert!(waiting[0].contains("resp=3"), "{clients}");
    // Everything else still flows over the shared connection meanwhile.
    let other = client.lock("other").acquire().await.unwrap();
    other.release().await.unwrap();
    held.release().await.unwrap();
    waiter.await.unwrap().unwrap().release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_guard_releases_in_the_background() {
    let server = Server::start();
    let client = server.client().await;
    let guard = client.lock("dropped").acquire().await.unwrap();
    drop(guard);
    assert!(eventually(2 * SECOND, || server.info("dropped").is_none()).await);
    assert!(eventually(SECOND, || client.watchdog_stats().holdings == 0).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_from_an_existing_redis_client_and_force_release() {
    let server = Server::start();
    let client = Client::from_redis(server.redis()).await.unwrap();
    let guard = client.lock("forced").acquire().await.unwrap();
    assert!(client.force_release("forced").await.unwrap());
    assert!(!client.force_release("forced").await.unwrap());
    let err = guard.release().await.unwrap_err();
    assert!(
        matches!(&err, Error::Lost { key, .. } if key == "forced"),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_come_back_with_their_code() {
    let server = Server::start();
    let client = server.client().await;
    server.cmd::<()>(&["SET", "plain", "x"]);
    let err = client.lock("plain").acquire().await.unwrap_err();
    assert!(
        matches!(&err, Error::WrongType { key, detail } if key == "plain" && detail.starts_with("WRONGTYPE")),
        "{err:?}"
    );
    let zero = LockOptions::new().lease(Duration::ZERO);
    let err = client
        .lock("zero")
        .options(zero)
        .acquire()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Redis(e) if e.code() == Some("ERR")),
        "{err:?}"
    );
    assert_eq!(server.info("zero"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_unblock_does_not_end_a_wait() {
    let server = Server::start();
    let client = server.client().await;
    let held = client.lock("patient").acquire().await.unwrap();
    let lock = client.lock("patient");
    let waiter = tokio::spawn(async move { lock.acquire().await });
    assert!(eventually(SECOND, || server.info("patient").unwrap().waiters == 1).await);
    let clients: String = server.cmd(&["CLIENT", "LIST"]);
    let waiting = clients
        .lines()
        .find(|l| l.contains(" sub=1 "))
        .expect("the wait connection");
    let id = waiting.split(' ').next().unwrap().trim_start_matches("id=");
    // A ticket is not a blocked client: the server answers 0 and the wait goes on.
    assert_eq!(server.cmd::<i64>(&["CLIENT", "UNBLOCK", id]), 0);
    assert_eq!(server.cmd::<i64>(&["CLIENT", "UNBLOCK", id, "ERROR"]), 0);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(server.info("patient").unwrap().waiters, 1);
    assert!(!waiter.is_finished());
    held.release().await.unwrap();
    let guard = tokio::time::timeout(5 * SECOND, waiter)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    guard.release().await.unwrap();
}
