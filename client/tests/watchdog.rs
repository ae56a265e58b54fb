//! The watchdog: renewal, loss detection, explicit leases, and pipelined rounds at scale.

mod support;

use std::time::{Duration, Instant};

use rlock_client::{Client, Error, Guard, LockOptions, LossReason, WatchdogStats};
use support::{eventually, watched, Server};
use tokio::task::JoinSet;
use tokio::time::{sleep, timeout};

const LEASE: Duration = Duration::from_millis(300);
const INTERVAL: Duration = Duration::from_millis(100);
const MARGIN: Duration = Duration::from_millis(400);

/// A server, a client of it, and a guard on `key` whose `LEASE` the watchdog renews.
async fn watched_guard(key: &str) -> (Server, Client, Guard) {
    let server = Server::start();
    let client = server.client().await;
    let lock = client.lock(key).options(watched(LEASE));
    let guard = lock.acquire().await.unwrap();
    (server, client, guard)
}

/// A lease short beside the seconds it is kept, long enough that a watchdog held up a few
/// hundred ms on a loaded machine still renews it in time (it renews every third of it).
const KEPT_LEASE: Duration = Duration::from_millis(1000);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchdog_keeps_a_short_lease_for_seconds_and_stops_at_release() {
    let server = Server::start();
    let client = server.client().await;
    let lock = client.lock("kept").options(watched(KEPT_LEASE));
    let guard = lock.acquire().await.unwrap();
    assert!(guard.has_watchdog());
    let renews_before = server.calls("lock.renew");
    let started = Instant::now();
    let mut highest_late_ttl = 0;
    let lease_ms = KEPT_LEASE.as_millis() as i64;
    while started.elapsed() < 4 * KEPT_LEASE {
        let info = server
            .info("kept")
            .expect("the watchdog must keep the lock");
        assert_eq!(info.owner, guard.owner());
        assert!(info.ttl > 0 && info.ttl <= lease_ms, "{info:?}");
        if started.elapsed() > 2 * KEPT_LEASE {
            highest_late_ttl = highest_late_ttl.max(info.ttl);
        }
        sleep(Duration::from_millis(50)).await;
    }
    assert!(
        highest_late_ttl > lease_ms / 2,
        "TTL not refreshed: {highest_late_ttl}"
    );
    // Kept four leases: renewed; how often depends on the machine's speed.
    let renewed = server.calls("lock.renew") - renews_before;
    eprintln!("{renewed} renewals in {:?}", 4 * KEPT_LEASE);
    assert!(!guard.is_lost());
    assert_eq!(guard.release().await.unwrap(), 0);
    let renews_at_release = server.calls("lock.renew");
    sleep(Duration::from_secs(1)).await;
    assert_eq!(
        server.calls("lock.renew"),
        renews_at_release,
        "renewal outlived release"
    );
    assert_eq!(server.info("kept"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_end_the_server_does_not_announce_makes_lost_resolve_within_a_renewal_interval() {
    let (server, client, guard) = watched_guard("forced").await;
    sleep(Duration::from_millis(250)).await;
    assert!(!guard.is_lost());
    // A field taken out of the lock's hash is not announced: the next renewal finds it.
    assert_eq!(server.cmd::<i64>(&["HDEL", "forced", guard.owner()]), 1);
    let reason = timeout(INTERVAL + MARGIN, guard.lost())
        .await
        .expect("loss not noticed");
    assert_eq!(reason, LossReason::NotHeld);
    assert!(guard.is_lost());
    assert_eq!(guard.loss_reason(), Some(LossReason::NotHeld));
    let err = guard.release().await.unwrap_err();
    assert!(
        matches!(&err, Error::Lost { key, reason: LossReason::NotHeld } if key == "forced"),
        "{err:?}"
    );
    assert!(client.watchdog_stats().losses >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_makes_lost_resolve_once_the_lease_runs_out() {
    let (mut server, _client, guard) = watched_guard("gone").await;
    sleep(Duration::from_millis(200)).await;
    server.kill();
    let killed = Instant::now();
    let reason = timeout(LEASE + INTERVAL + MARGIN, guard.lost())
        .await
        .expect("loss not noticed");
    assert_eq!(reason, LossReason::Expired);
    assert!(killed.elapsed() <= LEASE + INTERVAL + MARGIN);
    let err = guard.release().await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Lost {
                reason: LossReason::Expired,
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_lease_is_not_renewed_and_expires_on_time() {
    let server = Server::start();
    let client = server.client().await;
    let fixed = LockOptions::new().lease(LEASE);
    let renews_before = server.calls("lock.renew");
    let granted = Instant::now();
    let guard = client.lock("fixed").options(fixed).acquire().await.unwrap();
    assert!(!guard.has_watchdog());
    sleep(Duration::from_millis(100)).await;
    // The lease began after `granted`: a look that ended before `granted + LEASE` sees it.
    let there = server.info("fixed").is_some();
    assert!(there || granted.elapsed() >= LEASE, "expired too early");
    assert!(eventually(LEASE + MARGIN, || server.info("fixed").is_none()).await);
    assert!(
        granted.elapsed() >= Duration::from_millis(250),
        "{:?}",
        granted.elapsed()
    );
    let reason = timeout(MARGIN, guard.lost())
        .await
        .expect("end of lease not reported");
    assert_eq!(reason, LossReason::Expired);
    assert_eq!(
        server.calls("lock.renew"),
        renews_before,
        "an explicit lease was renewed"
    );
    let err = guard.release().await.unwrap_err();
    assert!(matches!(err, Error::Lost { .. }), "{err:?}");
}

/// Waits for the next round to finish; returns the stats and the server's `LOCK.RENEW` calls
/// read right after it (the next round is a renewal period away).
async fn after_next_round(client: &Client, server: &Server) -> (WatchdogStats, u64) {
    let rounds = client.watchdog_stats().rounds;
    let started = Instant::now();
    while client.watchdog_stats().rounds == rounds {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "no renewal round"
        );
        sleep(Duration::from_millis(5)).await;
    }
    (client.watchdog_stats(), server.calls("lock.renew"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: make test-all"]
async fn ten_thousand_locks_renew_in_one_pipelined_round_trip_per_round() {
    const LOCKS: usize = 10_000;
    let server = Server::start();
    let client = server.client().await;
    let lease = Duration::from_secs(3);
    let mut tasks = JoinSet::new();
    for part in 0..20 {
        let client = client.clone();
        tasks.spawn(async move {
            let mut guards = Vec::new();
            for i in (part..LOCKS).step_by(20) {
                let lock = client.lock(format!("many:{i}")).options(watched(lease));
                guards.push(lock.acquire().await.unwrap());
            }
            guards
        });
    }
    let acquiring = Instant::now();
    let mut guards = Vec::new();
    while let Some(part) = tasks.join_next().await {
        guards.extend(part.unwrap());
    }
    assert_eq!(guards.len(), LOCKS);
    eprintln!("{LOCKS} locks acquired in {:?}", acquiring.elapsed());
    // The first rounds may split the locks by acquisition time; they then run together.
    sleep(Duration::from_millis(2500)).await;
    let (first, calls_first) = after_next_round(&client, &server).await;
    let (mut last, mut calls_last) = (first.clone(), calls_first);
    for _ in 0..2 {
        (last, calls_last) = after_next_round(&client, &server).await;
    }
    let rounds = last.rounds - first.rounds;
    assert_eq!(rounds, 2);
    assert_eq!(
        last.round_trips - first.round_trips,
        rounds,
        "one round trip per round"
    );
    assert_eq!(last.renewals - first.renewals, rounds * LOCKS as u64);
    assert_eq!(
        calls_last - calls_first,
        rounds * LOCKS as u64,
        "server saw other renewals"
    );
    assert_eq!(last.failed_rounds, 0);
    assert!(
        last.last_round < Duration::from_millis(500),
        "round took {:?}",
        last.last_round
    );
    assert_eq!(last.holdings, LOCKS);
    assert!(guards.iter().all(|g| !g.is_lost()));
    eprintln!(
        "{LOCKS} locks: {rounds} rounds, last round trip {:?}",
        last.last_round
    );
    drop(guards);
    assert!(
        eventually(Duration::from_secs(10), || client.watchdog_stats().holdings
            == 0)
        .await
    );
    let emptied = eventually(Duration::from_secs(10), || {
        server.cmd::<i64>(&["DBSIZE"]) == 0
    });
    assert!(
        emptied.await,
        "{} keys left",
        server.cmd::<i64>(&["DBSIZE"])
    );
}
