//! The client never frees a newer holding, never hangs on a server that stopped answering,
//! and lets nothing outlive `close()`.

mod support;

use std::time::{Duration, Instant};

use rlock_client::{Client, ClientOptions, Error, LockOptions, LossReason};
use support::{eventually, watched, Server};
use tokio::time::{sleep, timeout};

const LEASE: Duration = Duration::from_millis(900);

/// Lost, then acquired again through the same owner while the old guard's release is held
/// back behind a paused server: the release (by token) reaches the server after the new
/// grant, and must not free it. Without the token it would: same owner, count 1 → 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_release_of_a_lost_guard_never_frees_the_owners_new_holding() {
    let server = Server::start();
    let options = ClientOptions::new().response_timeout(Duration::from_secs(10));
    let client = Client::open_with(server.url(), options).await.unwrap();
    let me = client.owner();
    let old = me
        .lock("k")
        .options(watched(LEASE))
        .acquire()
        .await
        .unwrap();
    let stopped = Instant::now();
    server.stop();
    assert_eq!(
        timeout(2 * LEASE, old.lost()).await,
        Ok(LossReason::Expired)
    );
    // Past any lease the server may have set before it stopped.
    sleep((stopped + 2 * LEASE).saturating_duration_since(Instant::now())).await;
    let lock = me.lock("k").options(watched(LEASE));
    let again = tokio::spawn(async move { lock.acquire().await });
    // Nothing to await on a stopped server: give the acquisition time to be written first.
    sleep(Duration::from_millis(200)).await;
    let late = tokio::spawn(old.release());
    sleep(Duration::from_millis(200)).await;
    server.resume();
    let new = timeout(Duration::from_secs(5), again)
        .await
        .expect("acquired")
        .unwrap()
        .unwrap();
    let released = late.await.unwrap();
    assert!(matches!(released, Err(Error::Lost { .. })), "{released:?}");
    let info = server.info("k").expect("the new holding was freed");
    assert_eq!(
        (info.owner.as_str(), info.token, info.holds),
        (me.id(), new.token(), 1)
    );
    sleep(LEASE).await;
    assert!(!new.is_lost(), "{:?}", new.loss_reason());
    assert_eq!(server.info("k").unwrap().token, new.token());
    assert_eq!(new.release().await.unwrap(), 0);
}

/// Timeouts of a few hundred ms: a stopped server must fail calls within a few of them.
fn quick() -> ClientOptions {
    let ms = Duration::from_millis(300);
    ClientOptions::new()
        .connect_timeout(ms)
        .response_timeout(ms)
        .keepalive(ms)
}

/// Within this, every call against a stopped server must have failed: at most a keepalive
/// interval and three response timeouts (probe, kill, check), with room for a slow machine.
const BOUND: Duration = Duration::from_secs(4);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_without_limit_on_a_stopped_server_fails_in_time() {
    let server = Server::start();
    let client = Client::open_with(server.url(), quick()).await.unwrap();
    server.stop();
    let started = Instant::now();
    let outcome = timeout(3 * BOUND, client.lock("k").acquire()).await;
    let err = outcome.expect("acquire hung").unwrap_err();
    assert!(matches!(err, Error::Unresponsive { .. }), "{err:?}");
    assert!(started.elapsed() < BOUND, "{:?}", started.elapsed());
    eprintln!(
        "acquire on a stopped server failed after {:?}",
        started.elapsed()
    );
    server.resume();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquisition_confirmed_by_replicas_on_a_stopped_server_fails_in_time() {
    let server = Server::start();
    let client = Client::open_with(server.url(), quick()).await.unwrap();
    let confirmed = LockOptions::new().min_replicas(1, Duration::from_millis(100));
    let lock = client.lock("k").options(confirmed);
    server.stop();
    let started = Instant::now();
    let outcome = timeout(3 * BOUND, lock.try_acquire(Duration::from_secs(1))).await;
    let err = outcome.expect("try_acquire hung").unwrap_err();
    assert!(matches!(err, Error::Unresponsive { .. }), "{err:?}");
    assert!(started.elapsed() < BOUND, "{:?}", started.elapsed());
    server.resume();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_server_stops_fails_in_time_and_leaks_nothing() {
    let server = Server::start();
    let client = Client::open_with(server.url(), quick()).await.unwrap();
    server.hold("k", "someone", &[]);
    let lock = client.lock("k");
    let waiter = tokio::spawn(async move { lock.acquire().await });
    assert!(
        eventually(Duration::from_secs(10), || server
            .info("k")
            .unwrap()
            .waiters
            == 1)
        .await
    );
    server.stop();
    let started = Instant::now();
    let outcome = timeout(3 * BOUND, waiter).await.expect("acquire hung");
    let err = outcome.unwrap().unwrap_err();
    assert!(matches!(err, Error::Unresponsive { .. }), "{err:?}");
    assert!(started.elapsed() < BOUND, "{:?}", started.elapsed());
    eprintln!(
        "a waiter on a stopped server failed after {:?}",
        started.elapsed()
    );
    server.resume();
    server.cmd::<u64>(&["LOCK.RELEASE", "k", "someone"]);
    assert!(
        eventually(Duration::from_secs(10), || server.info("k").is_none()).await,
        "the abandoned waiter got the lock: {:?}",
        server.info("k")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_releases_every_hold_and_refuses_new_acquisitions() {
    let server = Server::start();
    let client = server.client().await;
    let me = client.owner();
    let outer = me.lock("tree").acquire().await.unwrap();
    let inner = me.lock("tree").acquire().await.unwrap();
    let other = client
        .lock("other")
        .options(watched(LEASE))
        .acquire()
        .await
        .unwrap();
    assert_eq!(server.info("tree").unwrap().holds, 2);
    client.close().await.unwrap();
    assert_eq!(server.info("tree"), None);
    assert_eq!(server.info("other"), None);
    assert_eq!(other.loss_reason(), Some(LossReason::Closed));
    let releases = server.calls("lock.release");
    for guard in [outer, inner, other] {
        let err = guard.release().await.unwrap_err();
        assert!(
            matches!(
                err,
                Error::Lost {
                    reason: LossReason::Closed,
                    ..
                }
            ),
            "{err:?}"
        );
    }
    assert_eq!(
        server.calls("lock.release"),
        releases,
        "nothing sent after close"
    );
    let refused = client.lock("late").acquire().await.unwrap_err();
    assert!(matches!(refused, Error::Closed), "{refused:?}");
}

/// The shutdown of a `#[tokio::main]`: the runtime ends, then the guards it returned are
/// dropped. Without `close()`, their locks stay until their leases end; with it, they are
/// released before the runtime ends.
#[test]
fn at_shutdown_only_close_releases_at_once() {
    let server = Server::start();
    let main = |close: bool| {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let guard = rt.block_on(async {
            let client = server.client().await;
            let guard = client.lock("main").options(watched(LEASE)).acquire().await;
            if close {
                client.close().await.unwrap();
            }
            guard.unwrap()
        });
        drop(rt);
        drop(guard);
    };
    main(false);
    let info = server.info("main").expect("released without a runtime?");
    assert!(info.ttl > 0 && info.ttl <= 900, "{info:?}");
    let started = Instant::now();
    while server.info("main").is_some() {
        assert!(
            started.elapsed() < 2 * LEASE,
            "the lease did not end the lock"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    main(true);
    assert_eq!(server.info("main"), None, "close() released it");
}

/// A renewal refused with `READONLY` (the node became a replica) is a loss at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_refused_as_readonly_is_a_loss_at_once() {
    let server = Server::start();
    let master = Server::start();
    let client = server.client().await;
    let lock = client.lock("demoted").options(watched(LEASE));
    let guard = lock.acquire().await.unwrap();
    let port = master.port().to_string();
    server.cmd::<String>(&["REPLICAOF", "127.0.0.1", &port]);
    // The next renewal (a third of the lease away) is refused, before the deadline.
    let reason = timeout(2 * LEASE, guard.lost()).await;
    assert_eq!(reason, Ok(LossReason::Demoted));
    assert_eq!(guard.remaining(), Duration::ZERO);
}

/// Connections the server closed behind the client's back (an idle timeout, a restart, an
/// admin's `CLIENT KILL`) are replaced: the acquisition is sent again on a fresh connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquisitions_retry_on_a_fresh_connection_after_the_server_closed_them() {
    let server = Server::start();
    let client = server.client().await;
    server.hold("busy", "someone", &[]);
    let lock = client.lock("busy");
    // One wait, ended at its limit: its wait connection stays open.
    assert!(lock
        .try_acquire(Duration::from_millis(50))
        .await
        .unwrap()
        .is_none());
    let killed: i64 = server.cmd(&["CLIENT", "KILL", "TYPE", "normal"]);
    let subscribed: i64 = server.cmd(&["CLIENT", "KILL", "TYPE", "pubsub"]);
    assert!(
        killed >= 1 && subscribed == 2,
        "the shared connection; the wait and the listening connections: {killed}, {subscribed}"
    );
    let waiter = tokio::spawn(async move { lock.try_acquire(Duration::from_secs(5)).await });
    assert!(
        eventually(Duration::from_secs(10), || server
            .info("busy")
            .unwrap()
            .waiters
            == 1)
        .await
    );
    server.cmd::<u64>(&["LOCK.RELEASE", "busy", "someone"]);
    let guard = waiter.await.unwrap().unwrap().expect("handed over");
    assert_eq!(server.info("busy").unwrap().owner, guard.owner());
    guard.release().await.unwrap();
}

/// A waiter whose node becomes a replica is answered `READONLY`: it queues again (here on
/// the same node once it is a master again) within its wait limit and gets the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_on_a_demoted_node_queues_again_within_its_limit() {
    let node = Server::start_with(&["--rlock.failover-delay", "0"]);
    let other = Server::start();
    let client = node.client().await;
    node.hold("k", "someone", &[]);
    let lock = client.lock("k");
    let waiter = tokio::spawn(async move { lock.try_acquire(Duration::from_secs(10)).await });
    assert!(
        eventually(Duration::from_secs(10), || node.info("k").unwrap().waiters
            == 1)
        .await
    );
    let started = Instant::now();
    node.cmd::<String>(&["REPLICAOF", "127.0.0.1", &other.port().to_string()]);
    assert!(
        eventually(Duration::from_secs(10), || node.errors("READONLY") >= 1).await,
        "the waiter did not try again (answered READONLY)"
    );
    node.cmd::<String>(&["REPLICAOF", "NO", "ONE"]);
    // Whether the full sync from `other` already emptied it or not, the lock is free now.
    node.cmd::<i64>(&["LOCK.FORCERELEASE", "k"]);
    let guard = timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the waiter hung")
        .unwrap()
        .unwrap()
        .expect("queued again and granted");
    assert_eq!(node.info("k").unwrap().owner, guard.owner());
    eprintln!(
        "a demoted waiter got the lock {:?} after the demotion",
        started.elapsed()
    );
    guard.release().await.unwrap();
}

/// With nowhere to queue again, the waiter fails with a typed error within its limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_on_a_node_that_stays_a_replica_fails_with_readonly_in_time() {
    let node = Server::start();
    let other = Server::start();
    let client = node.client().await;
    node.hold("k", "someone", &[]);
    let lock = client.lock("k");
    let limit = Duration::from_secs(2);
    let waiter = tokio::spawn(async move { lock.try_acquire(limit).await });
    assert!(
        eventually(Duration::from_secs(10), || node.info("k").unwrap().waiters
            == 1)
        .await
    );
    let started = Instant::now();
    node.cmd::<String>(&["REPLICAOF", "127.0.0.1", &other.port().to_string()]);
    let outcome = timeout(4 * limit, waiter).await.expect("the waiter hung");
    let err = outcome.unwrap().unwrap_err();
    assert!(
        matches!(&err, Error::ReadOnly { key, .. } if key == "k"),
        "{err:?}"
    );
    assert!(
        started.elapsed() < limit + Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}
