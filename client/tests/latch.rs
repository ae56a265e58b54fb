//! Countdown latches (`Client::latch`): counted down across tasks, waited on with and
//! without a limit, a dropped wait leaving nothing queued, and the blocking API.

mod support;

use std::time::Duration;

use rlock_client::blocking::BlockingClient;
use rlock_client::Client;
use support::{eventually, poll, Server};
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(10);

/// The waits queued on the server (`INFO rlock`).
fn waiters(server: &Server) -> i64 {
    let info: String = server.cmd(&["INFO", "rlock"]);
    info.lines()
        .find_map(|l| l.strip_prefix("rlock_waiters:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(-1)
}

async fn queued(server: &Server, n: i64) {
    let reached = eventually(LIMIT, || waiters(server) == n).await;
    assert!(reached, "{} waits queued, not {n}", waiters(server));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_wait_until_other_tasks_count_the_latch_down() {
    let server = Server::start();
    let client = server.client().await;
    let latch = client.latch("jobs");
    assert!(latch.set(3).await.unwrap());
    assert!(!latch.set(5).await.unwrap(), "a count is set only once");
    assert_eq!(latch.count().await.unwrap(), 3);
    let waits: Vec<_> = (0..3)
        .map(|_| {
            let latch = client.latch("jobs");
            tokio::spawn(async move { latch.wait().await })
        })
        .collect();
    queued(&server, 3).await;
    for left in [2, 1] {
        assert_eq!(latch.count_down().await.unwrap(), left);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(waits.iter().all(|w| !w.is_finished()), "opened too early");
    let last = client.latch("jobs");
    let counted = tokio::spawn(async move { last.count_down().await });
    assert_eq!(counted.await.unwrap().unwrap(), 0);
    for wait in waits {
        timeout(LIMIT, wait).await.unwrap().unwrap().unwrap();
    }
    assert_eq!(latch.count().await.unwrap(), 0);
    assert_eq!(waiters(&server), 0);
    // An open latch answers at once.
    assert!(latch.wait_for(Duration::ZERO).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_for_that_runs_out_answers_false_and_leaves() {
    let server = Server::start();
    let client = server.client().await;
    let latch = client.latch("slow");
    latch.set(1).await.unwrap();
    let waited = latch.wait_for(Duration::from_millis(100)).await.unwrap();
    assert!(!waited, "the latch is still closed");
    assert_eq!(waiters(&server), 0);
    assert_eq!(latch.count_down().await.unwrap(), 0);
    assert!(latch.wait_for(Duration::from_millis(100)).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_wait_leaves_no_ticket() {
    let server = Server::start();
    let client = server.client().await;
    let latch = client.latch("dropped");
    latch.set(1).await.unwrap();
    for _ in 0..3 {
        let gave_up = timeout(Duration::from_millis(200), latch.wait()).await;
        assert!(gave_up.is_err(), "the latch is closed");
        queued(&server, 0).await;
    }
    // Waits dropped at any point, their tickets on their way among them.
    for i in 0..200 {
        let within = Duration::from_micros(i * 10);
        assert!(timeout(within, latch.wait()).await.is_err());
    }
    queued(&server, 0).await;
    // The client waits as before after that.
    let again = client.latch("dropped");
    let wait = tokio::spawn(async move { again.wait_for(LIMIT).await });
    queued(&server, 1).await;
    latch.count_down().await.unwrap();
    assert!(timeout(LIMIT, wait).await.unwrap().unwrap().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_without_tickets_is_waited_on_with_latch_await() {
    let server = Server::start();
    // No SUBSCRIBE: no wait connection, so waits block on connections of their own.
    let rules = ["on", ">pw", "~*", "&*", "+@all", "-subscribe"];
    let args = [&["ACL", "SETUSER", "waiter"][..], &rules[..]].concat();
    assert_eq!(server.cmd::<String>(&args), "OK");
    let url = format!("redis://waiter:pw@127.0.0.1:{}/", server.port());
    let client = Client::open(url).await.unwrap();
    let latch = client.latch("blocking");
    latch.set(1).await.unwrap();
    let blocked = || {
        server
            .cmd::<String>(&["CLIENT", "LIST"])
            .contains("cmd=latch.await")
    };
    // A dropped blocking wait: its connection is killed, nothing stays queued.
    let dropped = timeout(Duration::from_millis(300), latch.wait()).await;
    assert!(dropped.is_err(), "the latch is closed");
    queued(&server, 0).await;
    assert!(!latch.wait_for(Duration::from_millis(50)).await.unwrap());
    let again = client.latch("blocking");
    let wait = tokio::spawn(async move { again.wait().await });
    assert!(eventually(LIMIT, || blocked() && waiters(&server) == 1).await);
    assert_eq!(latch.count_down().await.unwrap(), 0);
    timeout(LIMIT, wait).await.unwrap().unwrap().unwrap();
    assert_eq!(server.calls("latch.wait"), 0, "no ticket was used");
    // The wait that timed out and the one released at zero (the dropped one, whose
    // connection was killed while it blocked, is counted by Redis and not by Valkey).
    assert!(server.calls("latch.await") >= 2);
}

#[test]
fn the_blocking_api_waits_on_a_thread() {
    let server = Server::start();
    let client = BlockingClient::open(server.url()).unwrap();
    let latch = client.latch("threads");
    assert!(latch.set(2).unwrap());
    assert!(!latch.wait_for(Duration::from_millis(50)).unwrap());
    let waiting = latch.clone();
    let wait = std::thread::spawn(move || waiting.wait());
    assert!(poll(LIMIT, || waiters(&server) == 1));
    assert_eq!(latch.count_down().unwrap(), 1);
    assert_eq!(latch.count().unwrap(), 1);
    assert_eq!(latch.count_down().unwrap(), 0);
    wait.join().unwrap().unwrap();
    assert_eq!(latch.count().unwrap(), 0);
}
