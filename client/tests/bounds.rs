//! The documented bounds against a server that stopped answering (`SIGSTOP`): an
//! acquisition fails with `Error::Unresponsive` within `min(wait + wait_grace, keepalive)`
//! + 2 × `response_timeout` of the stop, and `Client::open` within `connect_timeout`.

mod support;

use std::time::{Duration, Instant};

use rlock_client::{Client, ClientOptions, Error};
use support::{eventually, Server};
use tokio::time::timeout;

/// What a loaded machine may add to a bound.
const SLACK: Duration = Duration::from_secs(1);

fn options(response: Duration, keepalive: Duration) -> ClientOptions {
    ClientOptions::new()
        .connect_timeout(Duration::from_secs(2))
        .response_timeout(response)
        .keepalive(keepalive)
        .wait_grace(Duration::from_secs(1))
}

/// Starts `acquire` on a lock another client holds, and stops the server once it waits;
/// returns how long after the stop it failed, and the error.
async fn stopped_while_waiting(
    server: &Server,
    client: Client,
    wait: Option<Duration>,
) -> (Duration, Error) {
    let _held = server.client().await.lock("k").acquire().await.unwrap();
    let waiter = tokio::spawn(async move {
        match wait {
            Some(wait) => client.lock("k").try_acquire(wait).await.map(drop),
            None => client.lock("k").acquire().await.map(drop),
        }
    });
    let queued = || server.info("k").is_some_and(|i| i.waiters == 1);
    assert!(eventually(Duration::from_secs(10), queued).await);
    server.stop();
    let stopped = Instant::now();
    let failed = timeout(Duration::from_secs(30), waiter)
        .await
        .expect("hung");
    let err = failed.unwrap().unwrap_err();
    let took = stopped.elapsed();
    server.resume();
    (took, err)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_acquire_on_a_stopped_server_fails_within_keepalive_and_two_replies() {
    let server = Server::start();
    let (response, keepalive) = (Duration::from_millis(1500), Duration::from_secs(2));
    let client = Client::open_with(server.url(), options(response, keepalive)).await;
    let (took, err) = stopped_while_waiting(&server, client.unwrap(), None).await;
    assert!(matches!(err, Error::Unresponsive { .. }), "{err:?}");
    let bound = keepalive + 2 * response;
    eprintln!("a queued acquire() failed {took:?} after the stop (bound {bound:?})");
    assert!(took <= bound + SLACK, "{took:?} > {bound:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_acquire_on_a_stopped_server_fails_within_its_wait_grace_and_two_replies() {
    let server = Server::start();
    let (response, keepalive) = (Duration::from_secs(2), Duration::from_secs(5));
    let client = Client::open_with(server.url(), options(response, keepalive)).await;
    let wait = Duration::from_secs(1);
    let (took, err) = stopped_while_waiting(&server, client.unwrap(), Some(wait)).await;
    assert!(matches!(err, Error::Unresponsive { .. }), "{err:?}");
    let bound = (wait + Duration::from_secs(1)).min(keepalive) + 2 * response;
    eprintln!("try_acquire(1s) failed {took:?} after the stop (bound {bound:?})");
    assert!(took <= bound + SLACK, "{took:?} > {bound:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_a_client_on_a_stopped_server_fails_within_the_connect_timeout() {
    let server = Server::start();
    server.stop();
    let started = Instant::now();
    let opened = Client::open_with(
        server.url(),
        options(Duration::from_secs(2), Duration::from_secs(5)),
    )
    .await;
    let took = started.elapsed();
    server.resume();
    let err = opened.unwrap_err();
    assert!(matches!(err, Error::Unresponsive { .. }), "{err:?}");
    eprintln!("Client::open failed after {took:?} (connect timeout 2 s)");
    assert!(took <= Duration::from_secs(2) + SLACK, "{took:?}");
}
