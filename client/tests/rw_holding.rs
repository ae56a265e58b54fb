//! Holding a read-write lock: the watchdog renews read and write holds with the plain
//! locks, a removed holding is lost, a dropped acquisition leaks nothing, fenced writes
//! are the writer's, and the blocking API.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rlock_client::blocking::BlockingClient;
use rlock_client::{Client, Error, LockOptions, LossReason};
use support::{eventually, watched, Server};
use tokio::time::{sleep, timeout};

const NOW: Duration = Duration::ZERO;
/// A lease short beside the seconds it is kept, long enough for a loaded machine.
const LEASE: Duration = Duration::from_millis(1000);

async fn free(client: &Client, key: &str) -> bool {
    client.rw_lock(key).info().await.unwrap().is_none()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_renews_read_and_write_guards_past_their_lease_with_the_plain_locks() {
    let server = Server::start();
    let client = server.client().await;
    let options = watched(LEASE);
    let read = client.owner().rw_lock("r").read().options(options);
    let read = read.acquire().await.unwrap();
    let write = client.owner().rw_lock("w").write().options(options);
    let write = write.acquire().await.unwrap();
    let plain = client.lock("p").options(options).acquire().await.unwrap();
    assert!(read.has_watchdog() && write.has_watchdog());
    let before = client.watchdog_stats();
    sleep(4 * LEASE).await;
    for guard in [&read, &write, &plain] {
        assert!(
            !guard.is_lost(),
            "{} lost: {:?}",
            guard.key(),
            guard.loss_reason()
        );
    }
    for key in ["r", "w"] {
        let info = client
            .rw_lock(key)
            .info()
            .await
            .unwrap()
            .expect("still held");
        let ttl = info.holders[0].ttl.expect("a lease");
        assert!(ttl <= LEASE, "{key}: {ttl:?}");
    }
    assert!(server.calls("rwlock.renew") > 0);
    let stats = client.watchdog_stats();
    let rounds = stats.rounds - before.rounds;
    assert!(rounds > 0);
    assert_eq!(
        stats.round_trips - before.round_trips,
        rounds,
        "one pipeline per round"
    );
    assert_eq!(read.release().await.unwrap(), 0);
    assert_eq!(write.release().await.unwrap(), 0);
    plain.release().await.unwrap();
    assert!(free(&client, "r").await && free(&client, "w").await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_force_released_holding_is_lost_for_readers_and_the_writer() {
    let server = Server::start();
    let client = server.client().await;
    let options = watched(LEASE);
    let reader = client.owner().rw_lock("gone").read().options(options);
    let read = reader.acquire().await.unwrap();
    let write = client.owner().rw_lock("gone2").write().options(options);
    let write = write.acquire().await.unwrap();
    assert!(client.rw_lock("gone").force_release().await.unwrap());
    let removed: i64 = server.cmd(&["RWLOCK.FORCERELEASE", "gone2"]);
    assert_eq!(removed, 1);
    for guard in [&read, &write] {
        let reason = timeout(Duration::from_secs(5), guard.lost()).await;
        let forced = LossReason::Ended(rlock_client::EndCause::ForceReleased);
        assert_eq!(reason, Ok(forced), "{}", guard.key());
    }
    assert!(matches!(read.release().await, Err(Error::Lost { .. })));
    assert!(matches!(write.release().await, Err(Error::Lost { .. })));
    assert!(!client.rw_lock("gone").force_release().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_acquisition_leaves_no_holding_and_no_ticket() {
    let server = Server::start();
    let client = server.client().await;
    let writer = client
        .owner()
        .rw_lock("drop")
        .write()
        .acquire()
        .await
        .unwrap();
    for side in ["read", "write"] {
        let rw = client.owner().rw_lock("drop");
        let lock = if side == "read" {
            rw.read()
        } else {
            rw.write()
        };
        let waited = timeout(Duration::from_millis(100), lock.acquire()).await;
        assert!(waited.is_err(), "{side}: the lock was busy");
    }
    // The only integer at the top of `RWLOCK.INFO` is `waiters`.
    let no_waiter = || {
        let info: Vec<redis::Value> = server.cmd(&["RWLOCK.INFO", "drop"]);
        info.iter().any(|v| *v == redis::Value::Int(0))
    };
    let rw = client.rw_lock("drop");
    let empty = eventually(Duration::from_secs(10), no_waiter).await;
    assert!(empty, "waiters left: {:?}", rw.info().await);
    assert_eq!(rw.info().await.unwrap().unwrap().waiters, 0);
    writer.release().await.unwrap();
    assert!(free(&client, "drop").await, "a cancelled wait got the lock");
}

/// Cancels acquisitions at moments spread around the grant, while the holder releases:
/// whatever crosses, nothing is held at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquisitions_cancelled_around_their_grant_leak_nothing() {
    let server = Server::start();
    let client = server.client().await;
    for round in 0..40u64 {
        let holder = client
            .owner()
            .rw_lock("race")
            .write()
            .acquire()
            .await
            .unwrap();
        let rw = client.owner().rw_lock("race");
        let lock = if round % 2 == 0 {
            rw.read()
        } else {
            rw.write()
        };
        let wait = Duration::from_micros(500 * (round % 10));
        let waiter = tokio::spawn(async move { timeout(wait, lock.acquire()).await });
        sleep(Duration::from_micros(250 * (round % 7))).await;
        holder.release().await.unwrap();
        if let Ok(Ok(guard)) = waiter.await.unwrap() {
            guard.release().await.unwrap();
        }
    }
    let done = eventually(Duration::from_secs(10), || {
        server
            .cmd::<Option<redis::Value>>(&["RWLOCK.INFO", "race"])
            .is_none()
    })
    .await;
    assert!(
        done,
        "left behind: {:?}",
        client.rw_lock("race").info().await
    );
}

/// Acquisitions that must be confirmed by replicas wait with a blocking `RWLOCK.ACQUIRE ...
/// WAIT` on a connection of their own: granted, or dropped (the connection killed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_waits_take_read_write_holds_and_a_dropped_one_leaves_nothing() {
    let server = Server::start();
    let client = server.client().await;
    let confirmed = LockOptions::new().min_replicas(1, Duration::from_millis(100));
    let writer = client
        .owner()
        .rw_lock("blk")
        .write()
        .acquire()
        .await
        .unwrap();
    let reader = client.owner().rw_lock("blk").read().options(confirmed);
    let waiting = reader.clone();
    let waiting = tokio::spawn(async move { waiting.acquire().await });
    let blocked = || {
        server
            .cmd::<String>(&["CLIENT", "LIST"])
            .contains("flags=b")
    };
    assert!(
        eventually(Duration::from_secs(10), blocked).await,
        "no blocking wait"
    );
    writer.release().await.unwrap();
    // Granted, then no replica confirms it (there is none): released, and said so.
    let got = timeout(Duration::from_secs(10), waiting)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(got, Err(Error::NotReplicated { .. })), "{got:?}");
    assert!(eventually(Duration::from_secs(10), || !blocked()).await);
    assert!(
        free(&client, "blk").await,
        "the unconfirmed read hold was released"
    );
    // A dropped blocking wait: its connection is killed, nothing is queued or held.
    let writer = client
        .owner()
        .rw_lock("blk")
        .write()
        .acquire()
        .await
        .unwrap();
    let dropped = timeout(Duration::from_millis(300), reader.acquire()).await;
    assert!(dropped.is_err(), "the lock was busy");
    assert!(eventually(Duration::from_secs(10), || !blocked()).await);
    let info = client.rw_lock("blk").info().await.unwrap().unwrap();
    assert_eq!((info.holders.len(), info.waiters), (1, 0), "{info:?}");
    writer.release().await.unwrap();
    assert!(free(&client, "blk").await);
    assert_eq!(server.calls("rwlock.wait"), 0, "no ticket was used");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_writes_are_the_writers_and_a_readers_is_refused_without_a_loss() {
    let server = Server::start();
    let client = server.client().await;
    let mut hset = redis::cmd("HSET");
    hset.arg("data").arg("f").arg("v");
    let owner = client.owner();
    let write = owner.rw_lock("fence").write().acquire().await.unwrap();
    let added: i64 = write.fenced(&hset).await.unwrap();
    assert_eq!(added, 1);
    write.release().await.unwrap();
    let read = owner.rw_lock("fence").read().acquire().await.unwrap();
    let refused = read.fenced::<i64>(&hset).await;
    assert!(matches!(refused, Err(Error::NotHeld { .. })), "{refused:?}");
    assert!(!read.is_lost(), "a refused reader's write is no loss");
    read.release().await.unwrap();
}

#[test]
fn the_blocking_api_shares_reads_between_threads_and_excludes_a_writer() {
    let server = Server::start();
    let client = Arc::new(BlockingClient::open(server.url()).unwrap());
    let rw = client.rw_lock("blocking");
    let read = rw.read().acquire().unwrap();
    let again = rw.read().acquire().unwrap();
    assert_eq!(again.token(), read.token(), "reentrant per thread");
    let other = client.clone();
    let (shared, writes) = std::thread::spawn(move || {
        let rw = other.rw_lock("blocking");
        let shared = rw.read().try_acquire(NOW).unwrap().is_some();
        (shared, rw.write().try_acquire(NOW).unwrap().is_some())
    })
    .join()
    .unwrap();
    assert!(shared, "another thread reads too");
    assert!(!writes, "a writer waits for the readers");
    let refused = rw.write().try_acquire(NOW);
    assert!(matches!(refused, Err(Error::Upgrade { .. })), "{refused:?}");
    assert_eq!(again.release().unwrap(), 1);
    assert_eq!(read.release().unwrap(), 0);
    let started = Instant::now();
    let write = rw.write().try_acquire(Duration::from_secs(5)).unwrap();
    assert!(write.is_some(), "free after {:?}", started.elapsed());
    let info = rw.info().unwrap().unwrap();
    assert_eq!(info.holders[0].writes, 1);
    drop(write);
    assert_eq!(
        rw.info().unwrap(),
        None,
        "a dropped blocking guard releases at once"
    );
}
