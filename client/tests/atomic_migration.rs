//! Valkey 9's atomic slot migration (`CLUSTER MIGRATESLOTS`) under the client: the slot of
//! holdings renewed by the watchdog (a plain lock; a read hold and semaphore permits) moves
//! whole to another master while a wait of each is queued on the source. The holdings stay
//! the same on the target (owner, token) through several leases, none is lost, their
//! releases go to the target, and the waits, redirected, queue again there and are served.
//!
//! Only Valkey 9 or later migrates slots atomically: on another server (`make test` runs
//! Redis 7.0 and Valkey 8.1) every test here says so and passes. `make test-all` runs them
//! on Valkey 9.1 (`make valkey9`).

mod support;

use std::time::Duration;

use rlock_client::{Client, Guard, Result};
use support::cluster::{atomic_migration, Cluster};
use support::{eventually, watched};
use tokio::task::JoinHandle;
use tokio::time::{sleep, timeout};

/// Short, so that the watchdog renews several times on the target.
const LEASE: Duration = Duration::from_millis(1500);
const SOON: Duration = Duration::from_secs(10);
const SOURCE: usize = 0;
const TARGET: usize = 1;

type Waiting = JoinHandle<Result<Option<Guard>>>;

/// A cluster of three Valkey 9 masters, a holder's and a waiter's client, and a key of
/// the source's.
async fn setup() -> (Cluster, Client, Client, String) {
    let cluster = Cluster::start(3);
    let url = cluster.nodes[SOURCE].url();
    let holder = Client::open(url.as_str()).await.expect("a holder's client");
    let waiter = Client::open(url.as_str()).await.expect("a waiter's client");
    let key = cluster.key_on(SOURCE, "lock:atomic");
    (cluster, holder, waiter, key)
}

/// Moves the slot of `key` to the target after the waits are queued on the source (as
/// `waiters` says), and holds on for three leases. The holder's guards must keep their
/// holdings through the renewals on the target.
async fn migrate_and_hold(
    cluster: &Cluster,
    key: &str,
    guards: &[&Guard],
    waiters: impl Fn(usize) -> u64,
) {
    let queued = eventually(SOON, || waiters(SOURCE) == 1).await;
    assert!(queued, "the waits never queued on the source");
    let renewed_before = cluster.nodes[TARGET].calls("lock.renew")
        + cluster.nodes[TARGET].calls("rwlock.renew")
        + cluster.nodes[TARGET].calls("sem.renew");
    cluster.migrate_atomically(cluster.slot(key), SOURCE, TARGET);
    let requeued = eventually(SOON, || waiters(TARGET) == 1).await;
    assert!(requeued, "the waits did not queue again on the target");

    sleep(3 * LEASE).await;
    let target = &cluster.nodes[TARGET];
    let renewed =
        target.calls("lock.renew") + target.calls("rwlock.renew") + target.calls("sem.renew");
    // About two renewals a lease for each guard.
    let at_least = 4 * guards.len() as u64;
    assert!(
        renewed - renewed_before >= at_least,
        "{} renewals on the target in three leases",
        renewed - renewed_before
    );
    for guard in guards {
        assert!(
            !guard.is_lost(),
            "{}: {:?}",
            guard.key(),
            guard.loss_reason()
        );
        let lost = timeout(Duration::from_millis(20), guard.lost()).await;
        assert!(lost.is_err(), "{}: lost() resolved: {lost:?}", guard.key());
    }
}

/// The wait's guard, once it is served.
async fn served(waiting: Waiting) -> Guard {
    let outcome = timeout(SOON, waiting).await.expect("the wait is served");
    let guard = outcome.expect("the waiting task").expect("the wait");
    guard.expect("granted, not timed out")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_lock_and_its_wait_follow_an_atomic_migration() {
    if !atomic_migration() {
        return;
    }
    support::trace();
    let (cluster, holder, waiter, key) = setup().await;
    let held = holder
        .lock(key.as_str())
        .options(watched(LEASE))
        .acquire()
        .await
        .expect("the lock");
    let lock = waiter.lock(key.as_str()).options(watched(LEASE));
    let waiting: Waiting = tokio::spawn(async move { lock.try_acquire(SOON * 3).await });
    let waiters = |node: usize| {
        let info = cluster.nodes[node].info(&key);
        info.map_or(0, |i| i.waiters as u64)
    };
    migrate_and_hold(&cluster, &key, &[&held], waiters).await;

    let on_target = cluster.nodes[TARGET]
        .info(&key)
        .expect("the lock is on the target");
    assert_eq!(
        (on_target.owner.as_str(), on_target.token),
        (held.owner(), held.token())
    );
    assert!(
        !waiting.is_finished(),
        "the wait ended while the lock was held"
    );
    let token = held.token();
    assert_eq!(held.release().await.expect("the release on the target"), 0);
    let next = served(waiting).await;
    assert!(next.token() > token, "token {} after {token}", next.token());
    let on_target = cluster.nodes[TARGET].info(&key).expect("the waiter holds");
    assert_eq!(on_target.owner, next.owner());
    assert_eq!(next.release().await.expect("the waiter's release"), 0);
    assert_eq!(cluster.nodes[TARGET].info(&key), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_hold_and_permits_and_their_waits_follow_an_atomic_migration() {
    if !atomic_migration() {
        return;
    }
    support::trace();
    let (cluster, holder, waiter, key) = setup().await;
    let (rw, sem) = (format!("{{{key}}}:rw"), format!("{{{key}}}:sem"));
    let read = holder.rw_lock(rw.as_str()).read().options(watched(LEASE));
    let read = read.acquire().await.expect("a read hold");
    let semaphore = holder.semaphore(sem.as_str()).options(watched(LEASE));
    semaphore.set_permits(2).await.expect("SEM.PERMITS");
    let permits = semaphore.acquire(2).await.expect("every permit");
    // A writer waits behind the reader, and one permit behind the two held.
    let write = waiter.rw_lock(rw.as_str()).write().options(watched(LEASE));
    let writing: Waiting = tokio::spawn(async move { write.try_acquire(SOON * 3).await });
    let one = waiter.semaphore(sem.as_str()).options(watched(LEASE));
    let one: Waiting = tokio::spawn(async move { one.try_acquire(1, SOON * 3).await });
    let waiters = |node: usize| {
        let count = |command: &str, name: &str| -> u64 {
            let info: Option<Vec<redis::Value>> = cluster.nodes[node].cmd(&[command, name]);
            let info = info.unwrap_or_default();
            // `waiters`, a field name, then its count.
            let at = info
                .iter()
                .position(|v| *v == redis::Value::BulkString(b"waiters".to_vec()));
            at.and_then(|i| redis::from_redis_value(info.get(i + 1)?.clone()).ok())
                .unwrap_or(0)
        };
        count("RWLOCK.INFO", &rw).min(count("SEM.INFO", &sem))
    };
    migrate_and_hold(&cluster, &key, &[&read, &permits], waiters).await;

    let info = holder
        .rw_lock(rw.as_str())
        .info()
        .await
        .expect("RWLOCK.INFO");
    let reader = info.as_ref().and_then(|i| i.holder(read.owner()));
    assert_eq!(reader.map(|h| (h.reads, h.token)), Some((1, read.token())));
    let info = holder
        .semaphore(sem.as_str())
        .info()
        .await
        .expect("SEM.INFO");
    let holding = info.as_ref().and_then(|i| i.holder(permits.owner()));
    assert_eq!(
        holding.map(|h| (h.permits, h.token)),
        Some((2, permits.token()))
    );
    for name in [&rw, &sem] {
        let there: u64 = cluster.nodes[TARGET].cmd(&["EXISTS", name]);
        assert_eq!(there, 1, "{name} is not on the target");
    }
    assert!(
        !writing.is_finished() && !one.is_finished(),
        "a wait ended early"
    );

    assert_eq!(read.release().await.expect("the reader's release"), 0);
    let writer = served(writing).await;
    assert_eq!(permits.release().await.expect("the permits' release"), 0);
    let permit = served(one).await;
    assert_eq!(writer.release().await.expect("the writer's release"), 0);
    assert_eq!(permit.release().await.expect("the permit's release"), 0);
}
