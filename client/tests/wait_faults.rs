//! Ticket waits whose wait connections fail. In a Redis Cluster a client waits with one
//! connection that sends `LOCK.WAIT ... TO <receiver>` and a receiver that reads the outcomes
//! (`LOCK.GRANTS`): the server's idle `timeout` or a `CLIENT KILL` may close the sender
//! between waits, and neither a waiter nor a cancelled acquire may then keep the lock past
//! its release. Three real masters with the module; lease 30 s, so that a hold left behind
//! shows as a wait of the whole lease.

mod support;

use std::time::{Duration, Instant};

use rlock_client::{Client, LockOptions};
use support::cluster::Cluster;
use support::{eventually, Server};
use tokio::time::timeout;

const LEASE: Duration = Duration::from_secs(30);
/// Well under the lease: a waiter served after the release, not after the lease ran out.
const PROMPTLY: Duration = Duration::from_secs(8);
const SOON: Duration = Duration::from_secs(10);

fn waiters(node: &Server, key: &str) -> i64 {
    node.info(key).map_or(0, |info| info.waiters)
}

fn leased() -> LockOptions {
    LockOptions::new().lease(LEASE)
}

/// Asserts that `key` ends free on `node`: no hold was left behind.
async fn no_hold_left(node: &Server, key: &str) {
    assert!(
        eventually(SOON, || node.info(key).is_none()).await,
        "a hold was left behind: {:?}",
        node.info(key)
    );
}

/// The guard `waiting` ends with, within [`PROMPTLY`] (`what` names it when it does not),
/// checked to be the lock's holder on `node`, then released.
async fn served_and_released(
    node: &Server,
    key: &str,
    waiting: tokio::task::JoinHandle<Result<rlock_client::Guard, rlock_client::Error>>,
    what: &str,
    released: Instant,
) {
    let guard = timeout(PROMPTLY, waiting)
        .await
        .unwrap_or_else(|_| panic!("{what} not served within {PROMPTLY:?}"))
        .unwrap()
        .expect("the lock");
    eprintln!("{what} served {:?} after the release", released.elapsed());
    assert_eq!(node.info(key).unwrap().owner, guard.owner());
    guard.release().await.unwrap();
}

/// Kills, by id, the connections of `node` whose last command was `command`.
fn kill_connections_that_ran(node: &Server, command: &str) -> usize {
    let list: String = node.cmd(&["CLIENT", "LIST"]);
    let ids: Vec<String> = list
        .lines()
        .filter(|line| line.contains(&format!(" cmd={command} ")))
        .filter_map(|line| line.strip_prefix("id="))
        .filter_map(|rest| rest.split(' ').next().map(str::to_owned))
        .collect();
    for id in &ids {
        let _: i64 = node.cmd(&["CLIENT", "KILL", "ID", id]);
    }
    ids.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_are_served_in_order_at_the_release_when_the_server_closes_an_idle_sender() {
    support::trace();
    let cluster = Cluster::start(3);
    let key = format!("{{{}}}:idle", cluster.key_on(1, "faults"));
    let node = &cluster.nodes[1];
    node.cmd::<String>(&["CONFIG", "SET", "timeout", "1"]);
    node.hold(&key, "holder", &["LEASE", "30000"]);
    let client = Client::open(cluster.nodes[0].url()).await.unwrap();
    let first = client.lock(key.as_str()).options(leased());
    let first = tokio::spawn(async move { first.acquire().await });
    assert!(
        eventually(SOON, || waiters(node, &key) == 1).await,
        "never queued"
    );
    // The sender carries nothing while it waits: the server closes it after 1 s idle.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let second = client.lock(key.as_str()).options(leased());
    let second = tokio::spawn(async move { second.acquire().await });
    assert!(
        eventually(SOON, || waiters(node, &key) >= 2).await,
        "the second waiter never queued"
    );
    let released = Instant::now();
    node.cmd::<u64>(&["LOCK.RELEASE", &key, "holder"]);
    // In arrival order: the closed sender was replaced, the queued tickets kept their place.
    for (n, waiting) in [first, second].into_iter().enumerate() {
        served_and_released(node, &key, waiting, &format!("waiter {n}"), released).await;
    }
    no_hold_left(node, &key).await;
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_acquire_keeps_no_hold_when_its_sender_was_killed() {
    support::trace();
    let cluster = Cluster::start(3);
    let key = format!("{{{}}}:cancel", cluster.key_on(2, "faults"));
    let node = &cluster.nodes[2];
    node.hold(&key, "holder", &["LEASE", "30000"]);
    let client = Client::open(cluster.nodes[0].url()).await.unwrap();
    let cancelled = client.lock(key.as_str()).options(leased());
    let (cancel, on_cancel) = tokio::sync::oneshot::channel::<()>();
    let waiting = tokio::spawn(async move {
        tokio::select! {
            guard = cancelled.acquire() => Some(guard),
            _ = on_cancel => None,
        }
    });
    assert!(
        eventually(SOON, || waiters(node, &key) == 1).await,
        "never queued"
    );
    let other = Client::open(cluster.nodes[0].url()).await.unwrap();
    let next = other.lock(key.as_str()).options(leased());
    let next = tokio::spawn(async move { next.try_acquire(LEASE).await });
    assert!(
        eventually(SOON, || waiters(node, &key) == 2).await,
        "never queued"
    );
    let killed = kill_connections_that_ran(node, "lock.wait");
    assert!(killed >= 1, "no sender to kill");
    cancel.send(()).unwrap();
    assert!(waiting.await.unwrap().is_none(), "not cancelled");
    let released = Instant::now();
    node.cmd::<u64>(&["LOCK.RELEASE", &key, "holder"]);
    let guard = timeout(PROMPTLY, next)
        .await
        .expect("the next waiter was not served: the cancelled one kept the lock")
        .unwrap()
        .unwrap()
        .expect("the lock");
    eprintln!(
        "the next waiter was served {:?} after the release",
        released.elapsed()
    );
    assert_eq!(node.info(&key).unwrap().owner, guard.owner());
    guard.release().await.unwrap();
    no_hold_left(node, &key).await;
    client.close().await.unwrap();
    other.close().await.unwrap();
}

fn acl(server: &Server, rules: &[&str]) {
    let args = [&["ACL", "SETUSER", "waiter"][..], rules].concat();
    assert_eq!(server.cmd::<String>(&args), "OK");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_connection_refused_for_a_passing_reason_leaves_ticket_waits_on() {
    support::trace();
    let server = Server::start();
    acl(&server, &["on", ">first", "~*", "&*", "+@all"]);
    server.hold("busy", "holder", &["LEASE", "30000"]);
    let url = format!("redis://waiter:first@127.0.0.1:{}/", server.port());
    let client = Client::open(url).await.unwrap();
    // The client's open connections stay signed in; a new one is refused with an error
    // reply (WRONGPASS), not a network error, until the password is back.
    acl(&server, &["resetpass", ">second"]);
    let refused = client
        .lock("busy")
        .try_acquire(Duration::from_millis(500))
        .await;
    eprintln!("an acquisition while new connections were refused: {refused:?}");
    acl(&server, &["resetpass", ">first"]);
    let before = server.calls("lock.wait");
    let lock = client.lock("busy").options(leased());
    let waiting = tokio::spawn(async move { lock.acquire().await });
    assert!(
        eventually(SOON, || waiters(&server, "busy") == 1).await,
        "never queued"
    );
    assert!(
        server.calls("lock.wait") > before,
        "the wait was not a ticket: the node was left on blocking waits"
    );
    server.cmd::<u64>(&["LOCK.RELEASE", "busy", "holder"]);
    let guard = timeout(PROMPTLY, waiting).await.unwrap().unwrap().unwrap();
    guard.release().await.unwrap();
    assert_eq!(server.info("busy"), None);
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_on_its_way_to_a_receiver_that_timed_out_is_not_left_held() {
    support::trace();
    let cluster = Cluster::start_replicated(3, 0, &["--enable-debug-command", "yes"]);
    let key = format!("{{{}}}:stall", cluster.key_on(0, "faults"));
    let node = &cluster.nodes[0];
    node.hold(&key, "holder", &["LEASE", "30000"]);
    // The receiver's liveness bound is 400 ms (keepalive plus response timeout).
    let options = rlock_client::ClientOptions::new()
        .keepalive(Duration::from_millis(200))
        .response_timeout(Duration::from_millis(200));
    let client = Client::open_with(cluster.nodes[0].url(), options)
        .await
        .unwrap();
    let lock = client.lock(key.as_str()).options(leased());
    let waiting = tokio::spawn(async move { lock.acquire().await });
    assert!(
        eventually(SOON, || waiters(node, &key) == 1).await,
        "never queued"
    );
    // The release grants the waiter; the server stands still before it sends the
    // receiver's reply, past the receiver's bound and the kill's response timeout (but
    // below the module's own stall detection, 1 s, which would hold grants back).
    let mut conn = node.conn();
    let stall = key.clone();
    let stalled = tokio::task::spawn_blocking(move || {
        let mut pipe = redis::pipe();
        pipe.cmd("LOCK.RELEASE").arg(&stall).arg("holder");
        pipe.cmd("DEBUG").arg("SLEEP").arg("0.8");
        pipe.query::<(i64, String)>(&mut conn)
    });
    let waited = timeout(SOON, waiting)
        .await
        .expect("the wait ended")
        .unwrap();
    eprintln!(
        "the waiter whose receiver timed out: {:?}",
        waited.as_ref().map(|g| g.token())
    );
    stalled.await.unwrap().unwrap();
    if let Ok(guard) = waited {
        assert_eq!(node.info(&key).unwrap().owner, guard.owner());
        guard.release().await.unwrap();
    }
    assert!(
        eventually(SOON, || node.info(&key).is_none()).await,
        "the grant was left held: {:?}",
        node.info(&key)
    );
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_waiter_is_served_while_its_wait_connections_are_killed_again_and_again() {
    const WAITERS: usize = 10;
    // A hold left behind would show as a wait of the whole lease, past the bound.
    const LONG_LEASE: &str = "60000";
    const BOUND: Duration = Duration::from_secs(40);
    let cluster = Cluster::start(3);
    let key = format!("{{{}}}:kills", cluster.key_on(1, "faults"));
    let node = &cluster.nodes[1];
    node.hold(&key, "holder", &["LEASE", LONG_LEASE]);
    let client = Client::open(cluster.nodes[0].url()).await.unwrap();
    let mut waits = tokio::task::JoinSet::new();
    for _ in 0..WAITERS {
        let lock = client
            .lock(key.as_str())
            .options(LockOptions::new().lease(Duration::from_secs(60)));
        waits.spawn(async move {
            let guard = lock.acquire().await.expect("the lock");
            tokio::time::sleep(Duration::from_millis(200)).await;
            guard.release().await.expect("released");
        });
    }
    let queued = eventually(SOON, || waiters(node, &key) == WAITERS as i64).await;
    assert!(queued, "never queued");
    node.cmd::<u64>(&["LOCK.RELEASE", &key, "holder"]);
    let all = async {
        while let Some(done) = waits.join_next().await {
            done.unwrap();
        }
    };
    let mut kills = 0;
    let killing = async {
        loop {
            // The servers' commands are brief: run here, between the waiters' steps.
            let command = ["lock.wait", "lock.grants"][kills % 2];
            kills += kill_connections_that_ran(node, command);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let served = tokio::select! {
        served = timeout(BOUND, all) => served,
        never = killing => never,
    };
    eprintln!("{WAITERS} waiters served through {kills} kills of their wait connections");
    assert!(
        served.is_ok(),
        "not every waiter was served: {:?}",
        node.info(&key)
    );
    no_hold_left(node, &key).await;
    client.close().await.unwrap();
}
