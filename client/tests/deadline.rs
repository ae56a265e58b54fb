//! The safe deadline: a guard never believes it holds a lock whose lease may have ended.
//! `lost()` resolves by the deadline (last renewal's send + lease - margin) when the server
//! dies or stops, and `is_lost()` is true the moment a blocked runtime looks again.

mod support;

use std::time::{Duration, Instant};

use rlock_client::{Client, ClientOptions, EndCause, Error, Guard, LossReason};
use support::{eventually, watched, Server};
use tokio::time::{sleep, timeout};

const LEASE: Duration = Duration::from_millis(900);
/// A force release: the server announces it.
const FORCED: LossReason = LossReason::Ended(EndCause::ForceReleased);
/// The client's margin in these tests; with 1% drift, 109 ms of the lease are not counted on.
const MARGIN: Duration = Duration::from_millis(100);
const NOT_COUNTED: Duration = Duration::from_millis(109);

async fn client(server: &Server) -> Client {
    let options = ClientOptions::new().margin(MARGIN);
    Client::open_with(server.url(), options).await.unwrap()
}

/// A guard on `key` with a watched 900 ms lease, held through a few renewals.
async fn renewed_guard(client: &Client, key: &str) -> Guard {
    let guard = client
        .lock(key)
        .options(watched(LEASE))
        .acquire()
        .await
        .unwrap();
    let renewed = eventually(Duration::from_secs(10), || {
        client.watchdog_stats().renewals >= 2
    });
    assert!(renewed.await, "not renewed");
    assert!(!guard.is_lost());
    guard
}

/// Awaits the loss of `guard`, cut off at `cut` (the moment the server went away); checks
/// that it came by the safe deadline (no later than `cut + lease - margin`: the last
/// renewal that counted was sent before the cut), before the server's lease could end, and
/// says how early.
async fn assert_lost_in_time(guard: &Guard, cut: Instant, what: &str) {
    let reason = timeout(2 * LEASE, guard.lost())
        .await
        .expect("loss not seen");
    let seen = Instant::now();
    assert_eq!(reason, LossReason::Expired);
    assert!(guard.is_lost());
    // Read after the loss: a renewal answered after the cut may have moved it.
    let deadline = guard.valid_until();
    assert!(
        deadline <= cut + LEASE - NOT_COUNTED,
        "{what}: the deadline counts from a send after the cut"
    );
    let lease_end = deadline + NOT_COUNTED;
    assert!(
        seen < lease_end,
        "{what}: lost() resolved {:?} after the last renewal's lease could end",
        seen - lease_end
    );
    eprintln!(
        "{what}: lost() resolved {:?} after the safe deadline, {:?} before the last renewal's \
         lease could end ({:?} after the cut)",
        seen.saturating_duration_since(deadline),
        lease_end - seen,
        seen - cut,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_makes_lost_resolve_by_the_safe_deadline() {
    let mut server = Server::start();
    let client = client(&server).await;
    let guard = renewed_guard(&client, "killed").await;
    server.kill();
    assert_lost_in_time(&guard, Instant::now(), "kill -9").await;
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
async fn a_stopped_server_makes_lost_resolve_by_the_safe_deadline() {
    let server = Server::start();
    let client = client(&server).await;
    let guard = renewed_guard(&client, "stopped").await;
    server.stop();
    assert_lost_in_time(&guard, Instant::now(), "SIGSTOP").await;
    assert_eq!(guard.remaining(), Duration::ZERO);
    let signal = guard.lost_signal();
    assert!(signal.is_lost());
    server.resume();
    // The server now runs the renewals that waited in its socket, and may keep the lock a
    // while longer: the guard stays lost all the same. Its release (by token) frees it.
    sleep(LEASE / 2).await;
    assert_eq!(guard.loss_reason(), Some(LossReason::Expired));
    let err = guard.release().await.unwrap_err();
    assert!(matches!(err, Error::Lost { .. }), "{err:?}");
    assert_eq!(server.info("stopped"), None);
}

/// The application's own runtime (one thread: the test's) is blocked longer than the lease:
/// neither the watchdog nor any timer runs. The first look afterwards sees the loss.
#[tokio::test(flavor = "current_thread")]
async fn a_runtime_blocked_past_the_lease_sees_the_loss_at_its_first_look() {
    let server = Server::start();
    let client = client(&server).await;
    let guard = renewed_guard(&client, "blocked").await;
    let signal = guard.lost_signal();
    let deadline = guard.valid_until();
    let blocked = Instant::now();
    std::thread::sleep(LEASE + LEASE / 2);
    assert!(guard.is_lost(), "is_lost() reads the clock");
    assert!(signal.is_lost());
    let now = timeout(Duration::ZERO, guard.lost()).await;
    assert_eq!(
        now,
        Ok(LossReason::Expired),
        "lost() resolves at its first poll"
    );
    assert!(deadline < blocked + LEASE);
    // The watchdog runs again: a late renewal must not revive the guard.
    sleep(LEASE / 2).await;
    assert!(guard.is_lost());
    assert_eq!(server.info("blocked"), None, "the server's lease ran out");
    let err = guard.release().await.unwrap_err();
    assert!(matches!(err, Error::Lost { .. }), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_move_valid_until_and_remaining_stays_within_the_lease() {
    let server = Server::start();
    let client = client(&server).await;
    let guard = client
        .lock("valid")
        .options(watched(LEASE))
        .acquire()
        .await
        .unwrap();
    let first = guard.valid_until();
    assert!(guard.remaining() <= LEASE - NOT_COUNTED);
    assert!(guard.remaining() > Duration::ZERO);
    sleep(LEASE).await;
    assert!(guard.valid_until() > first, "renewals move the deadline");
    assert!(guard.remaining() <= LEASE - NOT_COUNTED);
    let remaining = guard.remaining();
    let ttl = server.info("valid").unwrap().ttl;
    assert!(
        Duration::from_millis(ttl as u64) + Duration::from_millis(5) >= remaining,
        "the client counts on more than the server keeps: ttl {ttl} ms, remaining {remaining:?}"
    );
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_lock_cancels_the_work_when_the_lock_is_lost() {
    let server = Server::start();
    let client = client(&server).await;
    let lock = client.lock("work").options(watched(LEASE));
    let (started, mut running) = tokio::sync::mpsc::channel::<u64>(1);
    let admin = client.clone();
    let forced = tokio::spawn(async move {
        let token = running.recv().await.expect("the work started");
        assert!(admin.force_release("work").await.unwrap());
        // The channel closes when the work is dropped.
        let dropped = timeout(2 * LEASE, running.recv()).await;
        (token, dropped)
    });
    let outcome = lock
        .with_lock(|held| async move {
            started.send(held.token()).await.unwrap();
            std::future::pending::<()>().await
        })
        .await;
    let err = outcome.unwrap_err();
    assert!(
        matches!(&err, Error::Lost { key, reason: FORCED } if key == "work"),
        "{err:?}"
    );
    let (token, dropped) = forced.await.unwrap();
    assert!(token > 0);
    assert_eq!(dropped, Ok(None), "the work was dropped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_lock_returns_the_value_and_releases() {
    let server = Server::start();
    let client = client(&server).await;
    let lock = client.lock("value");
    let info = server.info("value");
    assert_eq!(info, None);
    let (token, held) = lock
        .with_lock(|held| async move { (held.token(), held.is_lost()) })
        .await
        .unwrap();
    assert!(token > 0);
    assert!(!held);
    assert_eq!(server.info("value"), None, "released after the work");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_signal_moved_into_a_task_fires_on_force_release() {
    let server = Server::start();
    let client = client(&server).await;
    let guard = client
        .lock("moved")
        .options(watched(LEASE))
        .acquire()
        .await
        .unwrap();
    let signal = guard.lost_signal();
    let task = tokio::spawn(async move { signal.lost().await });
    assert!(client.force_release("moved").await.unwrap());
    let reason = timeout(2 * LEASE, task)
        .await
        .expect("not signalled")
        .unwrap();
    assert_eq!(reason, FORCED);
    assert!(guard.is_lost());
}
